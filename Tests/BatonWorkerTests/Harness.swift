import Baton
import BatonPostgres
import BatonTestSupport
import BatonWorker
import Foundation
import Logging
import ServiceLifecycle

extension WorkerConfiguration {
    /// Short timings so that tests of retries and drains take moments.
    ///
    /// The lease is ten seconds unless a test of lost leases asks for less: a worker's stages stay
    /// its own only while a heartbeat lands within the lease, and under the full suite on two cores
    /// a heartbeat was seen to come more than two seconds late. With a lease of two seconds the
    /// worker was then taken for lost and its running stage rescued (a lane's holder discarded, the
    /// job behind it run beside it), which is the promise kept, not the one the test asserts.
    static func test(concurrency: Int = 8, lease: Duration = .seconds(10), grace: Duration = .seconds(5)) -> Self {
        WorkerConfiguration(
            queues: ["default": concurrency], lease: lease, pollInterval: .seconds(1), drainGrace: grace,
            schedulerInterval: .milliseconds(20))
    }
}

/// Runs a worker and a client in this process against `db` while `body` runs, then drains them.
func withWorker<T: Sendable>(
    _ db: TestDatabase, tasks: TaskRegistry = TaskRegistry(), configuration: WorkerConfiguration = .test(),
    _ body: @Sendable (BatonClient, Worker) async throws -> T
) async throws -> T {
    let client = BatonClient(pool: db.pool, logger: db.logger)
    let worker = Worker(
        pool: db.pool, tasks: tasks, configuration: configuration, logger: db.logger)
    return try await withRunningServices([client, worker], logger: db.logger) {
        try await eventually("the listeners to connect") { client.listener.isListening }
        return try await body(client, worker)
    }
}

/// The built-in tasks and the test tasks below.
var testTasks: TaskRegistry {
    var tasks = TaskRegistry()
    tasks.register(Add.self)
    tasks.register(Multiply.self)
    tasks.register(Sum.self)
    tasks.register(AddNamed.self)
    tasks.register(Flaky.self)
    tasks.register(Refuse.self)
    tasks.register(Hang.self)
    tasks.register(SleepThenAdd.self)
    tasks.register(Measure.self)
    tasks.register(Restate.self)
    return tasks
}

/// Numbers a Swift service would not want rounded.
struct Measurement: Codable, Sendable, Equatable {
    var id: UInt64
    var amount: Decimal
    var reading: JSONValue
}

/// Adds a tenth to the amount, exactly.
struct Measure: BatonTask {
    func run(_ input: Measurement, context: StageContext) async throws -> Measurement {
        var output = input
        output.amount += Decimal(string: "0.1")!
        return output
    }
}

/// Returns the output of the stage named `stage`, as read through the context.
struct Restate: BatonTask {
    var stage: String
    func run(_ input: Measurement, context: StageContext) async throws -> Measurement {
        try context.output(of: stage, as: Measurement.self)
    }
}

struct Add: BatonTask {
    var n: Int
    func run(_ input: Int, context: StageContext) async throws -> Int { input + n }
}

struct Multiply: BatonTask {
    var by: Int
    func run(_ input: Int, context: StageContext) async throws -> Int { input * by }
}

struct Sum: BatonTask {
    func run(_ input: [Int], context: StageContext) async throws -> Int { input.reduce(0, +) }
}

/// Adds the output of an earlier stage, found by its name.
struct AddNamed: BatonTask {
    var stage: String
    func run(_ input: Int, context: StageContext) async throws -> Int {
        input + (try context.output(of: stage, as: Int.self))
    }
}

/// Fails its first `failures` attempts, then returns its input.
struct Flaky: BatonTask {
    var failures: Int
    struct Boom: Error {}
    func run(_ input: Int, context: StageContext) async throws -> Int {
        if context.attempt <= failures { throw Boom() }
        return input
    }
}

/// Fails for good.
struct Refuse: BatonTask {
    func run(_ input: Int, context: StageContext) async throws -> Int {
        throw TaskFailure.permanent("refused on purpose")
    }
}

/// Sleeps for a long time; records whether it saw its cancellation.
struct Hang: BatonTask {
    var seconds: Int
    func run(_ input: Int, context: StageContext) async throws -> Int {
        try await Task.sleep(for: .seconds(seconds))
        return input
    }
}
