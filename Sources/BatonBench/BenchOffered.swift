import ArgumentParser
import Baton
import BatonPostgres
import BatonWorker
import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// `--offered-rate`: jobs offered at a steady rate for `--duration` while the worker runs, with
/// the cluster's xmin horizon held from `--hold-after` on by a session in `BEGIN; SELECT
/// txid_current();` (as a `pg_dump`, a long report or an idle-in-transaction client holds it:
/// vacuum can then remove no row version made since). Reported window by window: what was
/// offered and completed, pickup p50 and p99, the backlog, and the jobs table's dead row versions
/// and size. Issue 46 is measured so; without `--hold-after`, the same load is the baseline.
extension Bench {
    func runOffered(_ database: DatabaseConfiguration, logger: Logger, progress: Progress) async throws {
        let report = try await Self.withPool(database, logger: logger) { pool in
            try await Migrator(schema: database.schema, logger: logger).migrate(pool)
            defer { progress.clear() }
            let report = try await offer(pool: pool, logger: logger, progress: progress)
            _ = try? await pool.execute("DROP SCHEMA \(unescaped: database.schema) CASCADE")
            return report
        }
        print(printsJSON ? report.json.jsonText : report.summary)
        if report.lost > 0 { throw ExitCode(1) }
        if let keepPace,
            let slow = report.windows.first(where: { Double($0.completed) < keepPace * Double($0.offered) })
        {
            print(
                "baton bench: the window ending at \(Int(slow.endsAt)) s completed \(slow.completed) of \(slow.offered) offered"
            )
            throw ExitCode(1)
        }
    }

    private func offer(pool: DatabasePool, logger: Logger, progress: Progress) async throws -> OfferedReport {
        let baton = BatonClient(pool: pool, logger: logger)
        let ledger = Ledger(lastStage: chain - 1)
        let tasks = try await prepare(baton, recording: ledger)
        let worker = Worker(
            pool: pool, tasks: tasks,
            configuration: WorkerConfiguration(queues: ["bench": concurrency], lease: .seconds(30)), logger: logger)
        let group = ServiceGroup(services: [baton, worker], logger: logger)
        let clock = ContinuousClock()
        let tick = Duration.milliseconds(100)
        let perTick = max(1, offeredRate / 10)
        let duration = DurationFormat.parse(self.duration) ?? .seconds(60)
        let window = DurationFormat.parse(self.window) ?? .seconds(60)
        let holdAfter = holdAfter.flatMap(DurationFormat.parse)

        return try await withThrowingTaskGroup(of: Void.self) { running in
            running.addTask { try await group.run() }
            defer { running.cancelAll() }
            while !baton.listener.isListening || !worker.isListening { try await Task.sleep(for: .milliseconds(10)) }
            let start = clock.now
            let holder = Holder(configuration: pool.configuration, logger: logger)
            running.addTask {
                var next = start
                var offset = 0
                while next - start < duration {
                    let enqueued = try await baton.enqueue(makeJobs(offset..<(offset + perTick)))
                    let now = clock.now
                    ledger.committed(
                        zip(enqueued, offset...).map { job, index in (job.id, now + (dueAfter(index) ?? .zero)) })
                    offset += perTick
                    next += tick
                    try await Task.sleep(until: next)
                }
            }
            if let holdAfter {
                running.addTask {
                    try await Task.sleep(until: start + holdAfter)
                    try await holder.hold()
                }
            }
            var windows: [OfferedReport.Window] = []
            var windowStart = start
            while windowStart - start < duration {
                let end = windowStart + window
                while clock.now < end {
                    try await Task.sleep(for: .milliseconds(200))
                    progress.show(
                        "\(Int((clock.now - start).seconds)) s: offered \(ledger.offered), completed \(ledger.completed)"
                            + (holder.since != nil ? ", horizon held" : ""))
                }
                var counts = try await Self.jobsTable(pool)
                counts.held = holder.since.map { $0 < end } ?? false
                windows.append(ledger.window(windowStart..<end, start: start, table: counts))
                windowStart = end
            }
            await holder.release()
            // Every job offered finishes, however far behind the worker is.
            let drain = clock.now
            while ledger.completed < ledger.offered, clock.now - drain < .seconds(600) {
                try await Task.sleep(for: .milliseconds(200))
                progress.show("draining: completed \(ledger.completed) of \(ledger.offered)")
            }
            let drained = (clock.now - drain).seconds
            // The ledger counts a job once its last stage has run; its outcome commits with the
            // worker's next flush, a moment later (later still under load: a full test run once
            // counted 599 of 600 here and reported one lost). Counted until all have, or 30 s.
            var finished = 0
            let settle = clock.now
            repeat {
                finished = try await count(pool, "state = 'completed' AND queue = 'bench'")
                if finished >= ledger.offered { break }
                try await Task.sleep(for: .milliseconds(20))
            } while clock.now - settle < .seconds(30)
            await group.triggerGracefulShutdown()
            try await running.waitForAll()
            return OfferedReport(
                offeredRate: offeredRate, concurrency: concurrency, chain: chain, lanes: lanes,
                holdAfter: holdAfter?.seconds, windows: windows, offered: ledger.offered, finished: finished,
                drainSeconds: drained, after: try await Self.jobsTable(pool))
        }
    }

