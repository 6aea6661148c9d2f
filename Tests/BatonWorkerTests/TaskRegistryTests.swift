import Baton
import BatonPostgres
import BatonTestSupport
import BatonWorker
import Testing

/// The store knows no task; the registry tells it what each task checks of its args, so that a
/// job a worker would refuse for its args is refused when it is enqueued, not when it runs.
@Suite struct TaskRegistryTests {
    static let malformed = NewJob(
        chain: ChainDefinition(stages: [.task("http", args: ["method": "GET", "url": "https://x/{{input"])]))

    @Test func aClientGivenTheRegistrysChecksRefusesWhatTheHTTPTaskWouldRefuse() async throws {
        try await TestDatabase.with { db async throws in
            let baton = BatonClient(pool: db.pool, logger: db.logger, checkingArgs: TaskRegistry().argsCheck)
            await #expect {
                try await baton.enqueue([Self.malformed])
            } throws: { error in
                guard case BatonError.invalidChain(let path, _) = error else { return false }
                return path == "stages[0].args.url"
            }
            #expect(
                try await db.values(
                    "SELECT count(*)::int FROM \(unescaped: db.configuration.schema).jobs", as: Int.self)
                    == [0])
        }
    }

    @Test func aTaskRegisteredInTheHTTPTasksPlaceTakesItsChecksAway() throws {
        var tasks = TaskRegistry()
        #expect(throws: BatonError.self) { try Self.malformed.validated(checkingArgs: tasks.argsCheck) }
        tasks.register(name: "http") { _, input, _ in input }
        #expect(throws: Never.self) { try Self.malformed.validated(checkingArgs: tasks.argsCheck) }
        #expect(throws: Never.self, "without checks, no task's args are checked") { try Self.malformed.validated() }
    }
}
