import Baton
import BatonPostgres
import BatonTestSupport
import Foundation
import Testing

/// Concurrent enqueues through `BatonClient` share transactions, yet each caller gets its own jobs
/// back, in order, and one caller's bad job fails only that caller.
@Suite(.timeLimit(.minutes(2)))
struct EnqueueBatcherTests {
    @Test func concurrentCallersGetTheirOwnJobsAndFailAlone() async throws {
        try await TestDatabase.with { db async throws in
            let client = BatonClient(postgres: db.client, configuration: db.configuration, logger: db.logger)
            let results = await withTaskGroup(of: (Int, Result<[EnqueuedJob], any Error>).self) { group in
                for caller in 0..<60 {
                    group.addTask {
                        // Every tenth caller sends a chain that only the database refuses (a queue
                        // name with a NUL character), after the others have passed validation.
                        let queue = caller % 10 == 3 ? "bad\u{0}queue" : "q\(caller % 3)"
                        let jobs = (0..<(1 + caller % 4)).map { index in
                            NewJob(
                                chain: ChainDefinition(
                                    input: .number(Double(caller * 10 + index)), stages: [.task("noop")]),
                                queue: queue, idempotencyKey: "caller-\(caller)-\(index)")
                        }
                        return (caller, await Result(catching: { try await client.enqueue(jobs) }))
                    }
                }
                var results: [Int: Result<[EnqueuedJob], any Error>] = [:]
                for await (caller, result) in group { results[caller] = result }
                return results
            }
            var ids = Set<Int64>()
            for (caller, result) in results.sorted(by: { $0.key < $1.key }) {
                if caller % 10 == 3 {
                    #expect(throws: (any Error).self) { try result.get() }
                    continue
                }
                let jobs = try result.get()
                #expect(jobs.count == 1 + caller % 4)
                #expect(jobs.allSatisfy { $0.inserted && $0.queue == "q\(caller % 3)" })
                ids.formUnion(jobs.map(\.id))
                // Each id is the caller's own job: its input says which caller and which index.
                let inputs = try await db.values(
                    "SELECT (input::text)::int FROM \(unescaped: db.configuration.schema).jobs WHERE id = ANY(\(jobs.map(\.id))) ORDER BY id",
                    as: Int.self)
                #expect(inputs == (0..<jobs.count).map { caller * 10 + $0 })
            }
            let stored = try await db.values(
                "SELECT count(*)::int FROM \(unescaped: db.configuration.schema).jobs", as: Int.self)
            #expect(stored == [ids.count])
        }
    }
}
