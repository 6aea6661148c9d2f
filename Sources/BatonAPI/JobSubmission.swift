import Baton
import Foundation

/// The body of `POST /v1/jobs`: a chain, and where and when to run it. Absent fields take the
/// server's defaults; the server refuses any field not named here.
public struct JobSubmission: Codable, Sendable, Hashable {
    public var queue: String?
    /// Lower runs first.
    public var priority: Int?
    /// RFC 3339; or `delay`, not both.
    public var runAt: String?
    /// A duration such as `30s`.
    public var delay: String?
    public var idempotencyKey: String?
    public var metadata: JSONValue?
    /// The input of the first stage.
    public var input: JSONValue?
    public var stages: [StageSubmission]

    public init(
        stages: [StageSubmission], input: JSONValue? = nil, queue: String? = nil, priority: Int? = nil,
        runAt: String? = nil, delay: String? = nil, idempotencyKey: String? = nil, metadata: JSONValue? = nil
    ) {
        self.queue = queue
        self.priority = priority
        self.runAt = runAt
        self.delay = delay
        self.idempotencyKey = idempotencyKey
        self.metadata = metadata
        self.input = input
        self.stages = stages
    }

    public enum CodingKeys: String, CodingKey, CaseIterable {
        case queue, priority, delay, metadata, input, stages
        case runAt = "run_at", idempotencyKey = "idempotency_key"
    }
}

/// A stage of a submitted chain: one task, or a group of stages run concurrently.
public enum StageSubmission: Codable, Sendable, Hashable {
    case task(TaskStageSubmission)
    case group(GroupStageSubmission)

    public init(from decoder: any Decoder) throws {
        let keys = try decoder.container(keyedBy: GroupStageSubmission.CodingKeys.self)
        self =
            keys.contains(.group)
            ? .group(try GroupStageSubmission(from: decoder)) : .task(try TaskStageSubmission(from: decoder))
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .task(let stage): try stage.encode(to: encoder)
        case .group(let stage): try stage.encode(to: encoder)
        }
    }
}

/// A stage running one task.
public struct TaskStageSubmission: Codable, Sendable, Hashable {
    public var task: String
    /// Names the stage, so later stages can read its output.
    public var name: String?
    /// What the task is configured with (a JSON object).
    public var args: JSONValue?
    /// Present: the stage is ordered in this lane.
    public var lane: String?
    public var maxAttempts: Int?
    public var backoff: BackoffSubmission?
    /// A duration such as `5m`.
    public var timeout: String?

    public init(
        task: String, name: String? = nil, args: JSONValue? = nil, lane: String? = nil, maxAttempts: Int? = nil,
        backoff: BackoffSubmission? = nil, timeout: String? = nil
    ) {
        self.task = task
        self.name = name
        self.args = args
        self.lane = lane
        self.maxAttempts = maxAttempts
        self.backoff = backoff
        self.timeout = timeout
    }

    public enum CodingKeys: String, CodingKey, CaseIterable {
        case task, name, args, lane, backoff, timeout, maxAttempts = "max_attempts"
    }
}

/// A stage whose members run concurrently; the chain goes on with the array of their outputs.
public struct GroupStageSubmission: Codable, Sendable, Hashable {
    public var name: String?
    public var group: [StageSubmission]

    public init(group: [StageSubmission], name: String? = nil) {
        self.name = name
        self.group = group
    }

    public enum CodingKeys: String, CodingKey, CaseIterable { case name, group }
}

/// How long to wait between attempts of a stage.
public struct BackoffSubmission: Codable, Sendable, Hashable {
    /// `exponential` (default), `constant` or `linear`.
    public var kind: String?
    public var initial: String?
    public var max: String?
    /// 0 to 1.
    public var jitter: Double?

    public init(kind: String? = nil, initial: String? = nil, max: String? = nil, jitter: Double? = nil) {
        self.kind = kind
        self.initial = initial
        self.max = max
        self.jitter = jitter
    }

    public enum CodingKeys: String, CodingKey, CaseIterable { case kind, initial, max, jitter }
}

/// The body of `POST /v1/jobs/batch`: every job or none.
public struct BatchSubmission: Codable, Sendable, Hashable {
    public var jobs: [JobSubmission]

    public init(jobs: [JobSubmission]) { self.jobs = jobs }

    public enum CodingKeys: String, CodingKey, CaseIterable { case jobs }
}
