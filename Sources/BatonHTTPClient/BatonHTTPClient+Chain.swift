import Baton
import BatonAPI
import Foundation

extension BatonHTTPClient {
    /// A job enqueued over HTTP from a typed chain.
    public struct Handle<Output: Codable & Sendable>: Sendable {
        public let id: Int64
        /// False when an idempotency key named an existing job.
        public let inserted: Bool
        let client: BatonHTTPClient

        /// Waits for the chain to finish and returns its final output; throws
        /// `BatonError.jobFailed` when it is discarded or cancelled, `BatonError.outputMismatch`
        /// when the output does not decode as `Output`, ``BatonHTTPError`` when the server cannot
        /// be asked.
        public func result() async throws -> Output {
            let job = try await client.waitUntilFinished(id)
            guard job.state == .completed else {
                let error = job.stages.flatMap { $0.errors + ($0.members ?? []).flatMap(\.errors) }
                    .max { $0.at < $1.at }.map { StageError($0.error, code: $0.code, details: $0.details) }
                throw BatonError.jobFailed(id: id, state: JobState(rawValue: job.state.rawValue)!, error: error)
            }
            do {
                return try job.output.decode(as: Output.self)
            } catch {
                throw BatonError.outputMismatch(id: id, reason: "\(error)")
            }
        }

        /// The job as stored now.
        public func job() async throws -> Job { try await client.job(id) }

        /// Cancels the job.
        @discardableResult
        public func cancel() async throws -> Job { try await client.cancel(id) }
    }
}

extension Components.Schemas.JobRequest {
    /// A chain as the API's JSON: what `BatonHTTPClient.enqueue(_:queue:…)` sends. Throws for a
    /// sub-chain outside a group, which the JSON cannot say.
    public init(_ chain: ChainDefinition) throws(BatonError) {
        self.init(input: chain.input, stages: try chain.stages.map { (stage) throws(BatonError) in try .init(stage) })
    }
}

extension Components.Schemas.StageRequest {
    public init(_ stage: StageSpec) throws(BatonError) {
        switch stage.body {
        case .group(let members):
            self = .GroupStageRequest(
                .init(
                    name: stage.name,
                    group: try members.map { (member) throws(BatonError) in try .init(member) }))
        case .map(let map):
            self = .MapStageRequest(
                .init(
                    name: stage.name, map: "{{\(map.path)}}",
                    stages: try map.stages.map { (stage) throws(BatonError) in try .init(stage) },
                    concurrency: map.concurrency))
        case .chain:
            // Only a group member is a sub-chain (`GroupMemberRequest`).
            throw .invalidChain(path: "stages", reason: "a sub-chain is a group member: put it in a group")
        case .await(let awaited):
            self = .AwaitStageRequest(
                .init(
                    _await: awaited.signal, name: stage.name,
                    timeout: awaited.timeout == AwaitStage.defaultTimeout
                        ? nil : DurationFormat.format(awaited.timeout),
                    maxAttempts: awaited.maxAttempts == 1 ? nil : Int32(clamping: awaited.maxAttempts)))
        case .task(let task):
            // What is at its default is left out, as the stored chain leaves it out.
            let retry = task.retry == .default ? nil : task.retry
            self = .TaskStageRequest(
                .init(
                    task: task.task, name: stage.name, args: task.args == [:] ? nil : task.args, lane: task.lane,
                    queue: task.queue, rate: task.rate,
                    maxAttempts: retry.map { Int32(clamping: $0.maxAttempts) },
                    backoff: retry.map { retry in
                        .init(
                            kind: .init(rawValue: retry.backoff.kind.rawValue),
                            initial: DurationFormat.format(retry.backoff.initial),
                            max: DurationFormat.format(retry.backoff.max), jitter: retry.backoff.jitter)
                    },
                    timeout: task.timeout == TaskStage.defaultTimeout ? nil : DurationFormat.format(task.timeout),
                    // Baton's JSON form of a rule is the document's (`BatonHTTPClientTests.
                    // controlFlowGoesOverTheWireUnchanged` holds the two to the same JSON).
                    _repeat: task.repeat.flatMap { try? $0.json.decode(as: Components.Schemas.RepeatRule.self) },
                    next: task.next.isEmpty
                        ? nil : task.next.compactMap { try? $0.json.decode(as: Components.Schemas.FlowRule.self) })
            )
        }
    }
}

extension Components.Schemas.GroupMemberRequest {
    public init(_ member: StageSpec) throws(BatonError) {
        if case .chain(let stages) = member.body {
            self = .SubChainRequest(
                .init(name: member.name, stages: try stages.map { (stage) throws(BatonError) in try .init(stage) }))
        } else {
            self = .StageRequest(try .init(member))
        }
    }
}
