/// One stage of a chain, as stored in the job row.
///
/// A task stage runs a registered task with its `args`; with a `lane` it is *ordered*. A group stage
/// runs its members concurrently (as child jobs) and hands the array of their outputs, in member
/// order, to the next stage. An await stage waits, holding no worker, for a signal from outside
/// (`POST /v1/jobs/{id}/signals/{name}`), whose JSON payload is its output. A sub-chain is a group
/// member of several stages, run in order by the member's job; its last stage's output is the
/// member's.
public struct StageSpec: Sendable, Hashable, Codable {
    public enum Body: Sendable, Hashable {
        case task(TaskStage)
        case group([StageSpec])
        case await(AwaitStage)
        /// Only as a group member: its stages, a chain of their own.
        case chain([StageSpec])
        case map(MapStage)
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
        retry: RetryPolicy = .default, timeout: Duration = TaskStage.defaultTimeout, repeat: RepeatRule? = nil,
        next: [FlowRule] = [], queue: String? = nil, rate: String? = nil
    ) -> StageSpec {
        StageSpec(
            name: name,
            .task(
                TaskStage(
                    task: task, args: args, lane: lane, retry: retry, timeout: timeout, repeat: `repeat`, next: next,
                    queue: queue, rate: rate)))
    }

    public static func group(_ members: [StageSpec], name: String? = nil) -> StageSpec {
        StageSpec(name: name, .group(members))
    }

    /// A group member that runs `stages` in order, the first fed the group's input; the last
    /// one's output is the member's.
    public static func chain(_ stages: [StageSpec], name: String? = nil) -> StageSpec {
        StageSpec(name: name, .chain(stages))
    }

    /// Runs `stages` once per element of the array at `path` in the stage's input (see ``MapStage``).
    public static func map(
        over path: String = "output", concurrency: Int? = nil, failures: MapStage.Failures = .failTheMap,
        maxElements: Int? = nil, _ stages: [StageSpec], name: String? = nil
    ) -> StageSpec {
        StageSpec(
            name: name,
            .map(
                MapStage(
                    over: path, stages: stages, concurrency: concurrency, failures: failures, maxElements: maxElements))
        )
    }

