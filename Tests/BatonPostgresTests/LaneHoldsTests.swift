import Baton
import BatonPostgres
import BatonTestSupport
import Foundation
import PostgresNIO
import Testing

/// `lane_holds` (migration 21): a row for each job that started holding a lane, which admissions
/// read instead of `jobs`, emptied by truncation, so that a held xmin horizon leaves them only the
/// last few seconds' dead rows to step over.
@Suite(.timeLimit(.minutes(3)))
struct LaneHoldsTests {
    func laned(_ lane: String, _ input: Int) -> NewJob {
        NewJob(
            chain: ChainDefinition(
                input: .number(input), stages: [.task("t", lane: lane, retry: .constant(.zero, attempts: 5))]))
    }

    /// The rows whose jobs hold that lane and slot, and the jobs that hold a lane (`available`,
    /// `running` or `retryable` in it), as `lane/slot/id`.
    func holds(_ db: TestDatabase) async throws -> (rows: [String], holders: [String]) {
        let schema = db.configuration.schema
        let rows = try await db.values(
            """
            SELECT h.lane || '/' || h.lane_slot || '/' || h.job_id FROM \(unescaped: schema).lane_holds h
            JOIN \(unescaped: schema).jobs j ON j.id = h.job_id AND j.lane = h.lane AND j.lane_slot = h.lane_slot
            WHERE j.state IN ('available', 'running', 'retryable') ORDER BY h.job_id
            """, as: String.self)
        let holders = try await db.values(
            """
            SELECT lane || '/' || lane_slot || '/' || id FROM \(unescaped: schema).jobs
            WHERE lane IS NOT NULL AND state IN ('available', 'running', 'retryable') ORDER BY id
            """, as: String.self)
        return (rows, holders)
    }

