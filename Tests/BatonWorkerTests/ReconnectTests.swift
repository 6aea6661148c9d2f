import Baton
import BatonPostgres
import BatonTestSupport
import Foundation
import LocalPostgres
import Testing

/// The worker outlives its database: restarts, fast and immediate (a crash).
@Suite(.serialized, .timeLimit(.minutes(5)))
struct ReconnectTests {
    @Test(arguments: ["fast", "immediate"])
    func theWorkerCarriesOnAfterTheDatabaseRestarts(mode: String) async throws {
        // Durable settings: an immediate shutdown is a crash, and must not lose what was committed.
        let server = try await LocalPostgres.start(LocalPostgres.Options())
        do {
            try await run(mode: mode, server: server)
        } catch {
            await server.shutdown()
            throw error
        }
        await server.shutdown()
    }

    func run(mode: String, server: LocalPostgres) async throws {
        try await TestDatabase.with(baseURL: server.url) { db async throws in
            try await withWorker(db, tasks: testTasks) { baton, _ async throws in
                #expect(try await baton.enqueue(Chain(input: 1).then(Add(n: 1))).result() == 2)

                // A stage in flight while the database goes away: its outcome waits for the database.
                let inFlight = try await baton.enqueue(Chain(input: 1).then(SleepThenAdd(ms: 1500, n: 1)))
                try await db.eventually("the stage to start") { try await db.store.job(inFlight.id)?.state == .running }
                try await server.restart(mode: mode)

                // Enqueueing works again once the pool has reconnected.
                var handle: JobHandle<Int>?
                try await db.eventually(timeout: .seconds(30), "an enqueue to succeed") {
                    handle = try? await baton.enqueue(Chain(input: 10).then(Add(n: 5)))
                    return handle != nil
                }
                #expect(try await handle?.result() == 15)
                #expect(try await inFlight.result() == 2)
            }
        }
    }
}

struct SleepThenAdd: BatonTask {
    var ms: Int
    var n: Int
    func run(_ input: Int, context: StageContext) async throws -> Int {
        try await Task.sleep(for: .milliseconds(ms))
        return input + n
    }
}