    public static func awaitSignal(
        _ signal: String, name: String? = nil, timeout: Duration = AwaitStage.defaultTimeout, maxAttempts: Int = 1
    ) -> StageSpec {
        StageSpec(name: name, .await(AwaitStage(signal: signal, timeout: timeout, maxAttempts: maxAttempts)))
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

    /// Whether it, or a member of it, has args: what a job is found by besides its metadata.
    package var hasArgs: Bool {
        switch body {
        case .task(let task): task.args != [:]
        case .group(let stages), .chain(let stages): stages.contains(where: \.hasArgs)
        case .map(let map): map.stages.contains(where: \.hasArgs)
        case .await: false
        }
    }

    /// The chain features (``ChainDefinition/readableFeatures``) `stages` use, at any depth.
    static func features(of stages: [StageSpec]) -> Set<String> {
        var features: Set<String> = []
        for stage in stages {
            switch stage.body {
            case .chain(let stages): features.formUnion(Self.features(of: stages).union(["sub-chain"]))
            case .group(let members): features.formUnion(Self.features(of: members))
            case .map(let map):
                features.formUnion(Self.features(of: map.stages).union(["map"]))
                // (a worker before it would hand an empty map's results on without its failures)
                if case .continue = map.failures { features.insert("map-failures") }
            case .task, .await: break
            }
        }
        return features
    }

    /// A map stage's array and stages.
    public var map: MapStage? {
        if case .map(let map) = body { return map }
        return nil
    }

    /// The signal an await stage waits for.
    public var awaited: AwaitStage? {
        if case .await(let stage) = body { return stage }
        return nil
    }

    /// What the stage runs, for logs and metrics: its task, `group`, `await`, `chain` or `map`.
    public var kind: String {
        switch body {
        case .task(let task): task.task
        case .group: "group"
        case .await: "await"
        case .chain: "chain"
        case .map: "map"
        }
    }

    enum CodingKeys: String, CodingKey {
        case name, task, args, lane, retry, timeout = "timeout_ms", group, await, maxAttempts = "max_attempts", stages,
            map
        case `repeat`, next, queue, rate, concurrency, failures, stopAfter = "stop_after", maxElements = "max_elements"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decodeIfPresent(String.self, forKey: .name)
        if let members = try container.decodeIfPresent([StageSpec].self, forKey: .group) {
            body = .group(members)
        } else if let path = try container.decodeIfPresent(String.self, forKey: .map) {
            body = .map(
                MapStage(
                    over: MapStage.path(of: path),
                    stages: try container.decodeIfPresent([StageSpec].self, forKey: .stages) ?? [],
                    concurrency: try container.decodeIfPresent(Int.self, forKey: .concurrency),
                    failures: try Self.failures(in: container, decoder: decoder),
                    maxElements: try container.decodeIfPresent(Int.self, forKey: .maxElements)))
        } else if let stages = try container.decodeIfPresent([StageSpec].self, forKey: .stages) {
            body = .chain(stages)
        } else if let signal = try container.decodeIfPresent(String.self, forKey: .await) {
            body = .await(
                AwaitStage(
                    signal: signal,
                    timeout: .milliseconds(
                        try container.decodeIfPresent(Int64.self, forKey: .timeout)
                            ?? AwaitStage.defaultTimeout.milliseconds),
                    maxAttempts: try container.decodeIfPresent(Int.self, forKey: .maxAttempts) ?? 1))
        } else {
            var task = TaskStage(
                task: try container.decode(String.self, forKey: .task),
                args: try container.decodeIfPresent(JSONValue.self, forKey: .args) ?? .object([:]),
                lane: try container.decodeIfPresent(String.self, forKey: .lane),
                retry: try container.decodeIfPresent(RetryPolicy.self, forKey: .retry) ?? .default,
                timeout: .milliseconds(
                    try container.decodeIfPresent(Int64.self, forKey: .timeout)
                        ?? TaskStage.defaultTimeout.milliseconds))
            let repeatRule = try container.decodeIfPresent(JSONValue.self, forKey: .repeat)
            let rules = try container.decodeIfPresent([JSONValue].self, forKey: .next) ?? []
            do {
                task.repeat = try repeatRule.map { (rule) throws(BatonError) in try RepeatRule(json: rule, at: "repeat")
                }
                for (index, rule) in rules.enumerated() {
                    task.next.append(try FlowRule(json: rule, at: "next[\(index)]"))
                }
            } catch {
                throw DecodingError.dataCorrupted(
                    DecodingError.Context(codingPath: decoder.codingPath, debugDescription: "\(error)"))
            }
            task.queue = try container.decodeIfPresent(String.self, forKey: .queue)
            task.rate = try container.decodeIfPresent(String.self, forKey: .rate)
            body = .task(task)
        }
    }

    private static func failures(
        in container: KeyedDecodingContainer<CodingKeys>, decoder: any Decoder
    ) throws -> MapStage.Failures {
        let word = try container.decodeIfPresent(String.self, forKey: .failures)
        let stopAfter = try container.decodeIfPresent(Int.self, forKey: .stopAfter)
        do {
            return try MapStage.failures(word, stopAfter: stopAfter, at: "map")
        } catch {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(codingPath: decoder.codingPath, debugDescription: "\(error)"))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        try json.encode(to: encoder)
    }

    /// The stored form: `{"task", "name"?, "args"?, "lane"?, "queue"?, "rate"?, "retry"?, "timeout_ms"?, "repeat"?,
    /// "next"?}`,
    /// `{"name"?, "group": [...]}`, `{"await", "name"?, "timeout_ms"?, "max_attempts"?}` (the
    /// schema's `expire_waits` reads the last two), `{"name"?, "map": "{{path}}", "stages": [...], "concurrency"?, "failures"?, "stop_after"?, "max_elements"?}`
    /// or, as a
    /// group member, `{"name"?, "stages": [...]}`; `Codable` encoding writes exactly this. Fields at their
    /// defaults (`{}` args, `RetryPolicy.default`, `TaskStage.defaultTimeout`) are left out, which
    /// keeps job rows small (docs/benchmarks.md#chains-stored-without-their-defaults); decoding fills
    /// them in.
    public var json: JSONValue {
        var fields: [String: JSONValue] = [:]
        if let name { fields["name"] = .string(name) }
        switch body {
        case .group(let members):
            fields["group"] = .array(members.map(\.json))
        case .chain(let stages):
            fields["stages"] = .array(stages.map(\.json))
        case .map(let map):
            fields["map"] = .string(map.template)
            fields["stages"] = .array(map.stages.map(\.json))
            if let concurrency = map.concurrency { fields["concurrency"] = .number(JSONNumber(concurrency)) }
            if case .continue(let stopAfter) = map.failures {
                // (the schema's functions read these two)
                fields["failures"] = "continue"
                if let stopAfter { fields["stop_after"] = .number(JSONNumber(stopAfter)) }
            }
            if let limit = map.maxElements { fields["max_elements"] = .number(JSONNumber(limit)) }
        case .task(let task):
            fields["task"] = .string(task.task)
            if task.args != [:] { fields["args"] = task.args }
            if let lane = task.lane { fields["lane"] = .string(lane) }
            if let queue = task.queue { fields["queue"] = .string(queue) }
            if let rate = task.rate { fields["rate"] = .string(rate) }
            if task.retry != .default { fields["retry"] = task.retry.json }
            if task.timeout != TaskStage.defaultTimeout {
                fields["timeout_ms"] = .number(task.timeout.milliseconds)
            }
            if let rule = task.repeat { fields["repeat"] = rule.json }
            if !task.next.isEmpty { fields["next"] = .array(task.next.map(\.json)) }
        case .await(let stage):
            fields["await"] = .string(stage.signal)
            if stage.timeout != AwaitStage.defaultTimeout { fields["timeout_ms"] = .number(stage.timeout.milliseconds) }
            if stage.maxAttempts != 1 { fields["max_attempts"] = .number(JSONNumber(stage.maxAttempts)) }
        }
        return .object(fields)
    }
}

/// A stage that waits for a signal from outside: a payment provider's webhook, a person's
/// approval. The job waits (state `waiting`, no worker slot held) until
/// `POST /v1/jobs/{id}/signals/{signal}` delivers a JSON payload, which becomes the stage's output.
/// A signal that arrives before the chain reaches the stage is kept for it.
///
/// Each wait lasts `timeout`; when it runs out the attempt fails ("no signal … within …") and,
/// while attempts remain, the stage waits another `timeout`; after `maxAttempts` the job is
/// discarded (and may be retried by hand, waiting anew).
public struct AwaitStage: Sendable, Hashable {
    /// A day.
    public static let defaultTimeout: Duration = .seconds(86_400)

