import Baton
import BatonPostgres
import Foundation
import Logging
import NIOPosix
import PostgresNIO
import Synchronization

extension Scenario {
    /// Runs `body` with a `BatonClient` (enqueue from Swift, in batches) running beside it.
    static func withClient<T: Sendable>(
        _ rig: Rig, logger: Logger, _ body: @Sendable (BatonClient) async throws -> T
    ) async throws -> T {
        let baton = BatonClient(pool: rig.pool, logger: logger)
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                try await baton.run()
                return nil
            }
            defer { group.cancelAll() }
            return try await body(baton)
        }
    }

    /// A single `record` stage as the Swift API enqueues it.
    static func recordStage(lane: String? = nil, ms: ClosedRange<Int>, failPercent: Int, attempts: Int = 50)
        -> StageSpec
    {
        .task(
            "record",
            args: [
                "min_ms": .number(ms.lowerBound), "max_ms": .number(ms.upperBound),
                "fail_percent": .number(failPercent),
            ], lane: lane, retry: .constant(.milliseconds(10), attempts: attempts))
    }

    /// Table and index sizes and dead tuples of the jobs table.
    static func jobsTable(_ rig: Rig) async throws -> String {
        let dead = try await rig.count(
            sql:
                "SELECT n_dead_tup::int FROM pg_stat_user_tables WHERE schemaname = '\(Rig.schema)' AND relname = 'jobs'"
        )
        let live = try await rig.count(
            sql:
                "SELECT n_live_tup::int FROM pg_stat_user_tables WHERE schemaname = '\(Rig.schema)' AND relname = 'jobs'"
        )
        let table = try await rig.count(sql: "SELECT (pg_table_size('\(Rig.schema).jobs') / 1024)::int")
        let ready = try await rig.count(
            sql: """
                SELECT (coalesce(sum(pg_total_relation_size(i.inhrelid)), 0) / 1024)::int FROM pg_inherits i
                WHERE i.inhparent = '\(Rig.schema).ready'::regclass
                """)
        return "\(dead) dead, \(live) live tuples; table \(table / 1024) MiB, ready \(ready) KiB"
    }

    /// 5. Background stages as fast as two workers take them (a backlog kept topped up); after a
    /// while a transaction takes an xid and idles, so vacuum cannot remove what is deleted or updated
    /// since; then it ends. Throughput and the jobs table before, during (in thirds) and after.
    static func vacuumHeld(quick: Bool, logger: Logger) async throws -> ScenarioResult {
        let phase: Duration = quick ? .seconds(20) : .seconds(60)
        let hold: Duration = quick ? .seconds(60) : .seconds(180)
        return try await Rig.with(logger: logger) { rig in
            for index in 0..<2 { try await rig.startWorker(index, concurrency: 20) }
            return try await withClient(rig, logger: logger) { baton in
                let enqueued = Shared(0)
                let done = Shared(false)
                let throughput = Throughput(rig: rig)
                var measured: [(String, String)] = []
                try await withThrowingTaskGroup(of: Void.self) { group in
                    let stop = ContinuousClock.now + phase * 3 + hold + .seconds(5)
                    group.addTask {
                        // Keep 5,000 to 7,000 jobs available: the workers never wait for work.
                        while ContinuousClock.now < stop, !done.value {
                            let available = try await rig.count(
                                sql: "SELECT count(*)::int FROM \(Rig.schema).jobs WHERE state = 'available'")
                            if available < 5000 {
                                let first = enqueued.withLock { $0 }
                                let jobs = (first..<first + 2000).map { number in
                                    NewJob(
                                        chain: ChainDefinition(
                                            input: .number(number),
                                            stages: [recordStage(ms: 0...2, failPercent: 0)]))
                                }
                                _ = try await baton.enqueue(jobs)
                                enqueued.withLock { $0 += jobs.count }
                            }
                            try await Task.sleep(for: .milliseconds(200))
                        }
                    }
                    try await Task.sleep(for: .seconds(5))
                    let before = try await throughput.measure(for: phase)
                    measured.append(("stages_per_s_before", format(before)))
                    measured.append(("jobs_table_before", try await jobsTable(rig)))
                    let holder = try await rig.database.connect(id: 99, logger: logger)
                    try await holder.execute("BEGIN", logger: logger)
                    try await holder.execute("SELECT txid_current()", logger: logger)
                    var thirds: [String] = []
                    for _ in 0..<3 { thirds.append(format(try await throughput.measure(for: hold / 3))) }
                    measured.append(("stages_per_s_while_held", thirds.joined(separator: ", ")))
                    measured.append(("jobs_table_while_held", try await jobsTable(rig)))
                    try await holder.execute("ROLLBACK", logger: logger)
                    try await holder.close()
                    // After: 5-second windows until throughput is back to 90 % of before.
                    let released = ContinuousClock.now
                    var after: [Double] = []
                    var recovered: Duration?
                    while recovered == nil, ContinuousClock.now - released < phase * 2 {
                        after.append(try await throughput.measure(for: .seconds(5)))
                        if after.last! >= before * 0.9 { recovered = ContinuousClock.now - released }
                    }
                    measured.append(
                        ("stages_per_s_after_5s_windows", after.map { format($0, 0) }.joined(separator: ", ")))
                    measured.append(
                        (
                            "recovered_to_90_percent",
                            recovered.map { "\(format($0.seconds)) s after the transaction ended" }
                                ?? "not within \(phase * 2)"
                        ))
                    measured.append(("jobs_table_after", try await jobsTable(rig)))
                    done.withLock { $0 = true }
                    try await group.waitForAll()
                }
                let tally = try await Tally.count(rig, enqueued: enqueued.withLock { $0 }, settle: .seconds(120))
                return ScenarioResult(scenario: .vacuumHeld, tally: tally, measured: measured)
            }
        }
    }

    /// 6. Two workers can do about 200 stages/s (10 slots, 50 ms stages); producers offer 300 jobs/s
    /// (half at priority 0, half at 5) for a while, then 100/s. The backlog grows, then drains;
    /// memory stays flat; priority 0 is picked up first.
    static func overload(quick: Bool, logger: Logger) async throws -> ScenarioResult {
        let over: Duration = quick ? .seconds(40) : .seconds(120)
        let normal: Duration = quick ? .seconds(30) : .seconds(90)
        return try await Rig.with(logger: logger) { rig in
            try await rig.startAPI()
            for index in 0..<2 { try await rig.startWorker(index, concurrency: 5) }
            let producer = Producer(base: rig.apiBase, token: rig.token)
            let startRSS = rig.residentMiB()
            let peakRSS = Shared<[String: Double]>([:])
            let backlog = Shared<(peak: Int, drainedAt: ContinuousClock.Instant?)>((0, nil))
            @Sendable func job(_ number: Int) -> JSONValue {
                [
                    "priority": .number(number % 2 == 0 ? 0 : 5), "input": .number(number),
                    "stages": [Chains.record(ms: 40...60, failPercent: 0)],
                ]
            }
            let overloadStart = Date()
            /// When the overload ended, by the wall clock (for the database's times) and this one.
            let overloadEnd = Shared<(date: Date, instant: ContinuousClock.Instant)?>(nil)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    await producer.produce(rate: 300, for: over, job: job)
                    overloadEnd.withLock { $0 = (Date(), .now) }
                    await producer.produce(rate: 100, for: normal, job: job)
                }
                group.addTask {
                    // Samples once a second until the backlog has drained after the overload.
                    let giveUp = ContinuousClock.now + over + normal + .seconds(300)
                    while true {
                        try await Task.sleep(for: .seconds(1))
                        let rss = rig.residentMiB()
                        peakRSS.withLock { peak in peak.merge(rss) { max($0, $1) } }
                        let available = try await rig.count(
                            sql: "SELECT count(*)::int FROM \(Rig.schema).jobs WHERE state = 'available'")
                        let overloadEnded = overloadEnd.withLock { $0 != nil }
                        let done = backlog.withLock { backlog in
                            backlog.peak = max(backlog.peak, available)
                            if overloadEnded, available < 20, backlog.drainedAt == nil { backlog.drainedAt = .now }
                            return backlog.drainedAt != nil
                        }
                        if done || ContinuousClock.now > giveUp { return }
                    }
                }
                try await group.waitForAll()
            }
            let tally = try await Tally.count(rig, enqueued: producer.ids.count, settle: .seconds(300))
            guard let end = overloadEnd.withLock({ $0 }) else { throw ReliabilityError("the overload never ended") }
            func wait(_ priority: Int) async throws -> Double {
                try await rig.value(
                    """
                    SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY s) FROM (
                        SELECT extract(epoch FROM min(r.started_at) - j.created_at)::float8 AS s
                        FROM \(unescaped: Rig.schema).jobs j JOIN \(unescaped: Rig.schema).reliability_runs r ON r.job = j.id
                        WHERE j.priority = \(priority) AND j.created_at BETWEEN \(overloadStart) AND \(end.date)
                        GROUP BY j.id, j.created_at) w
                    """)
            }
            let (high, low) = (try await wait(0), try await wait(5))
            let drained = backlog.withLock { $0 }
            let rssLine = { (sizes: [String: Double]) in
                sizes.sorted { $0.key < $1.key }.map { "\($0.key) \(format($0.value, 0))" }.joined(separator: ", ")
            }
            return ScenarioResult(
                scenario: .overload, tally: tally,
                measured: [
                    ("peak_backlog", "\(drained.peak) jobs available"),
                    (
                        "backlog_drained",
                        drained.drainedAt.map { "\(format(($0 - end.instant).seconds)) s after the overload" }
                            ?? "not within the run"
                    ),
                    ("rss_mib_at_start", rssLine(startRSS)), ("rss_mib_peak", rssLine(peakRSS.withLock { $0 })),
                    ("rss_mib_at_end", rssLine(rig.residentMiB())),
                    ("pickup_wait_p50_priority_0", "\(format(high, 2)) s"),
                    ("pickup_wait_p50_priority_5", "\(format(low, 2)) s"),
                ],
                extraViolations: high > low ? ["priority 0 waited longer than priority 5"] : [])
        }
    }

    /// 7. Ordered single-stage jobs spread over many lanes, 5 % of runs failing (and retried), run
    /// by 8 worker processes: no two runs of a lane overlap, and each lane's jobs start in the
    /// order they entered it.
    static func laneSoak(quick: Bool, logger: Logger) async throws -> ScenarioResult {
        let (jobs, lanes, workers) = quick ? (20_000, 100, 4) : (200_000, 1000, 8)
        return try await Rig.with(logger: logger) { rig in
            try await withClient(rig, logger: logger) { baton in
                for offset in stride(from: 0, to: jobs, by: 1000) {
                    _ = try await baton.enqueue(
                        (offset..<min(jobs, offset + 1000)).map { number in
                            NewJob(
                                chain: ChainDefinition(
                                    input: .number(number),
                                    stages: [recordStage(lane: "lane-\(number % lanes)", ms: 0...2, failPercent: 5)]))
                        })
                }
                let start = ContinuousClock.now
                for index in 0..<workers { try await rig.startWorker(index, concurrency: 8) }
                let tally = try await Tally.count(rig, enqueued: jobs, settle: .seconds(quick ? 600 : 3600))
                let seconds = (ContinuousClock.now - start).seconds
                let outOfOrder = try await rig.count(
                    sql: """
                        WITH firsts AS (
                            SELECT job, lane, min(started_at) AS first FROM \(Rig.schema).reliability_runs
                            WHERE lane IS NOT NULL GROUP BY job, lane),
                        ranked AS (
                            SELECT row_number() OVER (PARTITION BY f.lane ORDER BY f.first) AS by_start,
                                   row_number() OVER (PARTITION BY f.lane ORDER BY j.lane_ready_at, j.id) AS by_entry
                            FROM firsts f JOIN \(Rig.schema).jobs j ON j.id = f.job)
                        SELECT count(*)::int FROM ranked WHERE by_start <> by_entry
                        """)
                let failedRuns = try await rig.count(
                    sql: "SELECT count(*)::int FROM \(Rig.schema).reliability_runs WHERE failed")
                return ScenarioResult(
                    scenario: .laneSoak, tally: tally,
                    measured: [
                        ("lanes", "\(lanes)"), ("workers", "\(workers)"), ("runs_failed_and_retried", "\(failedRuns)"),
                        ("jobs_started_out_of_lane_order", "\(outOfOrder)"),
                        ("stages_per_s", format(Double(jobs) / seconds)),
                    ],
                    extraViolations: outOfOrder > 0 ? ["\(outOfOrder) jobs started out of their lane's order"] : [])
            }
        }
    }
}
