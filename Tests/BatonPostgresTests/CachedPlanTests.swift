import BatonPostgres
import BatonTestSupport
import Foundation
import Testing

/// A plan PostgreSQL caches for a worker's connection while `jobs` is nearly empty (a worker
/// started on a new database, then a burst) stays good as the table grows: the statistics it was
/// made with are not looked at again until `ANALYZE`, which autovacuum runs a minute later at best.
///
/// Each test has one connection claim and flush a few jobs while the table holds 1,000 (the
/// functions' plans are cached then), and later thousands at once. The plan that went wrong (the
/// table's primary key scanned whole as a nested loop's outer side, one row estimated, every outcome
/// of the batch compared with every row) took 3.3 s for a flush of 3,000 in `baton-bench --mode
/// steady`; its shape appears here at the second flush without the fix.
@Suite(.timeLimit(.minutes(2)))
struct CachedPlanTests {
    @Test func unorderedJobsKeepTheirPlansAsTheTableGrows() async throws {
        try await hold(lanes: nil)
    }

    @Test func lanedJobsKeepTheirPlansAsTheTableGrows() async throws {
        try await hold(lanes: 100)
    }

    /// With a limit on a whole queue (another one), a flush first looks for hops into a limited
    /// queue: that look-up, a join of the batch with its rows too, is held to the same.
    @Test func aFlushUnderAQueueLimitKeepsItsPlansAsTheTableGrows() async throws {
        try await hold(lanes: nil, queueLimit: true)
    }

