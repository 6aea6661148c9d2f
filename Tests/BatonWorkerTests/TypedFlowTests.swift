import Baton
import BatonPostgres
import BatonTestSupport
import BatonWorker
import Testing

/// Control flow from Swift: a typed `repeat`, tasks that decide (`Next`), declared `finish` and
/// `goto` with their types checked when the chain is built.
@Suite(.timeLimit(.minutes(3)))
struct TypedFlowTests {
    var tasks: TaskRegistry {
        var tasks = testTasks
        tasks.register(Countdown.self)
        tasks.register(Classify.self)
        tasks.register(Describe.self)
        tasks.register(RunsSoFar.self)
        return tasks
    }

    @Test func aRepeatedStageRunsWhileItsOutputSaysSo() async throws {
        try await TestDatabase.with { db async throws in
            try await withWorker(db, tasks: tasks) { baton, _ async throws in
                let job = try await baton.enqueue(
                    Chain(input: 3)
                        .then(Countdown(), name: "count", repeatWhile: .truthy("output"), max: 10)
                        .then(RunsSoFar()))
                #expect(try await job.result() == RunsSoFar.Seen(outputs: [2, 1, 0], key: "\(job.id)-3", step: 3))
                let record = try await job.record()
                #expect(record.path.map(\.stage) == [0, 0, 0, 1])
            }
        }
    }

    @Test func aTaskDecidesWhereTheChainGoes() async throws {
        try await TestDatabase.with { db async throws in
            try await withWorker(db, tasks: tasks) { baton, _ async throws in
                func chain(_ n: Int) -> Chain<Int> {
                    Chain(input: n).then(Classify()).then(Add(n: 1)).then(Multiply(by: -1), name: "negate")
                }
                let positive = try await baton.enqueue(chain(5))
                let negative = try await baton.enqueue(chain(-3))
                let zero = try await baton.enqueue(chain(0))
                #expect(try await positive.result() == -6)
                #expect(try await negative.result() == 3)
                #expect(try await negative.record().path.map(\.stage) == [0, 2])
                #expect(try await zero.result() == 0)
                #expect(try await zero.record().path.map(\.stage) == [0])
            }
        }
    }

    @Test func declaredRulesFinishEarlyOrJumpAhead() async throws {
        try await TestDatabase.with { db async throws in
            try await withWorker(db, tasks: tasks) { baton, _ async throws in
                let early = try await baton.enqueue(
                    Chain(input: 4).then(Add(n: 1)).finish(if: .equals("output", 5)).then(Multiply(by: 2)))
                #expect(try await early.result() == 5)
                let jumped = try await baton.enqueue(
                    Chain(input: 4).then(Add(n: 1)).goto("last", if: .present("output", true))
                        .then(Multiply(by: 2)).then(Add(n: 10), name: "last"))
                #expect(try await jumped.result() == 15)
                // A group as the target: its members are fed the output the goto carried.
                let grouped = try await baton.enqueue(
                    Chain(input: 1).then(Add(n: 1)).goto("both", if: .truthy("output")).then(Multiply(by: 100))
                        .group([Add(n: 1), Add(n: 2)], name: "both").then(Sum()))
                #expect(try await grouped.result() == 7)
                #expect(try await grouped.record().path.map(\.stage) == [0, 2, 3])
            }
        }
    }

    @Test func rulesWhoseTypesDoNotMatchAreRefusedWhenTheChainIsBuilt() {
        func refusal(_ build: () throws -> ChainDefinition) -> String? {
            do {
                _ = try build()
                return nil
            } catch let BatonError.invalidChain(path, _) {
                return path
            } catch {
                return "\(error)"
            }
        }
        #expect(
            refusal { try Chain(input: 1).then(Add(n: 1)).finish(if: .truthy("output")).then(Describe()).definition() }
                == "stages[0].next[0].finish")
        #expect(
            refusal {
                try Chain(input: 1).then(Add(n: 1)).goto("text", if: .truthy("output")).then(Add(n: 2))
                    .then(Describe(), name: "text").definition()
            } == nil)
        #expect(
            refusal {
                try Chain(input: 1).then(Add(n: 1)).goto("late", if: .truthy("output")).then(Describe())
                    .then(Shout(), name: "late").definition()
            } == "stages[0].next[0].goto")
        // A rule added after a group would land on its members, which cannot branch: refused.
        #expect(
            refusal { try Chain(input: 1).group([Add(n: 1)]).finish(if: .truthy("output")).then(Sum()).definition() }
                == "stages[0].group[0].next")
    }

    @Test func aDecidedGotoToNoLaterStageFailsForGood() async throws {
        try await TestDatabase.with { db async throws in
            try await withWorker(db, tasks: tasks) { baton, _ async throws in
                // "negate" is missing: Classify's goto names no stage of this chain.
                let job = try await baton.enqueue(Chain(input: -1).then(Classify()).then(Add(n: 1)))
                await #expect(throws: BatonError.self) { try await job.result() }
                let record = try await job.record()
                #expect(record.state == .discarded)
                #expect(record.lastFailure?.code == "goto_unknown")
            }
        }
    }
}

/// One less, for `repeat`.
struct Countdown: BatonTask {
    func run(_ input: Int, context: StageContext) async throws -> Int { input - 1 }
}

/// Negative numbers go to "negate", zero finishes the chain, the rest go on.
struct Classify: BatonTask {
    func run(_ input: Int, context: StageContext) async throws -> Next<Int> {
        if input < 0 { return .goto("negate", input) }
        return input == 0 ? .finish(0) : .proceed(input)
    }
}

struct Describe: BatonTask {
    func run(_ input: Int, context: StageContext) async throws -> String { "\(input)" }
}

struct Shout: BatonTask {
    func run(_ input: String, context: StageContext) async throws -> String { input.uppercased() }
}

/// What a stage after a repeated one sees.
struct RunsSoFar: BatonTask {
    struct Seen: Codable, Sendable, Equatable {
        var outputs: [Int]
        var key: String
        var step: Int
    }

    func run(_ input: Int, context: StageContext) async throws -> Seen {
        Seen(
            outputs: try context.outputs(of: "count").map { try $0.decode(as: Int.self) },
            key: context.idempotencyKey, step: context.step)
    }
}
