import Baton
import Foundation

/// A worker process that has registered.
public struct WorkerRecord: Sendable, Hashable {
    public var id: String
    public var host: String
    public var pid: Int
    public var queues: [String]
    public var tasks: [String]
    public var startedAt: Date
    public var heartbeatAt: Date
    public var runningJobs: [Int64]
    /// Its last heartbeat is within its lease. A silent one (stopped, stalled, cut off) keeps its
    /// row for an hour; its stages are put back for others once its lease has run out.
    public var alive = true
}
