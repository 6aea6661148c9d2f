import Baton
import Foundation

/// A job in a listing (`GET /v1/jobs`): where it is, not what it carries.
public struct JobSummaryView: Codable, Sendable, Hashable {
    public var id: Int64
    public var queue: String
    public var priority: Int
    public var state: JobState
    public var currentStage: Int
    public var stageCount: Int
    /// The current stage's task; nil for a group stage.
    public var task: String?
    /// The current stage's lane.
    public var lane: String?
    public var attempts: Int
    public var runAt: Date
    public var createdAt: Date
    public var finishedAt: Date?
    public var lastError: String?

    public init(
        id: Int64, queue: String, priority: Int, state: JobState, currentStage: Int, stageCount: Int, task: String?,
        lane: String?, attempts: Int, runAt: Date, createdAt: Date, finishedAt: Date?, lastError: String?
    ) {
        self.id = id
        self.queue = queue
        self.priority = priority
        self.state = state
        self.currentStage = currentStage
        self.stageCount = stageCount
        self.task = task
        self.lane = lane
        self.attempts = attempts
        self.runAt = runAt
        self.createdAt = createdAt
        self.finishedAt = finishedAt
        self.lastError = lastError
    }

    public enum CodingKeys: String, CodingKey, CaseIterable {
        case id, queue, priority, state, task, lane, attempts
        case currentStage = "current_stage", stageCount = "stage_count", runAt = "run_at", createdAt = "created_at"
        case finishedAt = "finished_at", lastError = "last_error"
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(queue, forKey: .queue)
        try container.encode(priority, forKey: .priority)
        try container.encode(state, forKey: .state)
        try container.encode(currentStage, forKey: .currentStage)
        try container.encode(stageCount, forKey: .stageCount)
        try container.encode(task, forKey: .task)
        try container.encode(lane, forKey: .lane)
        try container.encode(attempts, forKey: .attempts)
        try container.encode(runAt, forKey: .runAt)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(finishedAt, forKey: .finishedAt)
        try container.encode(lastError, forKey: .lastError)
    }
}

/// A page of `GET /v1/jobs`, newest first.
public struct JobPage: Codable, Sendable, Hashable {
    public var jobs: [JobSummaryView]
    /// Pass as `cursor` for the next (older) page; null on the last page.
    public var nextCursor: String?

    public init(jobs: [JobSummaryView], nextCursor: String?) {
        self.jobs = jobs
        self.nextCursor = nextCursor
    }

    public enum CodingKeys: String, CodingKey { case jobs, nextCursor = "next_cursor" }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(jobs, forKey: .jobs)
        try container.encode(nextCursor, forKey: .nextCursor)
    }
}

/// What enqueueing one job of a batch did.
public struct EnqueuedJobView: Codable, Sendable, Hashable {
    public var id: Int64
    public var queue: String
    public var state: JobState
    /// False when an idempotency key named an existing job.
    public var inserted: Bool

    public init(id: Int64, queue: String, state: JobState, inserted: Bool) {
        self.id = id
        self.queue = queue
        self.state = state
        self.inserted = inserted
    }
}

/// The answer to `POST /v1/jobs/batch`: one entry per job, in request order.
public struct BatchResponse: Codable, Sendable, Hashable {
    public var jobs: [EnqueuedJobView]

    public init(jobs: [EnqueuedJobView]) { self.jobs = jobs }
}