    public var signal: String
    public var timeout: Duration
    /// Waits in all, the first included (default 1: one wait).
    public var maxAttempts: Int

    public init(signal: String, timeout: Duration = AwaitStage.defaultTimeout, maxAttempts: Int = 1) {
        self.signal = signal
        self.timeout = timeout
        self.maxAttempts = maxAttempts
    }
}

/// A stage that runs one registered task.
public struct TaskStage: Sendable, Hashable {
    /// Five minutes: a stage that runs longer is cancelled and counts as a failed attempt.
    public static let defaultTimeout: Duration = .seconds(300)

    public var task: String
    public var args: JSONValue
    public var lane: String?
    /// The queue whose workers run this stage; nil: the job's queue. The stage waits for a worker
    /// serving that queue, and a worker runs it straight after the stage before only if it serves
    /// that queue (and task).
    public var queue: String?
    /// The rate limit this stage's starts count against (`PUT /v1/rate-limits/{key}` sets it; a key
    /// without a limit does not limit). A stage waiting for a token stays `available`, its attempt
    /// not spent; a worker claims it when the key has a token, and never runs it straight after the
    /// stage before without one.
    public var rate: String?
    public var retry: RetryPolicy
    public var timeout: Duration
    /// Run again, fed its own output, while this holds (see ``RepeatRule``).
    public var `repeat`: RepeatRule?
    /// Where the chain goes once the stage has succeeded, tried in order (see ``FlowRule``).
    public var next: [FlowRule]

    public init(
        task: String, args: JSONValue = .object([:]), lane: String? = nil, retry: RetryPolicy = .default,
        timeout: Duration = TaskStage.defaultTimeout, repeat: RepeatRule? = nil, next: [FlowRule] = [],
        queue: String? = nil, rate: String? = nil
    ) {
        self.task = task
        self.args = args
        self.lane = lane
        self.queue = queue
        self.rate = rate
        self.retry = retry
        self.timeout = timeout
        self.repeat = `repeat`
        self.next = next
    }

    /// Whether the worker must look at the output to know what follows.
    public var hasFlow: Bool { `repeat` != nil || !next.isEmpty }
}
