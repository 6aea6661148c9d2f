import Logging

/// What a running stage knows about itself and the chain it belongs to.
public struct StageContext: Sendable {
    public let jobID: Int64
    /// 0-based index of this stage in the chain.
    public let stageIndex: Int
    public let stageName: String?
    /// 1-based attempt number at this stage.
    public let attempt: Int
    public let queue: String
    public let lane: String?
    public let metadata: JSONValue
    /// Carries the job id, stage and attempt as metadata.
    public let logger: Logger
    /// Outputs of the stages before this one, in chain order, with the stage names.
    package let earlier: [(name: String?, output: JSONValue)]

    package init(
        jobID: Int64, stageIndex: Int, stageName: String?, attempt: Int, queue: String, lane: String?,
        metadata: JSONValue, logger: Logger, earlier: [(name: String?, output: JSONValue)]
    ) {
        self.jobID = jobID
        self.stageIndex = stageIndex
        self.stageName = stageName
        self.attempt = attempt
        self.queue = queue
        self.lane = lane
        self.metadata = metadata
        self.logger = logger
        self.earlier = earlier
    }

    /// A context for running a task outside a worker, to unit-test it without PostgreSQL:
    ///
    /// ```swift
    /// let context = StageContext(
    ///     testingJob: 7, attempt: 2, metadata: ["customer": 42],
    ///     earlier: [("render", try JSONValue(encoding: document))])
    /// let receipt = try await Deliver().run(document, context: context)
    /// ```
    ///
    /// - Parameter earlier: the outputs of the stages before this one, in chain order, each with its
    ///   stage's name (nil for an unnamed stage); this stage's index is their count.
    public init(
        testingJob jobID: Int64 = 1, attempt: Int = 1, stageName: String? = nil, queue: String = "default",
        lane: String? = nil, metadata: JSONValue = [:], earlier: [(name: String?, output: JSONValue)] = [],
        logger: Logger = Logger(label: "baton.test")
    ) {
        self.init(
            jobID: jobID, stageIndex: earlier.count, stageName: stageName, attempt: attempt, queue: queue, lane: lane,
            metadata: metadata, logger: logger, earlier: earlier)
    }

    /// The same for every attempt at this stage: use it to make the task's side effects idempotent.
    public var idempotencyKey: String { "\(jobID)-\(stageIndex)" }

    /// The output of the earlier stage called `name`, if it has run. Group members are jobs of
    /// their own: they see their input, not the stages before their group.
    public func output(of name: String) -> JSONValue? {
        earlier.last(where: { $0.name == name })?.output
    }

    /// The output of the earlier stage called `name`, decoded as `T`.
    public func output<T: Decodable>(of name: String, as type: T.Type) throws -> T {
        guard let value = output(of: name) else {
            throw BatonError.invalidChain(path: "stages", reason: "no earlier stage is named \"\(name)\"")
        }
        return try value.decode(as: T.self)
    }

    /// The output of the stage at `index` (earlier than this one).
    public func output(at index: Int) -> JSONValue? {
        earlier.indices.contains(index) ? earlier[index].output : nil
    }
}
