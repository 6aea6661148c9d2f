import Baton
import BatonPostgres
import PostgresNIO

/// What PostgreSQL wrote to its write-ahead log while the bench's jobs were enqueued and run:
/// replicas, backups and disks pay for every byte. The log is the whole cluster's (a private
/// cluster, the bench's default, holds Baton's alone). Where `pg_walinspect` can be created
/// (PostgreSQL 15's contrib; a superuser), its records too, by kind: row versions written
/// (`Heap/INSERT`, `Heap/UPDATE`, `Heap/HOT_UPDATE`), index entries (`Btree/INSERT_LEAF`), row
/// locks (`Heap/LOCK`: a claim's, and an update's whose new version lands on another page), full
/// page images after a checkpoint (the `fpi_bytes` of each kind).
struct WALUse {
    /// One kind of record, per job.
    struct Kind {
        var name: String
        var records: Double
        var bytes: Double
        var fullPageBytes: Double
    }

    var bytesPerJob: Double
    /// The kinds that wrote the most, largest first (empty without `pg_walinspect`).
    var kinds: [Kind]

    /// The log's position now.
    static func position(_ pool: DatabasePool) async -> String? {
        try? await pool.read("SELECT pg_current_wal_lsn()::text", logger: pool.logger).first?.decode(String.self)
    }

    /// The log written from `start` to `end`, per job.
    static func between(_ start: String, _ end: String, jobs: Int, pool: DatabasePool) async -> WALUse? {
        let perJob = Double(max(jobs, 1))
        guard
            let bytes = try? await pool.read(
                "SELECT pg_wal_lsn_diff(\(end)::pg_lsn, \(start)::pg_lsn)::float8", logger: pool.logger
            ).first?.decode(Double.self)
        else { return nil }
        var kinds: [Kind] = []
        if (try? await pool.execute("CREATE EXTENSION IF NOT EXISTS pg_walinspect")) != nil,
            let rows = try? await pool.read(
                """
                SELECT "resource_manager/record_type", count::float8, combined_size::float8, fpi_size::float8
                FROM pg_get_wal_stats(\(start)::pg_lsn, \(end)::pg_lsn, true)
                WHERE count > 0 ORDER BY combined_size DESC LIMIT 8
                """, logger: pool.logger)
        {
            for row in rows {
                guard let (name, records, size, pages) = try? row.decode((String, Double, Double, Double).self)
                else { continue }
                kinds.append(
                    Kind(name: name, records: records / perJob, bytes: size / perJob, fullPageBytes: pages / perJob))
            }
        }
        return WALUse(bytesPerJob: bytes / perJob, kinds: kinds)
    }

    var json: JSONValue {
        let number = JSONValue.measured
        return [
            "bytes_per_job": number(bytesPerJob),
            "records_per_job": .array(
                kinds.map { kind in
                    [
                        "kind": .string(kind.name), "records": number(kind.records), "bytes": number(kind.bytes),
                        "full_page_bytes": number(kind.fullPageBytes),
                    ]
                }),
        ]
    }

    /// `2269 bytes per job: Heap/UPDATE 917 (1.91 records), Btree/INSERT_LEAF 578 (7.69), …`
    var summary: String {
        let kinds = self.kinds.map { kind in
            "\(kind.name) \(Int(kind.bytes.rounded())) (\(String(format: "%.2f", kind.records)))"
        }
        return "\(Int(bytesPerJob.rounded())) bytes per job"
            + (kinds.isEmpty ? "" : ": " + kinds.joined(separator: ", "))
    }
}
