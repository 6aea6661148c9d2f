import Foundation

/// A worker process that has registered, as `GET /v1/workers` shows it.
public struct WorkerView: Codable, Sendable, Hashable {
    public var id: String
    public var host: String
    public var pid: Int
    public var queues: [String]
    public var tasks: [String]
    public var startedAt: Date
    public var lastHeartbeatAt: Date
    /// Jobs whose current stage it runs.
    public var runningJobs: [Int64]

    public init(
        id: String, host: String, pid: Int, queues: [String], tasks: [String], startedAt: Date, lastHeartbeatAt: Date,
        runningJobs: [Int64]
    ) {
        self.id = id
        self.host = host
        self.pid = pid
        self.queues = queues
        self.tasks = tasks
        self.startedAt = startedAt
        self.lastHeartbeatAt = lastHeartbeatAt
        self.runningJobs = runningJobs
    }

    public enum CodingKeys: String, CodingKey, CaseIterable {
        case id, host, pid, queues, tasks
        case startedAt = "started_at", lastHeartbeatAt = "last_heartbeat_at", runningJobs = "running_jobs"
    }
}

/// The answer to `GET /v1/workers`.
public struct WorkerList: Codable, Sendable, Hashable {
    public var workers: [WorkerView]

    public init(workers: [WorkerView]) { self.workers = workers }
}
