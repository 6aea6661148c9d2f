import Baton
import BatonPostgres
import Foundation
import Logging
import NIOPosix
import PostgresNIO
import Synchronization

extension Scenario {
    /// The usual rig: the API and two workers (10 stages at once each, lease 5 s).
    static func withWorkers<T: Sendable>(
        settings: [String: String] = [:], logger: Logger, _ body: @Sendable (Rig, Producer) async throws -> T
    ) async throws -> T {
        try await Rig.with(settings: settings, logger: logger) { rig in
            try await rig.startAPI()
            for index in 0..<2 { try await rig.startWorker(index, concurrency: 10) }
            return try await body(rig, Producer(base: rig.apiBase, token: rig.token))
        }
    }

    /// 1. Mixed chains at 100 jobs/s; every interval one worker is SIGKILLed and started again.
    /// Recovery: from the kill until every stage the dead worker held has been done elsewhere (its
    /// lease, 5 s, has to run out first).
    static func workerCrash(quick: Bool, logger: Logger) async throws -> ScenarioResult {
        let duration: Duration = quick ? .seconds(45) : .seconds(120)
        let interval: Duration = quick ? .seconds(15) : .seconds(20)
        return try await withWorkers(logger: logger) { rig, producer in
            let recoveries = Shared<[Double]>([])
            let held = Shared<Int>(0)
            let kills = Shared(0)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await producer.produce(rate: 100, for: duration) { Chains.mixed($0) } }
                var elapsed = Duration.zero
                var victim = 0
                while elapsed + interval <= duration {
                    try await Task.sleep(for: interval)
                    elapsed += interval
                    let stages = try await rig.runningStages(of: rig.workerID(victim) ?? "")
                    held.withLock { $0 += stages.count }
                    let killed = ContinuousClock.now
                    try await rig.kill(worker: victim)
                    try await rig.startWorker(victim, concurrency: 10)
                    // Only a kill that caught stages running has anything to recover.
                    if !stages.isEmpty {
                        group.addTask {
                            try await eventually(
                                "the killed worker's stages to be done elsewhere", timeout: .seconds(120)
                            ) {
                                try await rig.unfinished(stages) == 0
                            }
                            recoveries.withLock { $0.append((ContinuousClock.now - killed).seconds) }
                        }
                    }
                    kills.withLock { $0 += 1 }
                    victim = 1 - victim
                }
                try await group.waitForAll()
            }
            let tally = try await Tally.count(rig, enqueued: producer.ids.count, settle: .seconds(90))
            return ScenarioResult(
                scenario: .workerCrash, tally: tally,
                measured: [
                    ("kills", "\(kills.value)"), ("stages_held_when_killed", "\(held.withLock { $0 })"),
                    ("recovery_after_kill", spread(recoveries.withLock { $0 })),
                    ("enqueues_unconfirmed", "\(producer.unconfirmed)"),
                ],
                extraViolations: producer.unconfirmed > 0 ? ["\(producer.unconfirmed) enqueues never acknowledged"] : []
            )
        }
    }

    /// 2. Mixed chains at 100 jobs/s; PostgreSQL restarted with a fast shutdown, later with an
    /// immediate one (a crash: no checkpoint, recovery from the WAL). The API and the workers keep
    /// running. Recovery: from PostgreSQL taking connections again to the first stage completed, and
    /// to the first enqueue the API accepted.
    static func databaseRestart(quick: Bool, logger: Logger) async throws -> ScenarioResult {
        let duration: Duration = quick ? .seconds(40) : .seconds(90)
        return try await withWorkers(logger: logger) { rig, producer in
            var measured: [(String, String)] = []
            let pids = [rig.apiPID, rig.workerPID(0), rig.workerPID(1)]
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await producer.produce(rate: 100, for: duration) { Chains.mixed($0) } }
                let start = ContinuousClock.now
                for (mode, at) in [("fast", duration / 4), ("immediate", duration * 5 / 8)] {
                    try await Task.sleep(until: start + at)
                    let began = ContinuousClock.now
                    try await rig.postgres.restart(mode: mode)
                    let back = ContinuousClock.now
                    let backAt = Date()
                    try await eventually("a stage to complete after the restart", timeout: .seconds(120)) {
                        try await rig.count(
                            """
                            SELECT count(*)::int FROM \(unescaped: Rig.schema).reliability_runs
                            WHERE NOT failed AND ended_at > \(backAt)
                            """) > 0
                    }
                    let worked = ContinuousClock.now
                    try await eventually("the API to accept an enqueue after the restart", timeout: .seconds(120)) {
                        (producer.lastAccepted ?? back) > back
                    }
                    let accepted = ContinuousClock.now
                    measured += [
                        ("\(mode)_restart_took", "\(format((back - began).seconds)) s"),
                        ("\(mode)_work_resumed_after", "\(format((worked - back).seconds)) s"),
                        ("\(mode)_api_accepted_after", "\(format((accepted - back).seconds)) s"),
                    ]
                }
                try await group.waitForAll()
            }
            let tally = try await Tally.count(rig, enqueued: producer.ids.count, settle: .seconds(90))
            let samePIDs = [rig.apiPID, rig.workerPID(0), rig.workerPID(1)] == pids && rig.processesAlive
            measured += [
                ("processes_restarted", samePIDs ? "none" : "some"),
                ("enqueues_refused_and_retried", "\(producer.refusals)"),
            ]
            var violations = samePIDs ? [] : ["the API or a worker exited"]
            if producer.unconfirmed > 0 { violations.append("\(producer.unconfirmed) enqueues never acknowledged") }
            return ScenarioResult(
                scenario: .databaseRestart, tally: tally, measured: measured, extraViolations: violations)
        }
    }

    /// 3. Mixed chains at 100 jobs/s; after a quiet stretch, every client connection to PostgreSQL
    /// (the API's, the workers', the listeners') is terminated four times a second.
    static func connectionsKilled(quick: Bool, logger: Logger) async throws -> ScenarioResult {
        let quiet: Duration = quick ? .seconds(10) : .seconds(15)
        let killing: Duration = quick ? .seconds(30) : .seconds(60)
        return try await withWorkers(logger: logger) { rig, producer in
            let throughput = Throughput(rig: rig)
            var baseline = 0.0
            var during = 0.0
            let killed = Shared(0)
            let start = Date()
            let end = Shared(Date())
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await producer.produce(rate: 100, for: quiet + killing) { Chains.mixed($0) } }
                try await Task.sleep(for: .seconds(3))
                baseline = try await throughput.measure(for: quiet - .seconds(3))
                group.addTask {
                    let stop = ContinuousClock.now + killing
                    while ContinuousClock.now < stop {
                        let count =
                            (try? await rig.count(
                                """
                                SELECT count(pg_terminate_backend(pid))::int FROM pg_stat_activity
                                WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()
                                """)) ?? 0
                        killed.withLock { $0 += count }
                        try await Task.sleep(for: .milliseconds(250))
                    }
                    end.withLock { $0 = Date() }
                }
                during = try await throughput.measure(for: killing)
                try await group.waitForAll()
            }
            let longestGap = try await rig.value(
                """
                SELECT extract(epoch FROM max(gap))::float8 FROM (
                    SELECT ended_at - lag(ended_at) OVER (ORDER BY ended_at) AS gap
                    FROM \(unescaped: Rig.schema).reliability_runs
                    WHERE NOT failed AND ended_at BETWEEN \(start) AND \(end.withLock { $0 })) g
                """)
            let tally = try await Tally.count(rig, enqueued: producer.ids.count, settle: .seconds(90))
            return ScenarioResult(
                scenario: .connectionsKilled, tally: tally,
                measured: [
                    ("connections_terminated", "\(killed.withLock { $0 })"),
                    ("stages_per_s_before", format(baseline)), ("stages_per_s_while_killing", format(during)),
                    ("longest_gap_between_completions", "\(format(longestGap, 2)) s"),
                    ("enqueues_refused_and_retried", "\(producer.refusals)"),
                ],
                extraViolations: producer.unconfirmed > 0 ? ["\(producer.unconfirmed) enqueues never acknowledged"] : []
            )
        }
    }

    /// 4. Mixed chains at 150 jobs/s; then another client opens 300 connections and leaves them
    /// idle (max_connections raised to 400 for it). Pickup latency and throughput, before and during.
    static func poolPressure(quick: Bool, logger: Logger) async throws -> ScenarioResult {
        let phase: Duration = quick ? .seconds(15) : .seconds(40)
        return try await withWorkers(settings: ["max_connections": "400"], logger: logger) { rig, producer in
            let throughput = Throughput(rig: rig)
            var measured: [(String, String)] = []
            try await withThrowingTaskGroup(of: Void.self) { group in
                // Produces until both phases are measured (opening the connections takes a while).
                group.addTask { await producer.produce(rate: 150, for: phase * 4) { Chains.mixed($0) } }
                try await Task.sleep(for: .seconds(2))
                let before = Date()
                let baseline = try await throughput.measure(for: phase)
                let pickupBefore = try await rig.pickup(from: before, to: Date())
                var idle: [PostgresConnection] = []
                for index in 0..<300 {
                    idle.append(try await rig.database.connect(id: 10_000 + index, logger: logger))
                }
                let held = try await rig.count(sql: "SELECT count(*)::int FROM pg_stat_activity WHERE state = 'idle'")
                let during = Date()
                let pressured = try await throughput.measure(for: phase)
                let pickupDuring = try await rig.pickup(from: during, to: Date())
                for connection in idle { try? await connection.close() }
                measured = [
                    ("idle_connections_held", "\(held)"),
                    ("stages_per_s_before", format(baseline)), ("stages_per_s_under_pressure", format(pressured)),
                    (
                        "pickup_before",
                        "p50 \(format(pickupBefore.p50 * 1000)) ms, p99 \(format(pickupBefore.p99 * 1000)) ms"
                    ),
                    (
                        "pickup_under_pressure",
                        "p50 \(format(pickupDuring.p50 * 1000)) ms, p99 \(format(pickupDuring.p99 * 1000)) ms"
                    ),
                ]
                producer.stop()
                try await group.waitForAll()
            }
            let tally = try await Tally.count(rig, enqueued: producer.ids.count, settle: .seconds(90))
            return ScenarioResult(scenario: .poolPressure, tally: tally, measured: measured)
        }
    }
}
