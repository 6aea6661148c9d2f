/// A typed chain of stages, built step by step. Each `then` returns a new chain whose `Output` is
/// the task's output, and only compiles when the task's `Input` is the previous `Output`.
///
/// ```swift
/// let chain = Chain(input: order)
///     .then(Render(template: "invoice"))
///     .then(Deliver(), lane: "customer-\(order.customer)")
///     .retry(.exponential(initial: .seconds(1), max: .seconds(600), attempts: 8))
/// ```
public struct Chain<Output: Codable & Sendable>: Sendable {
    var input: JSONValue
    var stages: [StageSpec]
    var encodingFailure: String?

    /// A chain whose first stage is fed `input`.
    public init(input: Output) {
        do {
            self.input = try JSONValue(encoding: input)
        } catch {
            self.input = .null
            self.encodingFailure = "input does not encode as JSON: \(error)"
        }
        self.stages = []
    }

    private init(input: JSONValue, stages: [StageSpec], encodingFailure: String?) {
        self.input = input
        self.stages = stages
        self.encodingFailure = encodingFailure
    }

    /// Runs `task` next, fed this chain's output. With a `lane` the stage is ordered: across the
    /// cluster, one stage of a lane runs at a time, in the order the stages became ready.
    public func then<T: BatonTask>(
        _ task: T, name: String? = nil, lane: String? = nil, retry: RetryPolicy = .default,
        timeout: Duration = TaskStage.defaultTimeout
    ) -> Chain<T.Output> where T.Input == Output {
        var failure = encodingFailure
        let args: JSONValue
        do {
            args = try JSONValue(encoding: task)
        } catch {
            args = .null
            failure = failure ?? "args of \(T.name) do not encode as JSON: \(error)"
        }
        let stage = StageSpec.task(T.name, args: args, name: name, lane: lane, retry: retry, timeout: timeout)
        return Chain<T.Output>(input: input, stages: stages + [stage], encodingFailure: failure)
    }

    /// Runs every task of `members` concurrently, each fed this chain's output; the chain goes on
    /// with their outputs in member order once all succeed. A member that fails for good fails the
    /// job. `lane` puts a member in a lane (nil: background).
    public func group<T: BatonTask>(
        _ members: [T], name: String? = nil, lane: (Int) -> String? = { _ in nil }, retry: RetryPolicy = .default,
        timeout: Duration = TaskStage.defaultTimeout
    ) -> Chain<[T.Output]> where T.Input == Output {
        var failure = encodingFailure
        var specs: [StageSpec] = []
        for (index, member) in members.enumerated() {
            do {
                let args = try JSONValue(encoding: member)
                specs.append(.task(T.name, args: args, lane: lane(index), retry: retry, timeout: timeout))
            } catch {
                failure = failure ?? "args of \(T.name) do not encode as JSON: \(error)"
            }
        }
        return Chain<[T.Output]>(input: input, stages: stages + [.group(specs, name: name)], encodingFailure: failure)
    }

    /// Waits, holding no worker, for the signal `signal` from outside: a payment provider's
    /// webhook, a person's approval. `POST /v1/jobs/{id}/signals/{signal}` delivers it (with an
    /// admin token, or the one-time token an earlier stage got from
    /// ``StageContext/signalToken(for:)`` and handed on); its JSON payload, decoded as `Payload`,
    /// is this stage's output. A signal delivered before the chain gets here is kept for it.
    ///
    /// Each wait lasts `timeout`; then the attempt fails and, while `attempts` remain, the stage
    /// waits again; after the last the job is discarded.
    ///
    /// ```swift
    /// Chain(input: order)
    ///     .then(StartPayment())                     // hands the provider a callback URL
    ///     .awaitSignal("payment-confirmed", as: Payment.self, timeout: .seconds(7200))
    ///     .then(Book(), lane: "inventory")
    /// ```
    public func awaitSignal<Payload: Codable & Sendable>(
        _ signal: String, as payload: Payload.Type, name: String? = nil, timeout: Duration = AwaitStage.defaultTimeout,
        attempts: Int = 1
    ) -> Chain<Payload> {
        Chain<Payload>(
            input: input,
            stages: stages + [.awaitSignal(signal, name: name, timeout: timeout, maxAttempts: attempts)],
            encodingFailure: encodingFailure)
    }

    /// This chain with `stage` next, whose output is a `Next`: for stages defined outside this
    /// module (the `http` task's typed requests).
    package func appending<Next>(_ stage: StageSpec) -> Chain<Next> {
        Chain<Next>(input: input, stages: stages + [stage], encodingFailure: encodingFailure)
    }

    /// Sets the retry policy of the stage added last.
    public func retry(_ policy: RetryPolicy) -> Chain {
        modifyingLastTask { $0.retry = policy }
    }

    /// Sets the timeout of the stage added last.
    public func timeout(_ timeout: Duration) -> Chain {
        modifyingLastTask { $0.timeout = timeout }
    }

    private func modifyingLastTask(_ change: (inout TaskStage) -> Void) -> Chain {
        var copy = self
        guard let last = copy.stages.indices.last else { return copy }
        switch copy.stages[last].body {
        case .task(var task):
            change(&task)
            copy.stages[last].body = .task(task)
        case .group(var members):
            for index in members.indices {
                if case .task(var task) = members[index].body {
                    change(&task)
                    members[index].body = .task(task)
                }
            }
            copy.stages[last].body = .group(members)
        case .await:
            break
        }
        return copy
    }

    /// The chain as data, validated.
    public func definition() throws -> ChainDefinition {
        if let encodingFailure { throw BatonError.invalidChain(path: "input", reason: encodingFailure) }
        let definition = ChainDefinition(input: input, stages: stages)
        try definition.validate()
        return definition
    }
}