    /// Every way into and out of holding a lane keeps the rows to the holders: admission, claim,
    /// retry, completion, discard, cancellation, deletion, and a lane made wider; a row left by a
    /// job that stopped holding goes at its lane's next admission; rotation moves the rows of
    /// holders that hold on without losing one, and drops the rest.
    @Test func theRowsAreTheHoldersThroughEveryTransitionAndRotation() async throws {
        try await TestDatabase.with { db async throws in
            let schema = db.configuration.schema
            try await db.store.setLaneWidth(2, lane: "wide")
            let narrow = try await db.store.enqueue((0..<4).map { laned("narrow", $0) }).map(\.id)
            let wide = try await db.store.enqueue((0..<5).map { laned("wide", $0) }).map(\.id)
            var (rows, holders) = try await holds(db)
            #expect(rows == holders)
            #expect(rows == ["narrow/0/\(narrow[0])", "wide/0/\(wide[0])", "wide/1/\(wide[1])"])

            let claimed = try await db.store.claim(queue: "default", limit: 10, worker: "w")
            #expect(Set(claimed.map(\.id)) == [narrow[0], wide[0], wide[1]])
            _ = try await db.store.apply(
                [
                    Outcome(jobID: narrow[0], stage: 0, attempt: 1, transition: .complete(output: "0")),
                    Outcome(
                        jobID: wide[0], stage: 0, attempt: 1,
                        transition: .retry(error: StageError("again"), delay: .seconds(60))),
                    Outcome(jobID: wide[1], stage: 0, attempt: 1, transition: .discard(error: StageError("no"))),
                ], worker: "w")
            (rows, holders) = try await holds(db)
            #expect(rows == holders)
            #expect(rows == ["narrow/0/\(narrow[1])", "wide/0/\(wide[0])", "wide/1/\(wide[2])"])
            // The two lanes admitted: the rows of the jobs that left them are gone.
            #expect(
                try await db.values("SELECT count(*)::int FROM \(unescaped: schema).lane_holds", as: Int.self) == [3])

            // Rotation moves the holders' rows out of the slots it empties, into `lane_holds_long`.
            try await eventually(timeout: .seconds(15), "every written slot to be emptied") {
                _ = try await db.store.rotateLaneHolds()
                return try await db.values(
                    "SELECT count(*)::int FROM \(unescaped: schema).lane_holds WHERE part <> 4", as: Int.self) == [0]
            }
            (rows, holders) = try await holds(db)
            #expect(rows == holders)
            #expect(rows.count == 3)

            // A holder cancelled, a wider lane, a holder deleted: each admits or releases in place.
            try await db.store.cancel(narrow[1])
            try await db.store.setLaneWidth(3, lane: "wide")
            (rows, holders) = try await holds(db)
            #expect(rows == holders)
            #expect(rows == ["narrow/0/\(narrow[2])", "wide/0/\(wide[0])", "wide/1/\(wide[2])", "wide/2/\(wide[3])"])
            try await db.pool.execute("DELETE FROM \(unescaped: schema).jobs WHERE id = \(wide[2])")
            (rows, holders) = try await holds(db)
            #expect(rows == holders)
            #expect(rows.count == 3)
            // What no admission followed (the lanes emptied) goes with rotation.
            for id in [narrow[2], narrow[3]] + wide.filter({ $0 != wide[2] }) { try await db.store.cancel(id) }
            try await eventually(timeout: .seconds(15), "rotation to drop the rows left") {
                _ = try await db.store.rotateLaneHolds()
                return try await db.values(
                    "SELECT count(*)::int FROM \(unescaped: schema).lane_holds WHERE part <> 4", as: Int.self) == [0]
            }
            (rows, holders) = try await holds(db)
            #expect(rows.isEmpty && holders.isEmpty)
        }
    }

    /// Rows written while a transaction holds the xmin horizon, of holders that held briefly, are
    /// gone with their slot: the lane's admissions are left nothing of them to step over.
    @Test func rotationEmptiesTheSlotsOfHoldersThatEndedWhateverTheHorizon() async throws {
        try await TestDatabase.with { db async throws in
            let schema = db.configuration.schema
            try await db.pool.withConnection { holder in
                _ = try await holder.query("BEGIN", logger: db.logger)
                _ = try await holder.query("SELECT txid_current()", logger: db.logger)
                let ids = try await db.store.enqueue((0..<50).map { laned("held", $0) }).map(\.id)
                for id in ids {
                    let claimed = try await db.store.claim(queue: "default", limit: 1, worker: "w")
                    #expect(claimed.map(\.id) == [id])
                    _ = try await db.store.apply(
                        [Outcome(jobID: id, stage: 0, attempt: 1, transition: .complete(output: "0"))], worker: "w")
                }
                // Each hand-over deleted the row of the holder before it, the last one too (its lane
                // admitted no one): the rows are dead, not gone, while the horizon is held.
                #expect(
                    try await db.values("SELECT count(*)::int FROM \(unescaped: schema).lane_holds", as: Int.self)
                        == [0])
                try await eventually(timeout: .seconds(15), "the written slots to be truncated") {
                    _ = try await db.store.rotateLaneHolds()
                    return try await db.values(
                        """
                        SELECT sum(pg_relation_size(format('%I.lane_holds_%s', \(schema)::text, s)))::int
                        FROM generate_series(0, 3) s
                        """, as: Int.self) == [0]
                }
                _ = try await holder.query("ROLLBACK", logger: db.logger)
            }
        }
    }

    /// A caller's REPEATABLE READ transaction cannot see holders admitted after its snapshot:
    /// entering a lane there is refused, with the reason, rather than admitting past the width.
    @Test func aLaneIsEnteredOnlyInAReadCommittedTransaction() async throws {
        try await TestDatabase.with { db async throws in
            try await db.pool.withConnection { connection in
                _ = try await connection.query("BEGIN ISOLATION LEVEL REPEATABLE READ", logger: db.logger)
                await #expect {
                    _ = try await db.store.enqueue([db.store.validated(laned("a", 0))], on: connection)
                } throws: { error in
                    "\(String(reflecting: error))".contains("READ COMMITTED")
                }
                _ = try await connection.query("ROLLBACK", logger: db.logger)
            }
            #expect(try await db.store.enqueue([laned("a", 0)]).count == 1)
        }
    }
}
