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
    /// Each stage's input and output types, for ``definition()`` to check `finish` and `goto`.
    var types: [StageTypes] = []

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

    private init(input: JSONValue, stages: [StageSpec], encodingFailure: String?, types: [StageTypes]) {
        self.input = input
        self.stages = stages
        self.encodingFailure = encodingFailure
        self.types = types
    }

    /// This chain with `stage` added, fed `Output`, its output a `Next`.
    private func adding<Next>(_ stage: StageSpec, failure: String?, input stageInput: Any.Type? = Output.self)
        -> Chain<Next>
    {
        Chain<Next>(
            input: input, stages: stages + [stage], encodingFailure: failure,
            types: types + [StageTypes(input: stageInput.map(TypeName.init), output: TypeName(Next.self))])
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
        return adding(stage, failure: failure)
    }

    /// Runs `task` next, and again while `condition` holds over its output, each run fed the run
    /// before's output (a paginated API walked page by page, a remote job polled until done), at
    /// most `max` runs in all: reaching it with the condition still holding fails the stage for
    /// good. Its output type is its input type. Each run has its own idempotency key;
    /// ``StageContext/outputs(of:)`` gives a later stage every run's output.
    ///
    /// ```swift
    /// Chain(input: Page.first)
    ///     .then(FetchPage(), name: "pages", repeatWhile: .truthy("output.next_cursor"), max: 1000)
    /// ```
    public func then<T: BatonTask>(
        _ task: T, name: String? = nil, lane: String? = nil, retry: RetryPolicy = .default,
        timeout: Duration = TaskStage.defaultTimeout, repeatWhile condition: FlowCondition, max: Int
    ) -> Chain where T.Input == Output, T.Output == Output {
        let chain: Chain = then(task, name: name, lane: lane, retry: retry, timeout: timeout)
        return chain.modifyingLastTask { $0.repeat = RepeatRule(while: condition, max: max) }
    }

    /// Runs `task` next, which decides itself what follows (``Next``): the chain goes on with
    /// its `Value`, at the next stage, at the stage it names, or not at all.
    public func then<T: BatonTask, Value>(
        _ task: T, name: String? = nil, lane: String? = nil, retry: RetryPolicy = .default,
        timeout: Duration = TaskStage.defaultTimeout
    ) -> Chain<Value> where T.Input == Output, T.Output == Next<Value> {
        let chain: Chain<T.Output> = then(task, name: name, lane: lane, retry: retry, timeout: timeout)
        return Chain<Value>(
            input: chain.input, stages: chain.stages, encodingFailure: chain.encodingFailure,
            types: types + [StageTypes(input: TypeName(Output.self), output: TypeName(Value.self))])
    }

    /// Completes the job with the output of the stage added last when `condition` holds over it;
    /// the stages after it are skipped. That output must be of the chain's final output type
    /// (``definition()`` checks).
    public func finish(if condition: FlowCondition) -> Chain {
        modifyingLastTask { $0.next.append(FlowRule(if: condition, .finish)) }
    }

    /// Goes on at the later stage called `stage` when `condition` holds over the output of the
    /// stage added last, fed that output; the stages between are skipped. The target's input type
    /// must be this output's type (``definition()`` checks). Rules are tried in the order added.
    public func goto(_ stage: String, if condition: FlowCondition) -> Chain {
        modifyingLastTask { $0.next.append(FlowRule(if: condition, .goto(stage))) }
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
        return adding(.group(specs, name: name), failure: failure)
    }

    /// Runs every member concurrently, each a sub-chain of stages fed this chain's output; the
    /// chain goes on with their outputs (each its last stage's) in member order once all succeed.
    /// A member that fails for good fails the job. Each member is built on the chain it is given,
    /// which holds no stage yet: its first stage takes this chain's `Output`, and every member
    /// ends with a `Result`, as the compiler checks.
    ///
    /// ```swift
    /// Chain(input: batch)
    ///     .group([
    ///         { $0.then(Render()).then(Upload(), lane: "customer-7") },
    ///         { $0.then(Archive()) },
    ///     ])
    ///     .then(Summarise())   // fed [Receipt]
    /// ```
    public func group<Result>(name: String? = nil, _ members: [(Chain<Output>) -> Chain<Result>]) -> Chain<[Result]> {
        var failure = encodingFailure
        var specs: [StageSpec] = []
        for member in members {
            let chain = member(Chain(input: .null, stages: [], encodingFailure: nil, types: []))
            failure = failure ?? chain.encodingFailure
            // A member of one stage is stored as that stage, as `group(_:)` stores it.
            specs.append(chain.stages.count == 1 ? chain.stages[0] : .chain(chain.stages))
        }
        return adding(.group(specs, name: name), failure: failure)
    }

    /// Runs a sub-chain once per element of this chain's output, an array, each fed its element;
    /// the chain goes on with their outputs (each its last stage's) in element order, `[]` for an
    /// empty array. Each run is built on the chain it is given, which holds no stage yet: the
    /// compiler checks that it takes an `Element` and that the next stage takes the results. A
    /// run that fails for good fails the job (``mapCollectingFailures(name:concurrency:stopAfter:_:)``
    /// goes on instead). With `concurrency`, at most that many runs are
    /// unfinished at once, started in element order.
    ///
    /// ```swift
    /// Chain(input: batch)
    ///     .then(ListInvoices())                       // -> [Invoice]
    ///     .map { $0.then(Render()).then(Upload(), lane: "uploads") }
    ///     .then(Summarise())                          // fed [Receipt]
    /// ```
    public func map<Element: Codable & Sendable, Result>(
        name: String? = nil, concurrency: Int? = nil, _ body: (Chain<Element>) -> Chain<Result>
    ) -> Chain<[Result]> where Output == [Element] {
        let run = body(Chain<Element>(input: .null, stages: [], encodingFailure: nil, types: []))
        return adding(
            .map(concurrency: concurrency, run.stages, name: name), failure: encodingFailure ?? run.encodingFailure)
    }

    /// Runs a sub-chain once per element of the array at `elements` in this chain's output, as
    /// ``map(name:concurrency:_:)`` does over the whole output: the compiler checks the element
    /// type and the results' type alike.
    ///
    /// ```swift
    /// Chain(input: batch)
    ///     .then(FetchAccount())                       // -> Account, whose `invoices: [Invoice]`
    ///     .map(\.invoices, concurrency: 10) { $0.then(Render()).then(Upload(), lane: "uploads") }
    ///     .then(Summarise())                          // fed [Receipt]
    /// ```
    ///
    /// The stored map reads the path the key path's properties name (`output.invoices`), as
    /// Codable's synthesized conformance names them. A key path through anything else (a computed
    /// property, a subscript, an optional) makes the chain refused at enqueue. A type whose own
    /// `CodingKeys` rename the property stores it under another name, and the map finds nothing
    /// there at run time: ``StageSpec/map(over:concurrency:failures:maxElements:_:name:)`` takes
    /// the path as written.
    public func map<Element: Codable & Sendable, Result>(
        _ elements: KeyPath<Output, [Element]>, name: String? = nil, concurrency: Int? = nil,
        _ body: (Chain<Element>) -> Chain<Result>
    ) -> Chain<[Result]> {
        mapping(elements, name: name, concurrency: concurrency, failures: .failTheMap, body)
    }

    /// ``mapCollectingFailures(name:concurrency:stopAfter:_:)`` over the array at `elements` in
    /// this chain's output (see ``map(_:name:concurrency:_:)``).
    public func mapCollectingFailures<Element: Codable & Sendable, Result>(
        _ elements: KeyPath<Output, [Element]>, name: String? = nil, concurrency: Int? = nil, stopAfter: Int? = nil,
        _ body: (Chain<Element>) -> Chain<Result>
    ) -> Chain<MapResults<Result>> {
        mapping(elements, name: name, concurrency: concurrency, failures: .continue(stopAfter: stopAfter), body)
    }

    private func mapping<Element: Codable & Sendable, Result, Next>(
        _ elements: KeyPath<Output, [Element]>, name: String?, concurrency: Int?, failures: MapStage.Failures,
        _ body: (Chain<Element>) -> Chain<Result>
    ) -> Chain<Next> {
        let run = body(Chain<Element>(input: .null, stages: [], encodingFailure: nil, types: []))
        let path = Self.codingPath(of: elements)
        return adding(
            .map(over: path ?? "output", concurrency: concurrency, failures: failures, run.stages, name: name),
            failure: encodingFailure ?? run.encodingFailure
                ?? (path == nil ? "map over \(elements): not a path of stored properties" : nil))
    }

    /// `output.a.b` for `\Output.a.b`, from the key path's `debugDescription`, which names stored
    /// properties; nil when it names anything else.
    static func codingPath(of keyPath: PartialKeyPath<Output>) -> String? {
        let prefix = "\\" + String(describing: Output.self) + "."
        let description = keyPath.debugDescription
        guard description.hasPrefix(prefix) else { return nil }
        let names = description.dropFirst(prefix.count).split(separator: ".", omittingEmptySubsequences: false)
        if names == ["self"] { return "output" }
        let identifiers = names.allSatisfy { name in
            guard let first = name.first, first == "_" || first.isLetter else { return false }
            return name.allSatisfy { $0 == "_" || $0.isLetter || $0.isNumber }
        }
        return identifiers ? "output." + names.joined(separator: ".") : nil
    }

    /// A ``map(name:concurrency:_:)`` that goes on past failures: every element runs, and the
    /// chain goes on with each element's result (`nil` where its run failed for good) in element
    /// order and the runs' failures (``MapResults``). With `stopAfter`, that many failures fail the
    /// job instead, and no more runs start.
    ///
    /// ```swift
    /// Chain(input: batch)
    ///     .then(ListInvoices())
    ///     .mapCollectingFailures(stopAfter: 10) { $0.then(Render()).then(Upload()) }
    ///     .then(Report())                             // fed MapResults<Receipt>
    /// ```
    public func mapCollectingFailures<Element: Codable & Sendable, Result>(
        name: String? = nil, concurrency: Int? = nil, stopAfter: Int? = nil, _ body: (Chain<Element>) -> Chain<Result>
    ) -> Chain<MapResults<Result>> where Output == [Element] {
        let run = body(Chain<Element>(input: .null, stages: [], encodingFailure: nil, types: []))
        return adding(
            .map(concurrency: concurrency, failures: .continue(stopAfter: stopAfter), run.stages, name: name),
            failure: encodingFailure ?? run.encodingFailure)
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
        adding(
            .awaitSignal(signal, name: name, timeout: timeout, maxAttempts: attempts), failure: encodingFailure,
            input: nil)
    }

    /// This chain with `stage` next, whose output is a `Next`: for stages defined outside this
    /// module (the `http` task's typed requests).
    package func appending<Next>(_ stage: StageSpec) -> Chain<Next> {
        adding(stage, failure: encodingFailure)
    }

    /// Sets the retry policy of the stage added last.
    public func retry(_ policy: RetryPolicy) -> Chain {
        modifyingLastTask { $0.retry = policy }
    }

    /// Runs the stage added last (each member of one stage, for a group) on the workers serving `queue` rather
    /// than the job's queue: a pool with a GPU, a host with a licence.
    public func queue(_ queue: String) -> Chain {
        modifyingLastTask { $0.queue = queue }
    }

    /// Counts the starts of the stage added last (each member of one stage, for a group) against the rate
    /// limit `key` (set with `BatonClient.setRateLimit`, `PUT /v1/rate-limits/{key}` or
    /// `baton rate-limits set`): it starts only when the key has a token.
    public func rate(_ key: String) -> Chain {
        modifyingLastTask { $0.rate = key }
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
        case .group(let members):
            copy.stages[last].body = .group(members.map { Self.modifyingTasks(of: $0, change) })
        case .await, .chain, .map:
            break
        }
        return copy
    }

    /// A group member with `change` made to its task; a sub-chain's stages are set where the
    /// member is built.
    private static func modifyingTasks(of member: StageSpec, _ change: (inout TaskStage) -> Void) -> StageSpec {
        guard case .task(var task) = member.body else { return member }
        var member = member
        change(&task)
        member.body = .task(task)
        return member
    }

    /// The chain as data, validated; `finish` and `goto` rules are checked against the stages'
    /// types.
    public func definition() throws -> ChainDefinition {
        if let encodingFailure { throw BatonError.invalidChain(path: "input", reason: encodingFailure) }
        let definition = ChainDefinition(input: input, stages: stages)
        try definition.validate()
        try checkFlowTypes()
        return definition
    }

    private func checkFlowTypes() throws(BatonError) {
        guard types.count == stages.count, let final = types.last?.output else { return }
        for (index, stage) in stages.enumerated() {
            let output = types[index].output
            for (number, rule) in (stage.task?.next ?? []).enumerated() {
                let path = "stages[\(index)].next[\(number)]"
                switch rule.action {
                case .finish where output != final:
                    throw .invalidChain(
                        path: "\(path).finish",
                        reason: "finishes with \(output.name), but the chain's output is \(final.name)")
                case .goto(let name):
                    guard let target = stages.firstIndex(where: { $0.name == name }) else { continue }
                    if let input = types[target].input, input != output {
                        throw .invalidChain(
                            path: "\(path).goto",
                            reason: "stage \"\(name)\" takes \(input.name), but this stage gives \(output.name)")
                    }
                default:
                    continue
                }
            }
        }
    }
}

/// A stage's input type (nil: any, an await stage's) and output type.
struct StageTypes: Sendable {
    var input: TypeName?
    var output: TypeName
}

/// A type, comparable and named, for messages.
struct TypeName: Sendable, Equatable {
    let id: ObjectIdentifier
    let name: String

    init(_ type: Any.Type) {
        id = ObjectIdentifier(type)
        name = String(describing: type)
    }

    static func == (lhs: TypeName, rhs: TypeName) -> Bool { lhs.id == rhs.id }
}
