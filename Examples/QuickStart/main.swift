// A Swift service that defines tasks, runs a worker and enqueues a chain, all in one process.
// Run `swift run baton dev` first and pass the database URL it prints:
//   swift run BatonQuickStart postgres://postgres@127.0.0.1:PORT/postgres
import Baton
import BatonPostgres
import BatonWorker
import Foundation
import Logging
import ServiceLifecycle

/// A task's stored properties are its args; its input is the previous stage's output.
struct Greet: BatonTask {
    var greeting: String
    func run(_ name: String, context: StageContext) async throws -> String {
        "\(greeting), \(name)!"
    }
}

struct Shout: BatonTask {
    func run(_ text: String, context: StageContext) async throws -> String { text.uppercased() }
}

@main
struct QuickStart {
    static func main() async throws {
        let logger = Logger(label: "quickstart")
        let database = try DatabaseConfiguration(
            url: CommandLine.arguments.dropFirst().first ?? "postgres://localhost/baton")
        let pool = DatabasePool(configuration: database, logger: logger)
        var tasks = TaskRegistry()
        tasks.register(Greet.self)
        tasks.register(Shout.self)
        let worker = Worker(
            pool: pool, tasks: tasks,
            configuration: WorkerConfiguration(queues: ["default": 10]), logger: logger)
        let baton = BatonClient(pool: pool, logger: logger, checkingArgs: tasks.argsCheck)
        let services = ServiceGroup(services: [pool, baton, worker], logger: logger)

        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { try await services.run() }
            // Creates or upgrades Baton's schema (what `baton migrate` does).
            try await Migrator(schema: database.schema, logger: logger).migrate(pool)
            // The compiler checks that each stage's input is the previous stage's output.
            let chain = Chain(input: "Baton")
                .then(Greet(greeting: "Hello"))
                .then(Shout(), lane: "greetings")
                .retry(.exponential(initial: .seconds(1), max: .seconds(60), attempts: 5))
            let job = try await baton.enqueue(chain, queue: "default")
            print(try await job.result())  // HELLO, BATON!
            await services.triggerGracefulShutdown()
        }
    }
}
