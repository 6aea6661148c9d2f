import Baton
import Foundation

/// Which jobs to list (newest first) or act on in bulk.
public struct JobFilter: Sendable, Hashable {
    /// Any of these states; empty: all.
    public var states: [JobState]
    public var queue: String?
    /// The lane of the job's current stage.
    public var lane: String?
    /// Jobs with a stage (or group member) running this task.
    public var task: String?
    /// Text the last error contains (case-insensitive).
    public var error: String?
    /// Created at or after this time, and before that one.
    public var createdAfter: Date?
    public var createdBefore: Date?
    /// Finished at or after this time, and before that one (unfinished jobs match neither).
    public var finishedAfter: Date?
    public var finishedBefore: Date?
    /// Jobs whose metadata holds each of these keys with this value: a string as it is, a number as
    /// it was written (`42`, `1.50`), a boolean as `true` or `false` (`tags_of` in the schema).
    public var metadata: [String: String]
    /// Jobs with a stage or group member whose args hold each of these keys with this value, as
    /// ``metadata``.
    public var args: [String: String]
    /// Only these jobs.
    public var ids: [Int64]?
    /// Enqueued by this caller: any of its fingerprints (the control plane's, of a token, under
    /// each fingerprint key).
    public var enqueuedBy: [String]?
    /// Only jobs of these queues (a scoped token's); nil: any.
    public var queues: [String]?
    /// Keyset cursor: only jobs with a smaller id (older) than this.
    public var before: Int64?
    public var limit: Int
    /// How many jobs found through indexes (by state, lane and cursor) one page examines for the
    /// other filters at most.
    public var scanLimit = 5_000

    public init(
        states: [JobState] = [], queue: String? = nil, lane: String? = nil, task: String? = nil, error: String? = nil,
        createdAfter: Date? = nil, createdBefore: Date? = nil, finishedAfter: Date? = nil, finishedBefore: Date? = nil,
        metadata: [String: String] = [:], args: [String: String] = [:], ids: [Int64]? = nil,
        enqueuedBy: [String]? = nil, queues: [String]? = nil, before: Int64? = nil,
        limit: Int = 50
    ) {
        self.states = states
        self.queue = queue
        self.lane = lane
        self.task = task
        self.error = error
        self.createdAfter = createdAfter
        self.createdBefore = createdBefore
        self.finishedAfter = finishedAfter
        self.finishedBefore = finishedBefore
        self.metadata = metadata
        self.args = args
        self.ids = ids
        self.enqueuedBy = enqueuedBy
        self.queues = queues
        self.before = before
        self.limit = limit
    }

    /// ``metadata`` and ``args`` as `job_tags` names them (`metadata.tenant`, `args.customer`), by name.
    var tags: [(name: String, value: String)] {
        (metadata.map { ("metadata." + $0.key, $0.value) } + args.map { ("args." + $0.key, $0.value) })
            .sorted { $0.0 < $1.0 }
    }
}
