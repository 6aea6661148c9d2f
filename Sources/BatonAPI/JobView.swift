import Baton
import Foundation

/// A job with every stage, as `GET /v1/jobs/{id}` (and enqueue, cancel, retry) answer it.
public struct JobView: Codable, Sendable, Hashable {
    public var id: Int64
    public var queue: String
    public var priority: Int
    public var state: JobState
    public var runAt: Date
    public var createdAt: Date
    public var finishedAt: Date?
    public var metadata: JSONValue
    public var input: JSONValue
    /// The last stage's output once the job completed, else null.
    public var output: JSONValue
    /// Index of the current stage (the last one once completed).
    public var currentStage: Int
    public var stages: [StageView]
    public var idempotencyKey: String?
    /// For a group member: its parent job.
    public var parentID: Int64?

    public init(
        id: Int64, queue: String, priority: Int, state: JobState, runAt: Date, createdAt: Date, finishedAt: Date?,
        metadata: JSONValue, input: JSONValue, output: JSONValue, currentStage: Int, stages: [StageView],
        idempotencyKey: String?, parentID: Int64?
    ) {
        self.id = id
        self.queue = queue
        self.priority = priority
        self.state = state
        self.runAt = runAt
        self.createdAt = createdAt
        self.finishedAt = finishedAt
        self.metadata = metadata
        self.input = input
        self.output = output
        self.currentStage = currentStage
        self.stages = stages
        self.idempotencyKey = idempotencyKey
        self.parentID = parentID
    }

    public enum CodingKeys: String, CodingKey, CaseIterable {
        case id, queue, priority, state, metadata, input, output, stages
        case runAt = "run_at", createdAt = "created_at", finishedAt = "finished_at"
        case currentStage = "current_stage", idempotencyKey = "idempotency_key", parentID = "parent_id"
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(queue, forKey: .queue)
        try container.encode(priority, forKey: .priority)
        try container.encode(state, forKey: .state)
        try container.encode(runAt, forKey: .runAt)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(finishedAt, forKey: .finishedAt)
        try container.encode(metadata, forKey: .metadata)
        try container.encode(input, forKey: .input)
        try container.encode(output, forKey: .output)
        try container.encode(currentStage, forKey: .currentStage)
        try container.encode(stages, forKey: .stages)
        try container.encode(idempotencyKey, forKey: .idempotencyKey)
        try container.encode(parentID, forKey: .parentID)
    }
}

/// Where a stage of a job stands: `pending` until the chain reaches it, then the job's state
/// while it is the current stage, `completed` once passed.
public enum StageState: String, Codable, Sendable, Hashable, CaseIterable {
    case pending, scheduled, available, running, retryable, waiting, completed, discarded, cancelled

    public init(_ state: JobState) { self = StageState(rawValue: state.rawValue)! }
}

/// One stage of a job.
public struct StageView: Codable, Sendable, Hashable {
    public var index: Int
    public var name: String?
    /// Nil for a group stage.
    public var task: String?
    public var lane: String?
    public var state: StageState
    public var attempts: Int
    /// Nil for a group stage (each member has its own).
    public var maxAttempts: Int?
    public var startedAt: Date?
    public var finishedAt: Date?
    /// The stage's output once it completed, else null.
    public var output: JSONValue
    /// Every failed attempt of this stage, oldest first.
    public var errors: [AttemptErrorView]
    /// Group stages only: the members, in order.
    public var members: [MemberView]?

    public init(
        index: Int, name: String?, task: String?, lane: String?, state: StageState, attempts: Int, maxAttempts: Int?,
        startedAt: Date?, finishedAt: Date?, output: JSONValue, errors: [AttemptErrorView], members: [MemberView]?
    ) {
        self.index = index
        self.name = name
        self.task = task
        self.lane = lane
        self.state = state
        self.attempts = attempts
        self.maxAttempts = maxAttempts
        self.startedAt = startedAt
        self.finishedAt = finishedAt
        self.output = output
        self.errors = errors
        self.members = members
    }

    public enum CodingKeys: String, CodingKey, CaseIterable {
        case index, name, task, lane, state, attempts, output, errors, members
        case maxAttempts = "max_attempts", startedAt = "started_at", finishedAt = "finished_at"
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(index, forKey: .index)
        try container.encode(name, forKey: .name)
        try container.encode(task, forKey: .task)
        try container.encode(lane, forKey: .lane)
        try container.encode(state, forKey: .state)
        try container.encode(attempts, forKey: .attempts)
        try container.encode(maxAttempts, forKey: .maxAttempts)
        try container.encode(startedAt, forKey: .startedAt)
        try container.encode(finishedAt, forKey: .finishedAt)
        try container.encode(output, forKey: .output)
        try container.encode(errors, forKey: .errors)
        try container.encodeIfPresent(members, forKey: .members)
    }
}

/// A failed attempt: its number, when, on which worker, and why.
public struct AttemptErrorView: Codable, Sendable, Hashable {
    public var attempt: Int
    public var at: Date
    public var worker: String?
    public var error: String

    public init(attempt: Int, at: Date, worker: String?, error: String) {
        self.attempt = attempt
        self.at = at
        self.worker = worker
        self.error = error
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(attempt, forKey: .attempt)
        try container.encode(at, forKey: .at)
        try container.encode(worker, forKey: .worker)
        try container.encode(error, forKey: .error)
    }
}

/// A member of a group stage (a child job) as its parent shows it.
public struct MemberView: Codable, Sendable, Hashable {
    public var index: Int
    public var id: Int64
    public var state: JobState
    public var attempts: Int
    public var output: JSONValue
    public var errors: [AttemptErrorView]

    public init(index: Int, id: Int64, state: JobState, attempts: Int, output: JSONValue, errors: [AttemptErrorView]) {
        self.index = index
        self.id = id
        self.state = state
        self.attempts = attempts
        self.output = output
        self.errors = errors
    }
}
