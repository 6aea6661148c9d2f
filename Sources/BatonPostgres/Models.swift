import Baton
import Crypto
import Foundation
import Synchronization

/// A job to enqueue: a chain and where and when to run it.
public struct NewJob: Sendable {
    public var chain: ChainDefinition
    /// Workers serve named queues; `default` unless set.
    public var queue: String
    /// Lower runs first.
    public var priority: Int
    /// Not before this time; nil: now.
    public var runAt: Date?
    /// Enqueueing the same key again yields the existing job instead of a new one.
    public var idempotencyKey: String?
    /// Which jobs count as this one: while one holds the rule's key, enqueueing another yields it.
    public var unique: Uniqueness?
    public var metadata: JSONValue
    /// Who enqueued it, opaque to Baton (the control plane stores a fingerprint of the caller's
    /// token, so that an `enqueue` token can read its own jobs).
    public var enqueuedBy: String?
    /// An idempotency or unique key may only name a job enqueued by one of these (a caller's
    /// fingerprints under each key): else the enqueue is refused (``IdempotencyKeyTaken``), all of
    /// its batch with it. nil: any job.
    package var keyOwners: [String]?

    public init(
        chain: ChainDefinition, queue: String = "default", priority: Int = 0, runAt: Date? = nil,
        idempotencyKey: String? = nil, metadata: JSONValue = [:], enqueuedBy: String? = nil, unique: Uniqueness? = nil
    ) {
        self.chain = chain
        self.queue = queue
        self.priority = priority
        self.runAt = runAt
        self.idempotencyKey = idempotencyKey
        self.metadata = metadata
        self.enqueuedBy = enqueuedBy
        self.unique = unique
    }
}

/// Which jobs count as the same, beyond an idempotency key: "one pending sync per customer". While
/// a job holds the rule's key (it has not finished, or it finished in one of ``finished``),
/// enqueueing another with the same key answers the existing job (``EnqueuedJob/inserted`` false),
/// not an error. The database enforces it: a unique index over the key, partial on the states in
/// which a job holds it, so no race between enqueuers lets two in.
public struct Uniqueness: Sendable, Hashable {
    /// Your key (`sync-customer-7`); nil: the first stage's task and args (the same task with the
    /// same args, compared as JSON, is the same job). Always within the job's queue.
    public var key: String?
    /// Jobs enqueued within the same window of this length (windows counted from the Unix epoch)
    /// are the same; nil: whenever.
    public var window: Duration?
    /// Final states in which a job still holds the key (`completed`: "once a day, even if it
    /// succeeded"); unfinished ones always do.
    public var finished: Set<JobState>

    public init(key: String? = nil, window: Duration? = nil, finished: Set<JobState> = []) {
        self.key = key
        self.window = window
        self.finished = finished
    }

    /// The states in which a job holds the key.
    var states: [JobState] {
        [.scheduled, .available, .running, .retryable, .waiting]
            + [.completed, .discarded, .cancelled].filter(finished.contains)
    }

    /// The key as stored for `job`, enqueued at `now`: its queue, the rule's key or a digest of the
    /// first task and its args, and the window's number.
    func storedKey(for job: NewJob, at now: Date) -> String {
        var key = job.queue + "\u{1F}"
        if let own = self.key {
            key += "k:" + own
        } else {
            let first = job.chain.stages.first
            let subject = (first?.kind ?? "") + "\u{1F}" + (first?.task?.args.jsonText ?? "")
            key += "t:" + SHA256.hash(data: Data(subject.utf8)).map { String(format: "%02x", $0) }.joined()
        }
        if let window, window > .zero {
            let seconds = Double(window.components.seconds) + Double(window.components.attoseconds) / 1e18
            key +=
                "\u{1F}w:\(DurationFormat.format(window)):\(Int64((now.timeIntervalSince1970 / seconds).rounded(.down)))"
        }
        return key
    }

    /// What makes a rule unusable, with the path of the field at fault.
    package func check(path: String) throws(BatonError) {
        if let key {
            guard (1...255).contains(key.unicodeScalars.count), !key.unicodeScalars.contains("\u{0}") else {
                throw .invalidChain(path: "\(path).key", reason: "a unique key is 1 to 255 characters, without NUL")
            }
        }
        if let window, window <= .zero {
            throw .invalidChain(path: "\(path).window", reason: "must be longer than zero")
        }
        guard finished.isSubset(of: [.completed, .discarded, .cancelled]) else {
            throw .invalidChain(
                path: "\(path).finished", reason: "only completed, discarded and cancelled are final states")
        }
    }
}