    /// No statement scans an index of `jobs` whole (every such scan has an index condition), and
    /// the outcomes' update meets the batch's rows without a nested loop.
    private func hold(lanes: Int?, queueLimit: Bool = false) async throws {
        try await TestDatabase.with { db async throws in
            let lane = lanes.map { #", "lane": "l' || (g % \#($0)) || '""# } ?? ""
            let job =
                #"('{"queue": "default", "priority": 0, "chain": [{"task": "noop"\#(lane)}], "input": 1}')::jsonb"#
            let enqueue = { (count: Int) in
                "SELECT count(*) FROM enqueue((SELECT jsonb_agg(\(job)) FROM generate_series(1, \(count)) g))"
            }
            let flush = """
                SELECT count(*) FROM apply_outcomes_for('w', (SELECT jsonb_agg(jsonb_build_object('id', id, \
                'stage', 0, 'attempt', 1, 'kind', 'complete')) FROM jobs WHERE state = 'running'), '{default}', \
                '{100}', NULL)
                """
            let limit =
                "INSERT INTO rate_limits (key, rate, per_ms, burst, tokens) VALUES ('queue:other', 10, 1000, 10, 10)"
            // With a limit on a queue, the enqueue resolves each job's key by `stage_rate_key`, whose
            // statement auto_explain would show once per job: 30,000 plans printed and parsed took this
            // test past two minutes on a loaded machine. The big enqueue's plans are shown by the
            // tests without the limit; here only the flush's matter.
            let quietly = { (statement: String) in
                queueLimit
                    ? ["SET auto_explain.log_min_duration = -1", statement, "SET auto_explain.log_min_duration = 0"]
                    : [statement]
            }
            let plans = try await AutoExplain.plans(
                in: db,
                (queueLimit ? [limit] : []) + [
                    enqueue(1_000), "SELECT count(*) FROM claim_for('default', 20, 'w', NULL)", flush,
                ] + quietly(enqueue(30_000)) + ["SELECT count(*) FROM claim_for('default', 3000, 'w', NULL)", flush])
            let updates = plans.filter { AutoExplain.query(of: $0).hasPrefix("WITH b AS (") }
            try #require(updates.count == 2, "the outcomes' update was not shown twice: \(plans)")
            for plan in updates { #expect(!plan.contains("Nested Loop"), "\(plan)") }
            let handedOn = plans.filter { AutoExplain.query(of: $0).hasPrefix("SELECT array_agg(j.id)") }
            #expect(handedOn.count == (queueLimit ? 2 : 0), "the look-up of hops handed on: \(plans)")
            // The functions' statements, not the test's own calls of them: the flush's call reads
            // the running jobs through `jobs_running` whole, by design, and is logged when a
            // loaded machine makes it slow.
            for plan in plans where !AutoExplain.query(of: plan).hasPrefix("SELECT count(*) FROM ") {
                #expect(Self.wholeIndexScans(of: "jobs", in: plan).isEmpty, "\(plan)")
            }
            // In lanes one job of each runs at a time: 20, then the other 80 heads and the 20 handed
            // over by the first flush.
            let completed = try await db.values(
                "SELECT count(*)::int FROM \(unescaped: TestDatabase.schema).jobs WHERE state = 'completed'",
                as: Int.self)
            #expect(completed == [lanes == nil ? 3_020 : 20 + 100])
        }
    }

    /// A lane's admission reads its waiting jobs through `jobs_lane_waiting`, in their order, however
    /// rare the statistics say waiting jobs are (a table of finished laned jobs, analysed): through
    /// `jobs_state_id`'s `waiting` range, sorted, it stepped over the old entry of every job that
    /// ever waited in any lane, which a held xmin horizon keeps: 100 lanes at 800 jobs/s stalled
    /// for a minute (docs/benchmarks.md#issue-46-lanes-through-a-held-horizon-2026-12-06).
    @Test func anAdmissionReadsItsLaneInOrderWhateverTheStatistics() async throws {
        try await TestDatabase.with { db async throws in
            let enqueue = { (count: Int) in
                """
                SELECT count(*) FROM enqueue((SELECT jsonb_agg(('{"queue": "default", "chain": [{"task": "noop", "lane": "l' || (g % 10) || '"}]}')::jsonb)
                                              FROM generate_series(1, \(count)) g))
                """
            }
            let plans = try await AutoExplain.plans(
                in: db,
                [
                    enqueue(5_000),
                    "UPDATE jobs SET state = 'completed', finished_at = now() WHERE state <> 'completed'",
                    "ANALYZE jobs", enqueue(100),
                ])
            let admissions = plans.filter { AutoExplain.query(of: $0).hasPrefix("WITH lanes AS MATERIALIZED (") }
            try #require(admissions.count == 2, "the admission was not shown twice: \(plans)")
            for plan in admissions {
                #expect(plan.contains("using jobs_lane_waiting"), "\(plan)")
                #expect(!plan.contains("using jobs_state_id"), "\(plan)")
            }
        }
    }

    /// The claim updates the jobs it took by primary key, however rare the statistics say available
    /// jobs are (a table of finished jobs, analysed): through `jobs_state_id`'s `available` range
    /// instead, it walked the old entry of every job ever claimed, which a held xmin horizon keeps
    /// (docs/benchmarks.md#issue-46-the-claims-own-table-2026-12-06).
    @Test func theClaimUpdatesByPrimaryKeyWhateverTheStatistics() async throws {
        try await TestDatabase.with { db async throws in
            let enqueue = { (count: Int) in
                """
                SELECT count(*) FROM enqueue((SELECT jsonb_agg(('{"queue": "default", "chain": [{"task": "noop"}]}')::jsonb)
                                              FROM generate_series(1, \(count))))
                """
            }
            let plans = try await AutoExplain.plans(
                in: db,
                [
                    enqueue(5_000), "SELECT count(*) FROM claim_for('default', 5000, 'w', NULL)",
                    "UPDATE jobs SET state = 'completed', finished_at = now() WHERE state = 'running'", "ANALYZE jobs",
                    enqueue(10), "SELECT count(*) FROM claim_for('default', 10, 'w', NULL)",
                ])
            let claims = plans.filter { AutoExplain.query(of: $0).hasPrefix("WITH next AS (") }
            try #require(claims.count == 2, "the claim was not shown twice: \(plans)")
            for plan in claims {
                let update = try #require(plan.range(of: "Update on jobs j").map { plan[$0.lowerBound...] })
                #expect(
                    update.contains("Bitmap Index Scan on jobs_pkey") || update.contains("using jobs_pkey on jobs j "))
                #expect(!update.contains("jobs_state_id"), "\(plan)")
            }
        }
    }

    /// The plan's lines that scan an index of `table` with no index condition: the whole index.
    static func wholeIndexScans(of table: String, in plan: String) -> [String] {
        let lines = plan.split(separator: "\n").map(String.init)
        return lines.indices.filter { index in
            let line = lines[index]
            guard line.contains("Index Scan") || line.contains("Index Only Scan"), line.contains(" on \(table) ")
            else { return false }
            // The scan's own details follow it, indented further, until the next node.
            let indent = line.prefix { $0 == " " }.count
            let details = lines[(index + 1)...].prefix { $0.prefix { $0 == " " }.count > indent && !$0.contains("->") }
            return !details.contains { $0.contains("Index Cond:") }
        }.map { lines[$0] }
    }
}
