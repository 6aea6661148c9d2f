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
}