/// What enqueueing a job did.
public struct EnqueuedJob: Sendable, Hashable {
    public var id: Int64
    public var queue: String
    public var state: JobState
    /// False when the idempotency key named an existing job.
    public var inserted: Bool
    public var runAt: Date
    public var createdAt: Date
}

/// A job as stored: everything the control plane shows.
public struct JobRecord: Sendable {
    /// One run of a stage: `results` is the path the chain took.
    public struct StageResult: Sendable, Codable {
        /// The stage's index; nil in runs stored before control flow, whose index in `results` it is.
        public var stage: Int?
        public var output: JSONValue
        public var attempts: Int
        public var startedAt: String?
        public var finishedAt: String?
        enum CodingKeys: String, CodingKey {
            case stage, output, attempts, startedAt = "started_at", finishedAt = "finished_at"
        }
    }

    /// The runs so far, each with its stage's index.
    public var path: [(stage: Int, result: StageResult)] {
        results.enumerated().map { ($1.stage ?? $0, $1) }
    }

    public struct AttemptError: Sendable, Codable {
        public var stage: Int
        public var attempt: Int
        public var at: String
        public var worker: String?
        public var error: String
        public var code: String?
        public var details: JSONValue?

        /// The failure as a value.
        public var failure: StageError { StageError(error, code: code, details: details) }
    }

    public var id: Int64
    public var queue: String
    public var priority: Int
    public var state: JobState
    public var runAt: Date
    public var createdAt: Date
    public var attemptedAt: Date?
    public var finishedAt: Date?
    public var chain: [StageSpec]
    /// Index of the current stage.
    public var stage: Int
    /// Attempts made at the current stage.
    public var attempt: Int
    public var input: JSONValue
    public var results: [StageResult]
    public var errors: [AttemptError]
    public var metadata: JSONValue
    public var lane: String?
    public var workerID: String?
    public var parentID: Int64?
    public var memberIndex: Int?
    public var idempotencyKey: String?
    public var enqueuedBy: String?
    /// Why it is not running now, if it has not finished; filled by reads of one job
    /// (``BatonClient/job(_:)``), not by listings.
    public var waitingFor: [WaitReason] = []
    /// What the tasks of its stages last reported (``StageContext/progress(_:_:checkpoint:)``),
    /// one entry per stage that did, in stage order; filled by reads of one job, as `waitingFor`.
    public var progress: [Progress] = []

    /// A stage's last report.
    public struct Progress: Sendable, Hashable {
        public var stage: Int
        /// The attempt that reported it.
        public var attempt: Int
        public var progress: StageProgress
        public var updatedAt: Date
    }

    /// The chain's final output, once completed.
    public var output: JSONValue? {
        state == .completed ? results.last?.output : nil
    }

    /// The last error recorded, if any.
    public var lastError: String? { errors.last?.error }

    /// The last failure recorded, with its code and details, if any.
    public var lastFailure: StageError? { errors.last?.failure }
}

/// A stage a worker has claimed and is to run.
package struct ClaimedJob: Sendable {
    package var id: Int64
    package var queue: String
    package var stage: Int
    package var attempt: Int
    package var chain: [StageSpec]
    /// JSON text: the input of the current stage.
    package var input: String
    /// The runs before this one, in order: the path taken so far (one run per stage, unless a
    /// `goto` skipped some or a `repeat` ran one again), each with the position it ran at.
    package var earlier: [(stage: Int, output: JSONValue)]
    package var metadata: JSONValue
    /// For a group stage whose members all completed: their outputs (JSON text).
    package var groupOutput: String?
    /// Why this job cannot run at all (its stored chain does not decode); it is discarded.
    package var invalid: String? = nil
    /// Seconds from when the stage became claimable to its claim; nil when it was handed over
    /// without a claim (a lane hand-off claimed while applying an outcome).
    package var waited: Double? = nil
    /// When the statement that claimed it was sent: a cancel heard since may be about this claim
    /// (its notification can arrive before the claim's answer).
    package var claimedSince: ContinuousClock.Instant = .now

    package var spec: StageSpec { chain[stage] }
    /// How many times in a row this stage ran before this run (`repeat`).
    package var runs: Int { earlier.reversed().prefix(while: { $0.stage == stage }).count }
}

