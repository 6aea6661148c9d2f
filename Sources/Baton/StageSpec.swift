/// One stage of a chain, as stored in the job row.
///
/// A task stage runs a registered task with its `args`; with a `lane` it is *ordered*. A group stage
/// runs its members concurrently (as child jobs) and hands the array of their outputs, in member
/// order, to the next stage.
public struct StageSpec: Sendable, Hashable, Codable {
    public enum Body: Sendable, Hashable {
        case task(TaskStage)
        case group([StageSpec])
    }

    /// Referenced by later stages to read this stage's output.
    public var name: String?
    public var body: Body

    public init(name: String? = nil, _ body: Body) {
        self.name = name
        self.body = body
    }

    public static func task(
        _ task: String, args: JSONValue = .object([:]), name: String? = nil, lane: String? = nil,
        retry: RetryPolicy = .default, timeout: Duration = TaskStage.defaultTimeout
    ) -> StageSpec {
        StageSpec(name: name, .task(TaskStage(task: task, args: args, lane: lane, retry: retry, timeout: timeout)))
    }

    public static func group(_ members: [StageSpec], name: String? = nil) -> StageSpec {
        StageSpec(name: name, .group(members))
    }

    /// The lane an ordered task stage runs in; nil for background and group stages.
    public var lane: String? {
        if case .task(let task) = body { return task.lane }
        return nil
    }

    public var task: TaskStage? {
        if case .task(let task) = body { return task }
        return nil
    }

    enum CodingKeys: String, CodingKey {
        case name, task, args, lane, retry, timeout = "timeout_ms", group
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decodeIfPresent(String.self, forKey: .name)
        if let members = try container.decodeIfPresent([StageSpec].self, forKey: .group) {
            body = .group(members)
        } else {
            body = .task(
                TaskStage(
                    task: try container.decode(String.self, forKey: .task),
                    args: try container.decodeIfPresent(JSONValue.self, forKey: .args) ?? .object([:]),
                    lane: try container.decodeIfPresent(String.self, forKey: .lane),
                    retry: try container.decodeIfPresent(RetryPolicy.self, forKey: .retry) ?? .default,
                    timeout: .milliseconds(
                        try container.decodeIfPresent(Int64.self, forKey: .timeout)
                            ?? TaskStage.defaultTimeout.milliseconds)
                ))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(name, forKey: .name)
        switch body {
        case .group(let members):
            try container.encode(members, forKey: .group)
        case .task(let task):
            try container.encode(task.task, forKey: .task)
            try container.encode(task.args, forKey: .args)
            try container.encodeIfPresent(task.lane, forKey: .lane)
            try container.encode(task.retry, forKey: .retry)
            try container.encode(task.timeout.milliseconds, forKey: .timeout)
        }
    }
}

/// A stage that runs one registered task.
public struct TaskStage: Sendable, Hashable {
    /// Five minutes: a stage that runs longer is cancelled and counts as a failed attempt.
    public static let defaultTimeout: Duration = .seconds(300)

    public var task: String
    public var args: JSONValue
    public var lane: String?
    public var retry: RetryPolicy
    public var timeout: Duration

    public init(
        task: String, args: JSONValue = .object([:]), lane: String? = nil, retry: RetryPolicy = .default,
        timeout: Duration = TaskStage.defaultTimeout
    ) {
        self.task = task
        self.args = args
        self.lane = lane
        self.retry = retry
        self.timeout = timeout
    }
}
