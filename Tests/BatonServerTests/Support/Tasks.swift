import Baton
import BatonWorker
import Synchronization

/// The built-in tasks and the test tasks below.
let serverTestTasks: TaskRegistry = {
    var tasks = TaskRegistry()
    tasks.register(Add.self)
    tasks.register(Sum.self)
    tasks.register(FailFirst.self)
    return tasks
}()

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
