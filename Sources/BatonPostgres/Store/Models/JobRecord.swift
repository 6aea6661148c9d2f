import Baton
import Crypto
import Foundation
import Synchronization

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
        /// What the task logged during the attempt that succeeded (``StageLog`` in the worker).
        public var log: String?
        enum CodingKeys: String, CodingKey {
            case stage, output, attempts, startedAt = "started_at", finishedAt = "finished_at", log
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
        /// What the task logged during the attempt.
        public var log: String?

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
    /// The key its stages take turns under in fair queues (``NewJob/fairKey``).
    public var fairKey: String?
    /// Its stages' weight under that key (``NewJob/fairWeight``); nil: 1.
    public var fairWeight: Double?
    /// Why it is not running now, if it has not finished; filled by reads of one job
    /// (``BatonClient/job(_:)``), not by listings.
    public var waitingFor: [WaitReason] = []
    /// For each group or map stage that started members: how many are in each state, all counted
    /// (``Store/jobWithMembers(_:)`` lists the first ``Store/membersListed`` of each).
    public var memberCounts: [Int: [JobState: Int]] = [:]
    /// For each map stage with a bound: how many of its elements have not started yet (they are
    /// no jobs yet, so neither listed nor in ``memberCounts``).
    public var unstartedElements: [Int: Int] = [:]
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
        fairKey = job.fairKey
        fairWeight = job.fairWeight
    }
}
