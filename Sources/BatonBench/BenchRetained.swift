import Baton
import BatonPostgres
import Foundation
import PostgresNIO

/// `baton-bench --retained N [--prune]`: the bench over a table that already holds N finished jobs
/// (a day's worth, as retention keeps them), and what the API's listings cost there.
extension Bench {
    /// The table's and its indexes' sizes, in bytes.
    struct Sizes {
        var table: Int64
        var indexes: Int64

        var json: JSONValue {
            ["table_bytes": .number(JSONNumber(table)), "index_bytes": .number(JSONNumber(indexes))]
        }
    }

    /// Writes `count` completed single-stage jobs of queue `bench`, finished one after the other
    /// over the day before yesterday's last 24 hours (so that a 24-hour retention prunes them all
    /// and none of the run's), as the worker leaves them; then vacuums and analyses the table, as
    /// autovacuum keeps a table that lives this way. Returns the highest id written.
    func retain(_ count: Int, pool: DatabasePool, progress: Progress) async throws -> Int64 {
        let schema = pool.configuration.schema
        let chunk = 500_000
        for offset in stride(from: 0, to: count, by: chunk) {
            let end = min(count, offset + chunk)
            try await pool.execute(
                PostgresQuery(
                    unsafeSQL: """
                        INSERT INTO \(schema).jobs (queue, state, chain, stage_count, stage, attempt, input, results,
                                                    worker_id, run_at, attempted_at, created_at, finished_at)
                        SELECT 'bench', 'completed', '[{"task":"bench"}]', 1, 0, 1, to_jsonb(i),
                               jsonb_build_array(jsonb_build_object('stage', 0, 'output', i, 'attempts', 1,
                                                                    'started_at', t, 'finished_at', t)),
                               'retained', t, t, t, t + interval '2 milliseconds'
                        FROM generate_series(\(offset), \(end - 1)) AS i,
                             LATERAL (SELECT now() - interval '48 hours' + i * (interval '24 hours' / \(count))) AS s(t)
                        """))
            progress.show("retained \(end)/\(count) finished jobs")
        }
        progress.show("vacuuming the table of \(count) finished jobs…")
        try await pool.execute(PostgresQuery(unsafeSQL: "VACUUM ANALYZE \(schema).jobs"))
        let rows = try await pool.read(
            PostgresQuery(unsafeSQL: "SELECT coalesce(max(id), 0) FROM \(schema).jobs"), logger: pool.logger)
        return try rows.first?.decode(Int64.self) ?? 0
    }

    func sizes(_ pool: DatabasePool) async throws -> Sizes {
        let table = "\(pool.configuration.schema).jobs"
        let rows = try await pool.read(
            PostgresQuery(unsafeSQL: "SELECT pg_table_size('\(table)'), pg_indexes_size('\(table)')"),
            logger: pool.logger)
        guard let row = rows.first else { return Sizes(table: 0, indexes: 0) }
        let (tableBytes, indexBytes) = try row.decode((Int64, Int64).self)
        return Sizes(table: tableBytes, indexes: indexBytes)
    }

    /// The p95, in ms over 20 calls each, of what the API's listings and counts run (and the
    /// dashboard's overview): the same store calls, without HTTP around them.
    func listingLatencies(_ store: Store, someJob: Int64) async throws -> [String: Double] {
        let calls: [(String, @Sendable () async throws -> Void)] = [
            ("GET /v1/jobs", { _ = try await store.jobs(JobFilter(limit: 51)) }),
            ("GET /v1/jobs?state=completed", { _ = try await store.jobs(JobFilter(states: [.completed], limit: 51)) }),
            ("GET /v1/jobs?state=running", { _ = try await store.jobs(JobFilter(states: [.running], limit: 51)) }),
            ("GET /v1/jobs?queue=bench", { _ = try await store.jobs(JobFilter(queue: "bench", limit: 51)) }),
            ("GET /v1/jobs?error=timeout", { _ = try await store.jobs(JobFilter(error: "timeout", limit: 51)) }),
            ("GET /v1/jobs/{id}", { _ = try await store.jobWithMembers(someJob) }),
            (
                "GET /v1/queues",
                { _ = try await store.queueSummaries(finishedSince: Date().addingTimeInterval(-86400)) }
            ),
            ("GET /v1/lanes", { _ = try await store.lanes() }),
            (
                "dashboard overview",
                {
                    _ = try await store.queueSummaries(finishedSince: Date().addingTimeInterval(-86400))
                    _ = try await store.laneCounts()
                }
            ),
        ]
        var latencies: [String: Double] = [:]
        for (name, call) in calls {
            var samples: [Double] = []
            for _ in 0..<20 {
                let start = ContinuousClock.now
                try await call()
                samples.append((ContinuousClock.now - start).seconds * 1000)
            }
            latencies[name] = percentile(samples, 0.95)
        }
        return latencies
    }
}

/// What `--retained` measured.
struct RetentionReport {
    var count = 0
    var listings: [String: Double] = [:]
    var afterLoad: Bench.Sizes?
    var pruned: Int?
    var pruneSeconds: Double?
    var afterPrune: Bench.Sizes?
    /// After each next day is written (the day before pruned and vacuumed).
    var days: [Bench.Sizes] = []
}
