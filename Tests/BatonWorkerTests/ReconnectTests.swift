import Baton
import BatonPostgres
import BatonTestSupport
import Foundation
import LocalPostgres
import PostgresNIO
import Testing

/// The worker outlives its database: restarts, fast and immediate (a crash).
@Suite(.serialized, .timeLimit(.minutes(5)))
struct ReconnectTests {
    @Test(arguments: ["fast", "immediate"])
    func theWorkerCarriesOnAfterTheDatabaseRestarts(mode: String) async throws {
        // Durable settings: an immediate shutdown is a crash, and must not lose what was committed.
        try await withLocalPostgres { server in try await run(mode: mode, server: server) }
    }

    func run(mode: String, server: LocalPostgres) async throws {
        try await TestDatabase.with(baseURL: server.url) { db async throws in
            try await withWorker(db, tasks: testTasks) { baton, _ async throws in
                #expect(try await baton.enqueue(Chain(input: 1).then(Add(n: 1))).result() == 2)

                // A stage in flight while the database goes away: its outcome waits for the database.
                let inFlight = try await baton.enqueue(Chain(input: 1).then(SleepThenAdd(ms: 1500, n: 1)))
                try await eventually("the stage to start") { try await db.store.job(inFlight.id)?.state == .running }
                try await server.restart(mode: mode)

                // Enqueueing works again once the pool has reconnected.
                var handle: JobHandle<Int>?
                try await eventually(timeout: .seconds(30), "an enqueue to succeed") {
                    handle = try? await baton.enqueue(Chain(input: 10).then(Add(n: 5)))
                    return handle != nil
                }
                #expect(try await handle?.result() == 15)
                #expect(try await inFlight.result() == 2)
            }
        }
    }
}

extension ReconnectTests {
    /// Every connection to PostgreSQL killed ten times a second while jobs come in: once it stops,
    /// every job enqueued completes (none is left running under a worker that never received it,
    /// no loop of the worker is left waiting for a connection that is gone).
    @Test func theWorkerCarriesOnAfterItsConnectionsAreKilledAgainAndAgain() async throws {
        try await withLocalPostgres(LocalPostgres.Options(fast: true)) { server in
            try await TestDatabase.with(baseURL: server.url) { db async throws in
                // A claim whose answer a kill lost is put back after a lease: a short one.
                try await withWorker(db, tasks: testTasks, configuration: .test(lease: .seconds(2))) {
                    baton, _ async throws in
                    let killer = try await db.configuration.connect(id: 1, logger: db.logger)
                    var ids: [Int64] = []
                    let stop = ContinuousClock.now + .seconds(5)
                    var number = 0
                    while ContinuousClock.now < stop {
                        number += 1
                        let chain = Chain(input: number).then(SleepThenAdd(ms: 5, n: 1)).then(
                            Add(n: 1), lane: "l-\(number % 3)")
                        if let job = try? await baton.enqueue(chain) { ids.append(job.id) }
                        _ = try? await killer.query(
                            """
                            SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                            WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()
                            """, logger: db.logger)
                        try await Task.sleep(for: .milliseconds(100))
                    }
                    try await killer.close()
                    #expect(ids.count > 10)
                    do {
                        try await eventually(timeout: .seconds(60), "every job enqueued to complete") {
                            var completed = 0
                            for id in ids where try await db.store.job(id)?.state == .completed { completed += 1 }
                            return completed == ids.count
                        }
                    } catch {
                        let states = try await db.values(
                            """
                            SELECT state::text || ' stage ' || stage || ' lane ' || coalesce(lane, '-') || ' worker '
                                || coalesce(worker_id, '-') || ' attempt ' || attempt || ' errors ' || errors::text
                            FROM \(unescaped: db.configuration.schema).jobs WHERE state <> 'completed'
                            """, as: String.self)
                        Issue.record("not completed: \(states.joined(separator: "\n"))")
                        throw error
                    }
                }
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