/// A decided transition for one claimed stage, ready to be applied.
package struct Outcome: Sendable {
    package var jobID: Int64
    package var stage: Int
    package var attempt: Int
    package var transition: Transition
    /// The job's queue and the lane its stage held, if any: where the outcome may hand a lane on
    /// (a hint for slot reservation; the database decides).
    package var queue: String?
    package var heldLane: String?

    package init(
        jobID: Int64, stage: Int, attempt: Int, transition: Transition, queue: String? = nil, heldLane: String? = nil
    ) {
        self.jobID = jobID
        self.stage = stage
        self.attempt = attempt
        self.transition = transition
        self.queue = queue
        self.heldLane = heldLane
    }

    /// Whether applying this may let another job take the lane.
    package var mayReleaseLane: Bool {
        guard heldLane != nil else { return false }
        switch transition {
        case .retry, .release: return false
        default: return true
        }
    }
}

/// What the database did with a batch of outcomes.
package struct AppliedOutcomes: Sendable {
    /// Jobs whose transition took effect; the others were no longer this worker's to finish.
    package var applied: Set<Int64> = []
    /// Hops applied as advances: the next stage's queue is rate limited as a whole, so the stage
    /// waits for a claim (which takes a token) and the worker must not run it.
    package var handedOn: Set<Int64> = []
    /// Queues with newly available jobs.
    package var woken: Set<String> = []
    /// Finished jobs someone awaits.
    package var finished: [Int64] = []
    /// Lane holders promoted by this batch and claimed for the worker at once.
    package var claimed: [ClaimedJob] = []
}

/// A running stage whose worker stopped sending heartbeats.
/// A wait for a signal that ran out (`expire_waits`): its attempt failed with `error`; the stage
/// waits again until `nextAt`, or, nil, the job was discarded.
package struct ExpiredWait: Sendable {
    package var jobID: Int64
    package var queue: String
    package var stage: Int
    package var attempt: Int
    package var chain: [StageSpec]
    package var metadata: JSONValue
    package var error: String
    package var nextAt: Date?
}

package struct LostStage: Sendable {
    package var jobID: Int64
    package var workerID: String
    package var queue: String
    package var metadata: JSONValue
    package var stage: Int
    package var attempt: Int
    package var chain: [StageSpec]
}

/// A job's chain as read back from its row.
enum StoredChain {
    /// Chains decoded lately, by their stored text: the jobs of a queue mostly share one (their
    /// input is apart), and decoding one, a parse and `Codable`, was 14 % of a worker's CPU per
    /// claimed job (docs/benchmarks.md, "Chains decoded once"). At most `cacheLimit` bytes of text;
    /// when full it starts again, so jobs whose chains all differ pay only a look-up.
    private static let decoded = Mutex<(chains: [String: [StageSpec]], bytes: Int)>(([:], 0))
    static let cacheLimit = 1 << 20
    /// The text the cache holds now, in bytes.
    static var cachedBytes: Int { decoded.withLock { $0.bytes } }

    /// The stages, or, when the text does not decode to a chain reaching `stage` (written around the
    /// Swift API: by hand, in SQL), stand-ins that never retry and the reason: such a job fails
    /// alone instead of failing the claim or the rescue it is part of.
    static func decode(_ text: String, stage: Int) -> (chain: [StageSpec], invalid: String?) {
        if let chain = decoded.withLock({ $0.chains[text] }), chain.indices.contains(stage) {
            return (chain, nil)
        }
        if let chain = try? JSONValue(parsing: text).decode(as: [StageSpec].self), chain.indices.contains(stage) {
            decoded.withLock { cache in
                if cache.bytes + text.utf8.count > cacheLimit { cache = ([:], 0) }
                if cache.chains.updateValue(chain, forKey: text) == nil { cache.bytes += text.utf8.count }
            }
            return (chain, nil)
        }
        return (
            Array(repeating: .task("invalid", retry: .none), count: stage + 1),
            "the chain stored with this job does not decode as Baton stages"
        )
    }
}

extension JobRecord {
    /// The job just as `enqueued` wrote it: what reading it back at once would return, without
    /// the round trip. Only for a job that was inserted (not one an idempotency key matched).
    public init(job: NewJob, enqueued: EnqueuedJob) {
        self.init(
            id: enqueued.id, queue: enqueued.queue, priority: job.priority, state: enqueued.state,
            runAt: enqueued.runAt, createdAt: enqueued.createdAt, attemptedAt: nil, finishedAt: nil,
            chain: job.chain.stages, stage: 0, attempt: 0, input: job.chain.input, results: [], errors: [],
            metadata: job.metadata, lane: job.chain.stages.first?.lane, workerID: nil, parentID: nil, memberIndex: nil,
            idempotencyKey: job.idempotencyKey, enqueuedBy: job.enqueuedBy)
    }
}