    /// The jobs table's dead row versions (as the statistics last counted them) and its size.
    static func jobsTable(_ pool: DatabasePool) async throws -> OfferedReport.Table {
        let rows = try await pool.read(
            """
            SELECT coalesce(n_dead_tup, 0)::bigint, pg_table_size(relid)::bigint, pg_indexes_size(relid)::bigint,
                   (SELECT coalesce(sum(pg_total_relation_size(i.inhrelid)), 0)::bigint FROM pg_inherits i
                    WHERE i.inhparent = to_regclass(\(pool.configuration.schema + ".ready")))
            FROM pg_stat_user_tables WHERE schemaname = \(pool.configuration.schema) AND relname = 'jobs'
            """, logger: pool.logger)
        guard let row = rows.first else {
            return OfferedReport.Table(deadRows: 0, tableBytes: 0, indexBytes: 0, readyBytes: 0)
        }
        let (dead, table, indexes, ready) = try row.decode((Int64, Int64, Int64, Int64).self)
        return OfferedReport.Table(
            deadRows: Int(dead), tableBytes: Int(table), indexBytes: Int(indexes), readyBytes: Int(ready))
    }
}

/// When each job was committed and started, and when its last stage ended.
private final class Ledger: StageRecorder {
    private struct State {
        var commits: [Int64: ContinuousClock.Instant] = [:]
        var starts: [(job: Int64, at: ContinuousClock.Instant)] = []
        var picked: Set<Int64> = []
        var ends: [ContinuousClock.Instant] = []
    }
    private let state = Mutex(State())
    private let lastStage: Int
    private let offeredCount = Atomic(0)
    private let completedCount = Atomic(0)

    init(lastStage: Int) { self.lastStage = lastStage }

    var offered: Int { offeredCount.load(ordering: .relaxed) }
    var completed: Int { completedCount.load(ordering: .relaxed) }

    /// Jobs committed, each due at its instant (when committed, or later for a delayed one): a
    /// job's pickup is counted from then.
    func committed(_ jobs: [(id: Int64, due: ContinuousClock.Instant)]) {
        state.withLock { state in for job in jobs { state.commits[job.id] = job.due } }
        offeredCount.add(jobs.count, ordering: .relaxed)
    }

    /// A job's first attempt of its first stage is its pickup; a retry is not.
    func started(job: Int64, stage: Int) {
        guard stage == 0 else { return }
        let now = ContinuousClock.now
        state.withLock { state in
            if state.picked.insert(job).inserted { state.starts.append((job, now)) }
        }
    }

    func ended(job: Int64, stage: Int) {
        guard stage == lastStage else { return }
        let now = ContinuousClock.now
        state.withLock { $0.ends.append(now) }
        completedCount.add(1, ordering: .relaxed)
    }

    /// What happened in `window`: jobs offered (committed) and completed in it, the pickups of
    /// the jobs that started in it, and the backlog at its end.
    func window(
        _ window: Range<ContinuousClock.Instant>, start: ContinuousClock.Instant, table: OfferedReport.Table
    ) -> OfferedReport.Window {
        state.withLock { state in
            let offered = state.commits.values.count(where: { window.contains($0) })
            let completed = state.ends.count(where: { window.contains($0) })
            let pickups = state.starts.compactMap { start -> Double? in
                guard window.contains(start.at), let committed = state.commits[start.job] else { return nil }
                return (start.at - committed).seconds * 1000
            }
            let committedByEnd = state.commits.values.count(where: { $0 < window.upperBound })
            let completedByEnd = state.ends.count(where: { $0 < window.upperBound })
            return OfferedReport.Window(
                endsAt: (window.upperBound - start).seconds, offered: offered, completed: completed,
                pickupP50: pickups.isEmpty ? nil : percentile(pickups, 0.5),
                pickupP99: pickups.isEmpty ? nil : percentile(pickups, 0.99),
                backlog: committedByEnd - completedByEnd, table: table)
        }
    }
}

