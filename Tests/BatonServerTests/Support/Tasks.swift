import Baton
import BatonWorker
import Foundation
import Synchronization

/// The built-in tasks and the test tasks below.
let serverTestTasks: TaskRegistry = {
    var tasks = TaskRegistry()
    tasks.register(Add.self)
    tasks.register(Sum.self)
    tasks.register(FailFirst.self)
    tasks.register(Carry.self)
    // What a stage sees: its input, args, the job's metadata and the first stage's output.
    tasks.register(name: "echo") { args, input, context in
        ["input": input, "args": args, "metadata": context.metadata, "first": context.output(at: 0) ?? nil]
    }
    return tasks
}()

/// Hands on numbers a typed task reads as Swift's exact types.
struct Carry: BatonTask {
    static let name = "carry"

    struct Numbers: Codable, Sendable {
        var id: Int64
        var count: UInt64
        var price: Decimal
        var big: JSONValue
        var rest: [String: JSONValue]
    }

    func run(_ input: Numbers, context: StageContext) async throws -> Numbers { input }
}

struct Add: BatonTask {
    static let name = "add"
    var n: Int
    func run(_ input: Int, context: StageContext) async throws -> Int { input + n }
}

struct Sum: BatonTask {
    static let name = "sum"
    func run(_ input: [Int], context: StageContext) async throws -> Int { input.reduce(0, +) }
}

/// Fails for good the first time it runs for a given `key`, then returns its input: a job
/// discarded once that succeeds when retried.
struct FailFirst: BatonTask {
    static let name = "fail-first"
    var key: String
    static let seen = Mutex(Set<String>())

    func run(_ input: Int, context: StageContext) async throws -> Int {
        if Self.seen.withLock({ $0.insert(key).inserted }) { throw TaskFailure.permanent("first run of \(key) fails") }
        return input
    }
}
