import Baton
import BatonPostgres
import Foundation
import LocalPostgres
import Logging
import PostgresNIO

extension Scenario {
    /// 8 and 9. A pg_auto_failover formation (a monitor, a primary, a standby, synchronous or
    /// not); `baton serve` and two workers given its URI, every node and
    /// `target_session_attrs=read-write`; mixed chains at 100 jobs/s with idempotency keys. A third
    /// of the way in, the primary's host is lost (its keeper killed, PostgreSQL crashed) and the
    /// monitor promotes the standby. No Baton process is restarted.
    ///
    /// Synchronous: nothing acknowledged is lost, and stages run twice only for jobs that were
    /// running at the crash (their lease may pass during the failover). The figures after the promotion
    /// count from when the monitor lets the new primary take writes (`wait_primary`). Asynchronous: what the
    /// standby had not received is lost, as asynchronous replication allows, and reported; no id is
    /// given to two jobs either way.
    static func failover(synchronous: Bool, quick: Bool, logger: Logger) async throws -> ScenarioResult {
        let duration: Duration = quick ? .seconds(40) : .seconds(90)
        let formation = try await LocalAutoFailover.start(synchronous: synchronous, logger: logger)
        do {
            let result = try await Rig.with(formation: formation, logger: logger) { rig in
                try await rig.startAPI()
                for index in 0..<2 { try await rig.startWorker(index, concurrency: 10) }
                let producer = Producer(base: rig.apiBase, token: rig.token)
                return try await failingOver(
                    formation, rig: rig, producer: producer, duration: duration, synchronous: synchronous)
            }
            await formation.shutdown()
            return result
        } catch {
            await formation.shutdown()
            throw error
        }
    }

    private static func failingOver(
        _ formation: LocalAutoFailover, rig: Rig, producer: Producer, duration: Duration, synchronous: Bool
    ) async throws -> ScenarioResult {
        let pids = [rig.apiPID, rig.workerPID(0), rig.workerPID(1)]
        var measured: [(String, String)] = []
        var runningAtCrash: Set<Int64> = []
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await producer.produce(rate: 100, for: duration) { Chains.mixed($0) } }
            try await Task.sleep(for: duration / 3)
            let primary = try await formation.primary() ?? 0
            let crashed = ContinuousClock.now
            try await formation.crash(node: primary)
            try await formation.waitUntilPromoted(node: 1 - primary)
            let outOfRecovery = ContinuousClock.now
            // What was running at the crash, as the promoted standby has it: with synchronous
            // replication every claim and outcome committed before the crash is there, and
            // nothing commits on it until the monitor lets it take writes. (Read before the
            // crash instead, the set missed stages claimed between the read and the kill, which
            // ran again once their lease passed in a failover slower than the lease.)
            runningAtCrash = Set(
                try await formation.psql(
                    "SELECT id FROM \(Rig.schema).jobs WHERE state = 'running'", node: 1 - primary,
                    database: rig.pool.configuration.database ?? "postgres"
                ).split(whereSeparator: \.isNewline).compactMap { Int64($0) })
            try await formation.waitUntilWritable(node: 1 - primary)
            let promoted = ContinuousClock.now
            let promotedAt = Date()
            try await eventually("the API to accept an enqueue after the promotion", timeout: .seconds(60)) {
                (producer.lastAccepted ?? crashed) > promoted
            }
            let accepted = ContinuousClock.now
            try await eventually("a stage to start after the promotion", timeout: .seconds(60)) {
                try await rig.count(
                    """
                    SELECT count(*)::int FROM \(unescaped: Rig.schema).reliability_runs
                    WHERE started_at > \(promotedAt)
                    """) > 0
            }
            let claimed = ContinuousClock.now
            measured += [
                ("promoted_after_crash", "\(format((outOfRecovery - crashed).seconds)) s"),
                ("taking_writes_after_crash", "\(format((promoted - crashed).seconds)) s"),
                ("api_accepted_after_promotion", "\(format((accepted - promoted).seconds)) s"),
                ("workers_ran_after_promotion", "\(format((claimed - promoted).seconds)) s"),
                ("stages_running_at_crash", "\(runningAtCrash.count)"),
            ]
            try await group.waitForAll()
        }
        var tally = try await Tally.count(rig, enqueued: producer.ids.count, settle: .seconds(90))
        tally.lossExpected = !synchronous
        // Stages that returned success twice: allowed only for jobs running at the crash.
        let twice = try await rig.pool.execute(
            PostgresQuery(
                unsafeSQL: "SELECT job FROM (\(Tally.succeededRuns)) r GROUP BY job, stage HAVING count(*) > 1"),
            logger: rig.logger
        ).map { try $0.decode(Int64.self) }
        let elsewhere = twice.filter { !runningAtCrash.contains($0) }
        let samePIDs = [rig.apiPID, rig.workerPID(0), rig.workerPID(1)] == pids && rig.processesAlive
        let reused = producer.reusedIDs
        measured += [
            ("replication", synchronous ? "synchronous" : "asynchronous"),
            ("acknowledged_then_lost", "\(tally.lost)"),
            ("stages_run_again", "\(twice.count)"),
            ("stages_run_again_not_running_at_crash", "\(synchronous ? "\(elsewhere.count)" : "n/a")"),
            ("ids_given_to_two_jobs", "\(reused.count)"),
            ("processes_restarted", samePIDs ? "none" : "some"),
            ("enqueues_refused_and_retried", "\(producer.refusals)"),
        ]
        var violations: [String] = []
        if !samePIDs { violations.append("the API or a worker exited") }
        if !reused.isEmpty { violations.append("ids given to two jobs: \(reused.prefix(5))") }
        if synchronous, !elsewhere.isEmpty {
            violations.append("\(elsewhere.count) stages of jobs not running at the crash ran twice")
        }
        if producer.unconfirmed > 0 { violations.append("\(producer.unconfirmed) enqueues never acknowledged") }
        return ScenarioResult(
            scenario: synchronous ? .failover : .failoverAsync, tally: tally, measured: measured,
            extraViolations: violations)
    }
}
