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
        ids: [Int64]? = nil, enqueuedBy: [String]? = nil, queues: [String]? = nil, before: Int64? = nil,
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
        self.ids = ids
        self.enqueuedBy = enqueuedBy
        self.queues = queues
        self.before = before
        self.limit = limit
    }
}

/// A page of jobs, and where the scan for it stopped when it stopped before the page was full.
package struct JobListing: Sendable {
    package var jobs: [JobSummary] = []
    /// The oldest job examined, when ``JobFilter/scanLimit`` jobs were: older ones may match too.
    package var scannedTo: Int64?
}

/// A job in a listing: where it is, not what it carries.
public struct JobSummary: Sendable, Hashable {
    public var id: Int64
    public var queue: String
    public var priority: Int
    public var state: JobState
    public var stage: Int
    public var stageCount: Int
    /// The current stage's task; nil for a group stage.
    public var task: String?
    public var lane: String?
    public var attempt: Int
    public var runAt: Date
    public var createdAt: Date
    public var finishedAt: Date?
    public var lastError: String?
}

/// A group member as its parent shows it.
public struct MemberRecord: Sendable {
    /// The parent's stage this member belongs to, and its place in the group.
    public var stage: Int
    public var index: Int
    public var id: Int64
    public var state: JobState
    public var attempt: Int
    public var output: JSONValue?
    public var errors: [JobRecord.AttemptError]
}

/// One queue as operators see it.
public struct QueueStatus: Sendable, Hashable {
    public var name: String
    /// Jobs per state (absent states: none).
    public var counts: [JobState: Int]
    /// The due time of the oldest available job: how long the queue has kept work waiting.
    public var oldestAvailable: Date?
    public var paused: Bool

    package init(name: String, counts: [JobState: Int] = [:], oldestAvailable: Date? = nil, paused: Bool = false) {
        self.name = name
        self.counts = counts
        self.oldestAvailable = oldestAvailable
        self.paused = paused
    }
}

/// A lane: the jobs holding it, its width, and how many wait behind.
public struct LaneStatus: Sendable, Hashable {
    public struct Head: Sendable, Hashable {
        public var id: Int64
        public var queue: String
        public var state: JobState
        public var stage: Int
        public var task: String?
        public var attempt: Int
        /// When it runs (again): for a retrying head, when the lane may move.
        public var runAt: Date
        public var lastError: String?
    }

    public var lane: String
    /// A holder waiting to retry (it blocks its place), else the oldest holder. Nil only for an
    /// instant while the lane changes hands.
    public var head: Head?
    /// How many of its stages hold it now (at most `width`, unless it was narrowed since).
    public var held: Int
    /// How many may hold it at once: its setting, its longest prefix's, or 1.
    public var width: Int
    public var waiting: Int
}

/// A lane's width as an operator set it: for one lane, or for every lane a prefix ending in `*` starts.
public struct LaneSetting: Sendable, Hashable {
    public var lane: String
    public var width: Int
    public var source: SettingSource
    public var updatedAt: Date

    /// Widths an operator may set.
    public static let widths = 1...10_000

    public init(lane: String, width: Int, source: SettingSource = .api, updatedAt: Date = Date()) {
        self.lane = lane
        self.width = width
        self.source = source
        self.updatedAt = updatedAt
    }
}

/// Who owns a setting (a schedule, a lane's width): a settings file, which replaces what it owns
/// whenever a process reading it starts, or the API (and the CLI and dashboard, through it).
public enum SettingSource: String, Sendable {
    case api, settings
}

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

/// At most `rate` starts per `per`, and `burst` at once after a quiet spell, of the stages naming
/// `key` (`"rate": "partner-api"`), across every worker.
public struct RateLimit: Sendable, Hashable {
    public var key: String
    public var rate: Int
    public var per: Duration
    public var burst: Int
    /// Tokens in the bucket now (refilled to this instant): how many may start at once.
    public var tokens: Double
    public var source: SettingSource
    public var updatedAt: Date

    /// Rates, bursts and periods an operator may set.
    public static let rates = 1...1_000_000
    public static let periods = Duration.milliseconds(1)...Duration.seconds(31 * 86_400)

    /// Whether `key` limits a whole queue (`queue:NAME`) or lane (`lane:NAME`), or a prefix of
    /// them (`lane:customer-*`): the key of every task stage there that names none itself.
    public static func isScoped(_ key: String) -> Bool {
        key.hasPrefix("queue:") || key.hasPrefix("lane:")
    }

    public init(
        key: String, rate: Int, per: Duration, burst: Int? = nil, tokens: Double? = nil,
        source: SettingSource = .api, updatedAt: Date = Date()
    ) {
        self.key = key
        self.rate = rate
        self.per = per
        self.burst = burst ?? rate
        self.tokens = tokens ?? Double(burst ?? rate)
        self.source = source
        self.updatedAt = updatedAt
    }
}
