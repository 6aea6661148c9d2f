import AsyncHTTPClient
import Baton
import BatonPostgres
import Foundation
import Logging
import NIOCore
import ServiceLifecycle

/// A failed attempt, or a job discarded, as an error reporter (Sentry and the like) or an on-call
/// webhook takes it.
public struct StageFailure: Sendable, Hashable {
    public enum Outcome: Sendable, Hashable {
        /// Another attempt follows at this time.
        case retrying(at: Date)
        /// No attempt follows: the job is discarded.
        case discarded
    }

    public var jobID: Int64
    public var queue: String
    /// The stage's index in the chain, and its name if it has one.
    public var stage: Int
    public var stageName: String?
    /// The stage's task (`group`, `await` for those stages).
    public var task: String
    public var attempt: Int
    /// What went wrong, with its code and details if the task gave them.
    public var error: StageError
    public var outcome: Outcome
    public var metadata: JSONValue
    public var at: Date

    public init(
        jobID: Int64, queue: String, stage: Int, stageName: String? = nil, task: String, attempt: Int,
        error: StageError,
        outcome: Outcome, metadata: JSONValue = [:], at: Date = Date()
    ) {
        self.jobID = jobID
        self.queue = queue
        self.stage = stage
        self.stageName = stageName
        self.task = task
        self.attempt = attempt
        self.error = error
        self.outcome = outcome
        self.metadata = metadata
        self.at = at
    }

    /// The JSON a discard webhook receives.
    var webhookBody: JSONValue {
        var body: JSONValue = [
            "event": "job.discarded", "job": .number(JSONNumber(jobID)), "queue": .string(queue),
            "stage": .number(JSONNumber(stage)), "task": .string(task), "attempt": .number(JSONNumber(attempt)),
            "error": .string(error.message), "metadata": metadata, "at": .string(RFC3339.format(at)),
        ]
        if case .object(var fields) = body {
            if let stageName { fields["stage_name"] = .string(stageName) }
            if let code = error.code { fields["code"] = .string(code) }
            if let details = error.details { fields["details"] = details }
            body = .object(fields)
        }
        return body
    }
}

/// Where a worker reports failures: a Swift handler for every failed attempt and discard, and a
/// URL that each discard is POSTed to.
public struct FailureReporting: Sendable {
    /// Called for each failed attempt and each discard this worker decides (a stage it ran, or, as
    /// the maintenance leader, a stage of a worker lost or a wait for a signal that ran out), one
    /// at a time, off the stages' path.
    public var handler: (@Sendable (StageFailure) async -> Void)?
    /// Each discard is POSTed here as JSON (`{"event": "job.discarded", "job", "queue", "stage",
    /// "task", "attempt", "error", "metadata", "at"}`), tried three times.
    public var discardWebhook: URL?

    public init(handler: (@Sendable (StageFailure) async -> Void)? = nil, discardWebhook: URL? = nil) {
        self.handler = handler
        self.discardWebhook = discardWebhook
    }

    var isEmpty: Bool { handler == nil && discardWebhook == nil }
}

/// Hands failures to ``FailureReporting``'s handler and webhook, one at a time, in the order they
/// happened, so that a slow reporter never holds a stage's slot. At most ``capacity`` wait; past
/// that the oldest are dropped (and counted in the log): reporting must not grow without bound
/// while a reporter is down. On shutdown, what is queued is still reported.
final class FailureReporter: Service, Sendable {
    static let capacity = 1000

    let reporting: FailureReporting
    let logger: Logger
    private let stream: AsyncStream<StageFailure>
    private let continuation: AsyncStream<StageFailure>.Continuation

    init(reporting: FailureReporting, logger: Logger) {
        self.reporting = reporting
        self.logger = logger
        (stream, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(Self.capacity))
    }

    func report(_ failure: StageFailure) {
        guard !reporting.isEmpty else { return }
        if case .dropped = continuation.yield(failure) {
            logger.warning("failure reports back up; dropping the oldest", metadata: ["job": "\(failure.jobID)"])
        }
    }

    /// Reports `transition` of `job`'s stage if it is a failure.
    func report(_ transition: Transition, of job: ClaimedJob) {
        report(
            transition, job: job.id, queue: job.queue, stage: job.stage, chain: job.chain, attempt: job.attempt,
            metadata: job.metadata)
    }

    /// Reports `transition` of a lost worker's stage if it is a failure.
    func report(_ transition: Transition, of stage: LostStage) {
        report(
            transition, job: stage.jobID, queue: stage.queue, stage: stage.stage, chain: stage.chain,
            attempt: stage.attempt, metadata: stage.metadata)
    }

    /// Reports a wait for a signal that ran out (decided in SQL by the maintenance leader).
    func report(_ wait: ExpiredWait) {
        let spec = wait.chain.indices.contains(wait.stage) ? wait.chain[wait.stage] : nil
        report(
            StageFailure(
                jobID: wait.jobID, queue: wait.queue, stage: wait.stage, stageName: spec?.name,
                task: spec?.kind ?? "await", attempt: wait.attempt, error: StageError(wait.error),
                outcome: wait.nextAt.map { .retrying(at: $0) } ?? .discarded, metadata: wait.metadata))
    }

    private func report(
        _ transition: Transition, job: Int64, queue: String, stage: Int, chain: [StageSpec], attempt: Int,
        metadata: JSONValue
    ) {
        let outcome: StageFailure.Outcome
        let error: StageError
        switch transition {
        case .retry(let message, let delay, _):
            (outcome, error) = (.retrying(at: Date().addingTimeInterval(Double(delay.milliseconds) / 1000)), message)
        case .discard(let message):
            (outcome, error) = (.discarded, message)
        default:
            return
        }
        let spec = chain.indices.contains(stage) ? chain[stage] : nil
        report(
            StageFailure(
                jobID: job, queue: queue, stage: stage, stageName: spec?.name, task: spec?.kind ?? "unknown",
                attempt: attempt, error: error, outcome: outcome, metadata: metadata))
    }

    func run() async {
        await withGracefulShutdownHandler {
            for await failure in stream {
                await reporting.handler?(failure)
                if failure.outcome == .discarded, let url = reporting.discardWebhook {
                    await post(failure, to: url)
                }
            }
        } onGracefulShutdown: {
            self.continuation.finish()
        }
    }

    private func post(_ failure: StageFailure, to url: URL) async {
        var request = HTTPClientRequest(url: url.absoluteString)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: "baton/\(BatonVersion.current)")
        var bytes: [UInt8] = []
        failure.webhookBody.write(into: &bytes)
        for attempt in 1...3 {
            request.body = .bytes(ByteBuffer(bytes: bytes))
            do {
                let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
                if (200..<300).contains(response.status.code) { return }
                logger.warning(
                    "discard webhook answered \(response.status.code)",
                    metadata: ["job": "\(failure.jobID)", "attempt": "\(attempt)"])
            } catch {
                logger.warning(
                    "discard webhook failed",
                    metadata: ["job": "\(failure.jobID)", "error": "\(error)", "attempt": "\(attempt)"])
            }
            if attempt < 3 { try? await Task.sleep(for: .seconds(attempt)) }
        }
    }
}
