import Baton
import BatonPostgres
import BatonTestSupport
import Foundation
import PostgresNIO
import Testing

/// The store's transitions, driven by hand (no worker): what the database guarantees by itself.
@Suite(.timeLimit(.minutes(3)))
struct StoreTests {
    func job(_ stages: [StageSpec], input: JSONValue = nil, key: String? = nil, priority: Int = 0, runAt: Date? = nil)
        -> NewJob
    {
        NewJob(
            chain: ChainDefinition(input: input, stages: stages), priority: priority, runAt: runAt, idempotencyKey: key)
    }

    @Test func theSameIdempotencyKeyYieldsTheSameJob() async throws {
        try await TestDatabase.with { db async throws in
            let first = try await db.store.enqueue([job([.task("noop")], key: "order-1")])
            let again = try await db.store.enqueue([
                job([.task("noop")], key: "order-1"), job([.task("noop")], key: "order-2"),
                job([.task("noop")], key: "order-2"),
            ])
            #expect(first[0].inserted)
            #expect(again.map(\.id) == [first[0].id, again[1].id, again[1].id])
            #expect(again.map(\.inserted) == [false, true, false])
            #expect(
                try await db.values(
                    "SELECT count(*)::int FROM \(unescaped: db.configuration.schema).jobs", as: Int.self) == [2])
        }
    }

    @Test func concurrentEnqueuesOfOneKeyCreateOneJob() async throws {
        try await TestDatabase.with { db async throws in
            let ids = try await withThrowingTaskGroup(of: Int64.self) { group in
                for _ in 0..<8 {
                    group.addTask { try await db.store.enqueue([job([.task("noop")], key: "race")])[0].id }
                }
                return try await group.reduce(into: Set<Int64>()) { $0.insert($1) }
            }
            #expect(ids.count == 1)
        }
    }

    /// A listing filtered by what no index serves examines a bounded number of jobs per page: a
    /// page may come back short, even empty, saying where its search stopped, and searching on
    /// from there finds every match, newest first, each once.
    @Test func aListingSearchesABoundedScanPerPage() async throws {
        try await TestDatabase.with { db async throws in
            // 20 jobs, every fourth in queue "rare": ids 4, 8, 12, 16, 20 (newest first: 20 … 4).
            var rare: [Int64] = []
            for index in 1...20 {
                var new = job([.task("noop")])
                if index.isMultiple(of: 4) { new.queue = "rare" }
                let id = try await db.store.enqueue([new])[0].id
                if index.isMultiple(of: 4) { rare.append(id) }
            }
            var filter = JobFilter(queue: "rare", limit: 10)
            filter.scanLimit = 6
            var found: [Int64] = []
            var pages = 0
            while true {
                let listing = try await db.store.jobs(filter)
                pages += 1
                found += listing.jobs.map(\.id)
                #expect(listing.jobs.count <= 2, "six jobs examined hold at most two of the rare queue")
                guard let next = listing.scannedTo else { break }
                filter.before = next
            }
            #expect(found == rare.reversed())
            #expect(pages == 4, "20 jobs examined six at a time")

            // Without such filters, no scan bound: a page is full, and no stop is reported.
            let plain = try await db.store.jobs(JobFilter(limit: 10))
            #expect(plain.jobs.count == 10)
            #expect(plain.scannedTo == nil)
        }
    }

    @Test func anInvalidJobInABatchEnqueuesNothing() async throws {
        try await TestDatabase.with { db async throws in
            await #expect(throws: BatonError.self) {
                try await db.store.enqueue([job([.task("noop")]), job([])])
            }
            #expect(
                try await db.values(
                    "SELECT count(*)::int FROM \(unescaped: db.configuration.schema).jobs", as: Int.self) == [0])
        }
    }

    @Test func claimsFollowPriorityThenAgeAndNeverHandOutARowTwice() async throws {
        try await TestDatabase.with { db async throws in
            let low = try await db.store.enqueue([job([.task("noop")], priority: 5)])[0].id
            let rest = try await db.store.enqueue((0..<40).map { _ in job([.task("noop")]) }).map(\.id)
            let high = try await db.store.enqueue([job([.task("noop")], priority: -1)])[0].id
            // In that order too, not the ids': the worker starts what a claim returns in its order.
            let first = try await db.store.claim(queue: "default", limit: 3, worker: "w1")
            #expect(first.map(\.id) == [high, rest[0], rest[1]])
            let claimed = try await withThrowingTaskGroup(of: [Int64].self) { group in
                for index in 0..<4 {
                    group.addTask {
                        try await db.store.claim(queue: "default", limit: 15, worker: "w\(index)").map(\.id)
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            #expect(claimed.count == 39)
            #expect(Set(claimed).count == 39)
            #expect(Set(claimed) == Set(rest.dropFirst(2) + [low]))
            #expect(try await db.store.claim(queue: "default", limit: 10, worker: "w1").isEmpty)
        }
    }

    /// A claim finds the rows it takes through indexes, never by reading all of `jobs` (history
    /// included), whatever plan its connection cached: one made while the table was small is kept
    /// as the table grows. `pg_stat_xact_user_tables` counts this transaction's scans.
    @Test func aClaimNeverReadsTheWholeTable() async throws {
        try await TestDatabase.with { db async throws in
            let schema = db.configuration.schema
            _ = try await db.store.enqueue((0..<40).map { _ in job([.task("noop")]) })
            // The statistics of a small table, as autovacuum gathers them on a new database.
            try await db.pool.execute("ANALYZE \(unescaped: schema).jobs")
            let sequentialScans = try await db.pool.withTransaction(logger: db.logger) { connection in
                func claim(_ limit: Int) async throws {
                    try await connection.execute(
                        "SELECT count(*) FROM \(unescaped: schema).claim_for('default', \(limit)::int, 'w', NULL)",
                        logger: db.logger)
                }
                // More claims than PL/pgSQL's plan cache tries custom plans for, on a small table...
                for limit in [1, 1, 2, 1, 3, 1, 1, 5] { try await claim(limit) }
                // ...then history piles up, and the claims go on with the plan they kept.
                try await connection.execute(
                    """
                    INSERT INTO \(unescaped: schema).jobs (queue, state, chain, stage_count, finished_at)
                    SELECT 'default', 'completed', '[{"task": "noop"}]', 1, now() FROM generate_series(1, 20000)
                    """, logger: db.logger)
                for limit in [1, 10, 1] { try await claim(limit) }
                return try await connection.read(
                    "SELECT seq_scan FROM pg_stat_xact_user_tables WHERE relid = \(schema + ".jobs")::regclass",
                    logger: db.logger
                ).map { try $0.decode(Int64.self) }
            }
            #expect(sequentialScans == [0])
            #expect(
                try await db.values(
                    "SELECT count(*)::int FROM \(unescaped: schema).jobs WHERE state = 'running'", as: Int.self)
                    == [27])
        }
    }

    /// A hop to the next stage on the same worker rewrites the row without touching an indexed
    /// column (state, worker and lane stay), so PostgreSQL can keep the new version on its page
    /// as a HOT update: no entry in any of the table's indexes, which a held xmin horizon would keep.
    @Test func aHopOutsideALaneAddsNoIndexEntry() async throws {
        try await TestDatabase.with { db async throws in
            let schema = db.configuration.schema
            let id = try #require(
                try await db.store.enqueue([job([.task("noop"), .task("noop"), .task("noop")])]).first?.id)
            let (claimed, hot) = try await db.pool.withTransaction(logger: db.logger) { connection in
                func updates() async throws -> (Int64, Int64) {
                    try await connection.read(
                        """
                        SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_xact_user_tables
                        WHERE relid = \(schema + ".jobs")::regclass
                        """, logger: db.logger
                    ).map { try $0.decode((Int64, Int64).self) }.first ?? (0, 0)
                }
                try await connection.execute(
                    "SELECT count(*) FROM \(unescaped: schema).claim_for('default', 1, 'w', NULL)", logger: db.logger)
                let claimed = try await updates()
                for stage in 0..<2 {
                    let hop = #"[{"id": \#(id), "stage": \#(stage), "attempt": 1, "kind": "hop"}]"#
                    try await connection.execute(
                        """
                        SELECT count(*) FROM \(unescaped: schema).apply_outcomes_for(
                            'w', \(hop)::jsonb, '{default}', '{1}', NULL)
                        """, logger: db.logger)
                }
                let after = try await updates()
                return (claimed, (after.0 - claimed.0, after.1 - claimed.1))
            }
            #expect(claimed.0 >= 1, "the claim updated no row of jobs")
            #expect(hot.0 == 2 && hot.1 == 2, "the two hops' updates, and how many were HOT: \(hot)")
            #expect(
                try await db.values(
                    "SELECT stage FROM \(unescaped: schema).jobs WHERE id = \(id) AND state = 'running'", as: Int.self)
                    == [2])
        }
    }

    /// Its time comes by moving it (the database's clock is the one that counts): a time a moment
    /// ahead may already have passed when a loaded machine has enqueued it.
    @Test func aScheduledJobWaitsForItsTime() async throws {
        try await TestDatabase.with { db async throws in
            let enqueued = try await db.store.enqueue([job([.task("noop")], runAt: Date().addingTimeInterval(3600))])
            #expect(enqueued[0].state == .scheduled)
            #expect(try await db.store.claim(queue: "default", limit: 10, worker: "w").isEmpty)
            #expect(try await db.store.promoteDue(limit: 10, within: nil).queues.isEmpty)
            try await db.pool.execute("UPDATE \(unescaped: db.configuration.schema).jobs SET run_at = now()")
            #expect(try await db.store.promoteDue(limit: 10, within: nil).queues == ["default"])
            #expect(try await db.store.claim(queue: "default", limit: 10, worker: "w").map(\.id) == [enqueued[0].id])
        }
    }

    @Test func aLateCompletionFromALostWorkerIsRejected() async throws {
        try await TestDatabase.with { db async throws in
            let id = try await db.store.enqueue([job([.task("noop")])])[0].id
            _ = try await db.store.claim(queue: "default", limit: 1, worker: "lost")
            // The lost worker's attempt is failed by the rescuer; another worker claims it again.
            let rescued = try await db.store.apply(
                [Outcome(jobID: id, stage: 0, attempt: 1, transition: .retry(error: "worker lost", delay: .zero))],
                worker: "lost")
            #expect(rescued.applied == [id])
            _ = try await db.store.promoteDue(limit: 10, within: nil)
            let again = try await db.store.claim(queue: "default", limit: 1, worker: "other")
            #expect(again.map(\.attempt) == [2])
            // The lost worker comes back and reports: nothing changes.
            let late = try await db.store.apply(
                [Outcome(jobID: id, stage: 0, attempt: 1, transition: .complete(output: "\"late\""))], worker: "lost")
            #expect(late.applied.isEmpty)
            let done = try await db.store.apply(
                [Outcome(jobID: id, stage: 0, attempt: 2, transition: .complete(output: "\"on time\""))],
                worker: "other")
            #expect(done.applied == [id])
            let record = try #require(try await db.store.job(id))
            #expect(record.state == .completed)
            #expect(record.output == "on time")
            #expect(record.errors.map(\.error) == ["worker lost"])
        }
    }

    @Test func outputsAdvanceThroughTheChainAndStayReadable() async throws {
        try await TestDatabase.with { db async throws in
            let id = try await db.store.enqueue([job([.task("a", name: "first"), .task("b")], input: 1)])[0].id
            let first = try #require(try await db.store.claim(queue: "default", limit: 1, worker: "w").first)
            #expect(first.input == "1")
            _ = try await db.store.apply(
                [Outcome(jobID: id, stage: 0, attempt: 1, transition: .advance(output: #"{"x":2}"#, lane: nil))],
                worker: "w")
            let second = try #require(try await db.store.claim(queue: "default", limit: 1, worker: "w").first)
            #expect(second.stage == 1)
            #expect(try JSONValue(parsing: second.input) == ["x": 2])
            #expect(second.earlier.map(\.output) == [["x": 2]])
        }
    }
}

/// Numbers through the store: what `enqueue` writes, PostgreSQL keeps with the same value, and
/// `JSONNumber.isStorable` says beforehand exactly what PostgreSQL will refuse.
@Suite(.timeLimit(.minutes(2)))
struct StoredNumberTests {
    static let edges = [
        "1e131071", "1e131072", "9.9e131071", "10e131071", "1e-16383", "1e-16384", "1.5e-16382", "1.5e-16383",
        "0e-16383", "0e-16384", "1e200000", "-1e400", "1e-400", "0.5", "1e99999999999999999999", "0e1073741822",
        "0e1073741823", "12345678901234567890",
    ]

    @Test func isStorableAgreesWithPostgreSQL() async throws {
        try await TestDatabase.with { db async throws in
            for text in Self.edges {
                let stored: Bool
                do {
                    _ = try await db.values("SELECT length(\(text)::jsonb::text)", as: Int.self)
                    stored = true
                } catch {
                    stored = false
                }
                #expect(JSONNumber(text)!.isStorable == stored, "\(text)")
            }
        }
    }

    @Test func aJobReadsBackWithTheValuesItWasGiven() async throws {
        try await TestDatabase.with { db async throws in
            let input = try JSONValue(
                parsing:
                    #"{"a": 9007199254740993, "b": 123456789012345678901234567890, "c": 0.1, "d": 1e-7, "e": 1e400}"#)
            let metadata: JSONValue = ["m": .number(JSONNumber("-18446744073709551617")!)]
            let enqueued = try await db.store.enqueue([
                NewJob(chain: ChainDefinition(input: input, stages: [.task("noop")]), metadata: metadata)
            ])
            let job = try #require(try await db.store.job(enqueued[0].id))
            #expect(job.input == input)
            #expect(job.metadata == metadata)
            #expect(job.input["d"]?.numberValue?.text == "0.0000001", "PostgreSQL writes it without an exponent")
            let refused = await #expect(throws: BatonError.self) {
                _ = try await db.store.enqueue([
                    NewJob(
                        chain: ChainDefinition(stages: [.task("noop")]),
                        metadata: ["m": .number(JSONNumber("1e200000")!)])
                ])
            }
            guard case .invalidChain(let path, _)? = refused else { return }
            #expect(path == "metadata.m")
        }
    }
}
