import Baton
import BatonTestSupport
import Foundation
import Testing

@testable import BatonPostgres

#if canImport(Glibc)
    import Glibc
#endif

/// Schedules across worker processes: three workers, the one that runs the schedules killed
/// outright mid-run; each slot is enqueued once, none is lost (misfire `missed:N` catches up).
@Suite(.timeLimit(.minutes(3)))
struct ScheduleProcessTests {
    @Test func eachSlotOnceAcrossWorkerProcessesWhenTheLeaderDies() async throws {
        try await TestDatabase.with { db async throws in
            let schema = db.configuration.schema
            try await db.store.saveSchedule(
                ScheduleDefinition(
                    name: "tick", cron: try CronExpression("* * * * * *"), timeZone: TimeZone(identifier: "UTC")!,
                    misfire: .runMissed(1000),
                    job: NewJob(chain: ChainDefinition(input: 1, stages: [.task("noop")]), queue: "timed")),
                source: .api, now: Date())
            func slots() async throws -> [String] {
                try await db.values(
                    """
                    SELECT idempotency_key FROM \(unescaped: schema).jobs
                    WHERE idempotency_key LIKE 'schedule:tick:%' ORDER BY idempotency_key
                    """, as: String.self)
            }
            var workers: [WorkerProcess] = []
            for _ in 0..<3 { workers.append(try await WorkerProcess(url: db.url, lease: .seconds(1))) }
            try await eventually("the first slots to be enqueued") { try await slots().count >= 3 }

            let leaderPID = try await eventually("a maintenance leader") {
                try await db.values(
                    """
                    SELECT w.pid FROM \(unescaped: schema).leaders l
                    JOIN \(unescaped: schema).workers w ON w.id = l.worker_id
                    WHERE l.name = 'maintenance' AND l.expires_at > now()
                    """, as: Int32.self
                ).first
            }
            let leader = try #require(workers.first { $0.pid == leaderPID })
            leader.signal(SIGKILL)
            _ = try await leader.waitForExit()
            let atKill = try await slots().count
            try await eventually(timeout: .seconds(60), "another worker to run the schedule on") {
                try await slots().count >= atKill + 4
            }
            for worker in workers where worker !== leader {
                worker.signal(SIGTERM)
                #expect(try await worker.waitForExit() == 0)
            }

            let keys = try await slots()
            let times = keys.compactMap { RFC3339.parse(String($0.dropFirst("schedule:tick:".count))) }
            #expect(times.count == keys.count)
            let seconds = times.map { Int64($0.timeIntervalSince1970) }
            #expect(Set(seconds).count == seconds.count, "a slot enqueued twice")
            #expect(seconds == Array(seconds[0]...seconds[seconds.count - 1]), "a slot lost: \(keys)")
        }
    }
}
