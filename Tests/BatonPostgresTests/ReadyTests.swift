import Baton
import BatonPostgres
import BatonTestSupport
import Foundation
import PostgresNIO
import Testing

/// `ready` (migration 20): the claim's own table, one row per claimable stage, emptied by
/// truncation rather than by vacuum, so that a held xmin horizon leaves claims nothing to step over.
@Suite(.timeLimit(.minutes(3)))
struct ReadyTests {
    func job(priority: Int = 0) -> NewJob {
        NewJob(chain: ChainDefinition(input: nil, stages: [.task("noop")]), priority: priority)
    }

    /// Bytes on disk per slot: a truncated slot has none, dead rows or not.
    func sizes(_ db: TestDatabase) async throws -> [Int] {
        try await db.values(
            """
            SELECT pg_relation_size(format('%I.ready_%s', \(db.configuration.schema)::text, s))::int
            FROM generate_series(0, 3) s ORDER BY s
            """, as: Int.self)
    }

    /// Rows claimed leave only dead rows behind, which rotation truncates; the rows not yet claimed
    /// move to the current slot and are claimed afterwards, in the claim's order.
    @Test func rotationTruncatesClaimedRowsAndKeepsTheRest() async throws {
        try await TestDatabase.with { db async throws in
            let schema = db.configuration.schema
            let claimedFirst = try await db.store.enqueue((0..<200).map { _ in job() })
            let left = try await db.store.enqueue((0..<50).map { index in job(priority: index % 2) })
            let claimed = try await db.store.claim(queue: "default", limit: 200, worker: "w")
            #expect(claimed.map(\.id) == claimedFirst.map(\.id))
            let before = try await sizes(db)
            #expect(before.contains { $0 > 0 })
            // Once the second the rows were written in is two seconds past, their slot is emptied.
            try await eventually(timeout: .seconds(15), "the written slots to be truncated") {
                try await db.store.rotateReady()
                let after = try await sizes(db)
                return zip(before, after).allSatisfy { written, now in written == 0 || now == 0 }
            }
            #expect(
                try await db.values("SELECT count(*)::int FROM \(unescaped: schema).ready", as: Int.self) == [50])
            let rest = try await db.store.claim(queue: "default", limit: 100, worker: "w")
            let expected =
                left.enumerated().filter { $0.offset % 2 == 0 } + left.enumerated().filter { $0.offset % 2 == 1 }
            #expect(rest.map(\.id) == expected.map(\.element.id))
        }
    }

    /// A slot still holding more than the rows rotation may move (a backlog) is left as it is.
    @Test func aSlotHoldingABacklogIsNotMoved() async throws {
        try await TestDatabase.with { db async throws in
            _ = try await db.store.enqueue((0..<30).map { _ in job() })
            let before = try await sizes(db)
            try await eventually(timeout: .seconds(15), "the slot written to be neither current nor the one before") {
                let current = try await db.values(
                    "SELECT \(unescaped: db.configuration.schema).ready_slot()::int", as: Int.self)[0]
                let written = before.indices.filter { before[$0] > 0 }
                return !written.contains(current) && !written.contains((current + 3) % 4)
            }
            #expect(try await db.store.rotateReady(mostMoved: 20).isEmpty)
            #expect(try await sizes(db) == before)
            #expect(try await db.store.rotateReady(mostMoved: 30).count == 1)
            #expect(try await db.store.claim(queue: "default", limit: 100, worker: "w").count == 30)
        }
    }

    /// A row is a hint: a job cancelled while available leaves its row, which no claim takes in
    /// place of a claimable job and rotation drops; a job available again gets a new row.
    @Test func aRowWhoseJobIsNoLongerAvailableIsPassedOverAndDropped() async throws {
        try await TestDatabase.with { db async throws in
            let schema = db.configuration.schema
            let enqueued = try await db.store.enqueue([job(), job()])
            try await db.store.cancel(enqueued[0].id)
            #expect(try await db.store.claim(queue: "default", limit: 1, worker: "w").map(\.id) == [enqueued[1].id])
            #expect(try await db.store.claim(queue: "default", limit: 1, worker: "w").isEmpty)
            _ = try await db.store.retry(enqueued[0].id)
            #expect(try await db.store.claim(queue: "default", limit: 1, worker: "w").map(\.id) == [enqueued[0].id])
            try await eventually(timeout: .seconds(15), "rotation to drop the rows left") {
                try await db.store.rotateReady()
                return try await db.values("SELECT count(*)::int FROM \(unescaped: schema).ready", as: Int.self) == [0]
            }
        }
    }
}