/// A session holding the cluster's xmin horizon: a transaction with a transaction id, open.
private final class Holder: Sendable {
    private let configuration: DatabaseConfiguration
    private let logger: Logger
    private struct State {
        var session: PostgresConnection?
        var since: ContinuousClock.Instant?
        var released = false
    }
    private let state = Mutex(State())

    init(configuration: DatabaseConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
    }

    /// Since when the horizon is held (the holding transaction has its id), if it is.
    var since: ContinuousClock.Instant? { state.withLock { $0.since } }

    func hold() async throws {
        let session = try await configuration.connect(logger: logger)
        try await session.execute("BEGIN", logger: logger)
        _ = try await session.read("SELECT txid_current()", logger: logger)
        let now = ContinuousClock.now
        let kept = state.withLock { state in
            guard !state.released else { return false }
            (state.session, state.since) = (session, now)
            return true
        }
        // Released meanwhile (the load ended first): let go at once.
        if !kept { try? await session.close() }
    }

    func release() async {
        let session = state.withLock { state in
            state.released = true
            return state.session.take()
        }
        guard let session else { return }
        _ = try? await session.read("ROLLBACK", logger: logger)
        try? await session.close()
    }
}

struct OfferedReport: Sendable {
    struct Table: Sendable {
        var deadRows: Int
        var tableBytes: Int
        var indexBytes: Int
        /// `ready`, the claim's table, with its index (issue 46).
        var readyBytes: Int
        /// Whether the horizon was held during the window (from the start of the hold on).
        var held = false
    }

    struct Window: Sendable {
        var endsAt: Double
        var offered: Int
        var completed: Int
        var pickupP50: Double?
        var pickupP99: Double?
        var backlog: Int
        var table: Table
    }

    var offeredRate: Int
    var concurrency: Int
    var chain: Int
    var lanes: Int
    var holdAfter: Double?
    var windows: [Window]
    var offered: Int
    var finished: Int
    var drainSeconds: Double
    var after: Table

    var lost: Int { max(0, offered - finished) }

    var json: JSONValue {
        func number(_ value: Double?) -> JSONValue { value.map(JSONValue.measured) ?? .null }
        return [
            "offered_rate_per_s": .number(JSONNumber(offeredRate)), "concurrency": .number(JSONNumber(concurrency)),
            "chain": .number(JSONNumber(chain)), "lanes": .number(JSONNumber(lanes)),
            "hold_after_s": number(holdAfter), "offered": .number(JSONNumber(offered)),
            "finished": .number(JSONNumber(finished)), "lost": .number(JSONNumber(lost)),
            "drain_s": number(drainSeconds), "dead_rows_after": .number(JSONNumber(after.deadRows)),
            "windows": .array(
                windows.map { window in
                    [
                        "ends_at_s": number(window.endsAt), "offered": .number(JSONNumber(window.offered)),
                        "completed": .number(JSONNumber(window.completed)), "pickup_p50_ms": number(window.pickupP50),
                        "pickup_p99_ms": number(window.pickupP99), "backlog": .number(JSONNumber(window.backlog)),
                        "horizon_held": .bool(window.table.held),
                        "dead_rows": .number(JSONNumber(window.table.deadRows)),
                        "table_bytes": .number(JSONNumber(window.table.tableBytes)),
                        "index_bytes": .number(JSONNumber(window.table.indexBytes)),
                        "ready_bytes": .number(JSONNumber(window.table.readyBytes)),
                    ]
                }),
        ]
    }

    var summary: String {
        var lines = [
            "baton bench: \(offeredRate) jobs/s offered, \(chain) stage(s), concurrency \(concurrency)"
                + (lanes > 0 ? ", \(lanes) lanes" : "")
                + (holdAfter.map { ", xmin horizon held from \(Int($0)) s" } ?? "")
        ]
        func ms(_ value: Double?) -> String { value.map { String(format: "%.1f ms", $0) } ?? "-" }
        for window in windows {
            lines.append(
                String(format: "  %5.0f s", window.endsAt)
                    + "  offered \(window.offered), completed \(window.completed), pickup p50 \(ms(window.pickupP50))"
                    + " p99 \(ms(window.pickupP99)), backlog \(window.backlog), dead rows \(window.table.deadRows),"
                    + " jobs \(window.table.tableBytes >> 20) MB + indexes \(window.table.indexBytes >> 20) MB,"
                    + " ready \(window.table.readyBytes >> 10) kB"
                    + (window.table.held ? " (held)" : ""))
        }
        lines.append(
            "  offered \(offered), finished \(finished), lost \(lost); drained in "
                + String(format: "%.1f s", drainSeconds) + " after the load and the hold ended")
        return lines.joined(separator: "\n")
    }
}
