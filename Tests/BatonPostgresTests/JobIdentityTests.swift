import Baton
import BatonPostgres
import BatonTestSupport
import Foundation
import PostgresNIO
import Testing

/// Job ids are never given out twice, even by a database that lost its latest writes.
@Suite struct JobIdentityTests {
    func job() -> NewJob { NewJob(chain: ChainDefinition(input: nil, stages: [.task("noop")])) }

    /// A promoted standby that missed the last seconds of WAL, or a restore to an earlier point,
    /// has an older copy of everything, the id counter included: here the jobs of those seconds
    /// are deleted and the counter put back where it stood before them. The ids given out after
    /// are all new (each embeds the time it was drawn), grow with time, and stay exact in a
    /// JavaScript number.
    @Test func idsLostWithTheirJobsAreNotGivenOutAgain() async throws {
        try await TestDatabase.with { db async throws in
            let schema = db.configuration.schema
            _ = try await db.store.enqueue([job()])
            let counter = try await db.values(
                "SELECT last_value FROM \(unescaped: schema).job_id_counter", as: Int64.self)[0]
            let lost = try await db.store.enqueue((0..<50).map { _ in job() }).map(\.id)
            try await db.pool.execute("DELETE FROM \(unescaped: schema).jobs WHERE id = ANY(\(lost))")
            try await db.pool.execute("SELECT setval('\(unescaped: schema).job_id_counter', \(counter))")

            // A moment later, as a failover or a restore is.
            try await Task.sleep(for: .milliseconds(5))
            let after = try await db.store.enqueue((0..<50).map { _ in job() }).map(\.id)
            #expect(Set(after).isDisjoint(with: lost))
            #expect(after.min()! > lost.max()!)
            #expect(after.allSatisfy { $0 < 1 << 53 })
            #expect(after == after.sorted())
        }
    }
}
