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
    ///
    /// Made at each use, from the worker's logger: most stages never log, and setting the three
    /// keys on every stage's copy cost a measurable part of a busy worker's CPU
    /// (docs/benchmarks.md#issue-21-part-5-again-the-workers-cpu-per-stage-again-2026-11-27-evening).
    /// Keep it in a local to log several times.
    ///
    /// In a worker, what it logs from `debug` up is also kept with the attempt (its log in the
    /// job); the logger that does so is made only when a task asks for it.
    public var logger: Logger {
        var logger = attemptLog?.logger(over: baseLogger) ?? baseLogger
        // Numbers as `stringConvertible`: made text only if the task logs at a level that shows.
        logger[metadataKey: "job"] = .stringConvertible(jobID)
        logger[metadataKey: "stage"] = .stringConvertible(stageIndex)
        logger[metadataKey: "attempt"] = .stringConvertible(attempt)
        return logger
    }
    private let baseLogger: Logger
    /// Where the attempt's log is kept, in a worker.
    private let attemptLog: (any AttemptLog)?
    /// The runs before this one, in order (the path taken: a `goto` skips stages, a `repeat` runs
    /// one again), each with its stage's position and name.
    package let earlier: [(stage: Int, name: String?, output: JSONValue)]
    /// What the worker provides, and this attempt's latest report.
    private let attemptProgress: AttemptProgress

    package init(
        jobID: Int64, stageIndex: Int, stageName: String?, attempt: Int, queue: String, lane: String?,
        metadata: JSONValue, logger: Logger, attemptLog: (any AttemptLog)? = nil,
        earlier: [(stage: Int, name: String?, output: JSONValue)], services: any StageServices
    ) {
        self.jobID = jobID
        self.stageIndex = stageIndex
        self.stageName = stageName
        self.attempt = attempt
        self.queue = queue
        self.lane = lane
        self.metadata = metadata
        self.baseLogger = logger
        self.attemptLog = attemptLog
        self.earlier = earlier
        self.attemptProgress = AttemptProgress(services: services)
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
    /// - Parameters:
    ///   - earlier: the outputs of the stages before this one, in chain order, each with its
    ///     stage's name (nil for an unnamed stage); this stage's index is their count.
    ///   - checkpoint: what an earlier attempt saved, for ``checkpoint(as:)``. What the task
    ///     reports is in ``reportedProgress``.
    ///   - jobInput: the job's input, for ``jobInput(as:)``.
    ///
    /// Its ``signalToken(for:)`` is `test-token-` and the signal's name.
    public init(
        testingJob jobID: Int64 = 1, attempt: Int = 1, stageName: String? = nil, queue: String = "default",
        lane: String? = nil, metadata: JSONValue = [:], earlier: [(name: String?, output: JSONValue)] = [],
        checkpoint: JSONValue? = nil, jobInput: JSONValue = .null, logger: Logger = Logger(label: "baton.test")
    ) {
        self.init(
            jobID: jobID, stageIndex: earlier.count, stageName: stageName, attempt: attempt, queue: queue, lane: lane,
            metadata: metadata, logger: logger,
            earlier: earlier.enumerated().map { ($0, $1.name, $1.output) },
            services: TestStageServices(saved: checkpoint, input: jobInput))
    }

    /// How many runs came before this one: the stage's index unless a `goto` skipped stages or a
    /// `repeat` ran one again.
    public var step: Int { earlier.count }

    /// The same for every attempt at this run of the stage, `<job id>-<step>`: use it to make the
    /// task's side effects idempotent. Each run of a repeated stage has its own.
    public var idempotencyKey: String { "\(jobID)-\(step)" }

    /// The output of the earlier stage called `name`, if it has run (its latest run, for a stage
    /// that repeated). Group members are jobs of their own: they see their input, not the stages
    /// before their group.
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

    /// The output of the stage at `index` (earlier than this one; its latest run), nil if it has
    /// not run (or a `goto` skipped it).
    public func output(at index: Int) -> JSONValue? {
        earlier.last(where: { $0.stage == index })?.output
    }

    /// Every output of the stage called `name`, one per run, in order: the pages a repeated stage
    /// fetched.
    public func outputs(of name: String) -> [JSONValue] {
        earlier.filter { $0.name == name }.map(\.output)
    }

    // MARK: progress

    /// Says how far the stage has got: shown by `GET /v1/jobs/{id}`, `baton jobs show` and `wait`,
    /// and the dashboard. Call it as often as you like: the worker keeps the latest report and
    /// writes it at most once a second (and once more when the attempt ends), never in the way of
    /// the task.
    ///
    /// - Parameters:
    ///   - fraction: done so far, from 0 to 1 (clamped); nil when the task cannot tell.
    ///   - message: a short line for people, cut to ``StageProgress/messageLimit`` characters.
    public func progress(_ fraction: Double?, _ message: String? = nil) {
        attemptProgress.report(StageProgress(fraction: fraction, message: message))
    }

    /// Says how far the stage has got and where to resume from: should this attempt fail (or its
    /// worker die), the next attempt at this stage reads the checkpoint with ``checkpoint(as:)``,
    /// so that a long import resumes instead of starting over.
    ///
    /// ```swift
    /// var page = try await context.checkpoint(as: Int.self) ?? 0
    /// while page < pages {
    ///     try await importPage(page)
    ///     page += 1
    ///     try context.progress(Double(page) / Double(pages), "page \(page) of \(pages)", checkpoint: page)
    /// }
    /// ```
    ///
    /// The checkpoint written last before a failure is the one resumed from: a worker killed outright
    /// loses at most its last second of reports. A report without a checkpoint keeps the one before.
    ///
    /// - Throws: ``BatonError/checkpointTooLarge(bytes:)`` past ``StageProgress/checkpointLimit``
    ///   bytes of JSON, or the checkpoint's encoding error; nothing is reported then.
    public func progress(_ fraction: Double?, _ message: String? = nil, checkpoint: some Encodable) throws {
        let value = try JSONValue(encoding: checkpoint)
        let bytes = value.jsonText.utf8.count
        guard bytes <= StageProgress.checkpointLimit else { throw BatonError.checkpointTooLarge(bytes: bytes) }
        attemptProgress.report(StageProgress(fraction: fraction, message: message, checkpoint: value))
    }

    /// The checkpoint this stage resumes from: the last one saved at this stage, by this attempt or
    /// an earlier one; nil when none was.
    public func checkpoint<T: Decodable>(as type: T.Type = T.self) async throws -> T? {
        if let own = attemptProgress.last?.checkpoint { return try own.decode(as: T.self) }
        return try await attemptProgress.services.savedCheckpoint()?.decode(as: T.self)
    }

    /// What this attempt reported last (its checkpoint the latest it gave), nil before its first report.
    public var reportedProgress: StageProgress? { attemptProgress.last }

    // MARK: signals

    /// The one-time token that delivers signal `signal` to this job without an API token, for a
    /// callback URL handed to a third party (a payment provider's webhook):
    /// `https://baton.example/v1/jobs/\(context.jobID)/signals/payment-confirmed?token=\(token)`.
    /// It delivers that signal to this job and nothing else, once; a later stage of the chain
    /// awaits it (`Chain.await`).
    public func signalToken(for signal: String) async throws -> String {
        try await attemptProgress.services.signalToken(for: signal)
    }

    // MARK: the job

    /// The job's input, what its first stage was given, in any stage (read from the database when
    /// a later stage asks; group members are jobs of their own, whose input is their group's).
    public func jobInput() async throws -> JSONValue {
        try await attemptProgress.services.jobInput()
    }

    /// The job's input decoded as `T`.
    public func jobInput<T: Decodable>(as type: T.Type) async throws -> T {
        try await jobInput().decode(as: T.self)
    }

    /// For a run of a map (or a group member), its element's index (its member's place, 0-based);
    /// nil for a job that is no member. Read from the database when asked.
    public func memberIndex() async throws -> Int? {
        try await attemptProgress.services.memberIndex()
    }
}

/// Keeps what a task logs during one attempt (the worker's `StageLog`).
package protocol AttemptLog: Sendable {
    /// `logger`, writing to this log as well.
    func logger(over logger: Logger) -> Logger
}
