import Baton
import BatonTestSupport
import Foundation
import Testing

@testable import BatonPostgres
@testable import BatonWorker

/// Schedules run by the maintenance leader's runner, driven here with an injected clock: every
/// `now` below is given, not read.
@Suite(.timeLimit(.minutes(2)))
struct ScheduleRunnerTests {
    static func date(_ text: String) -> Date { ISO8601DateFormatter().date(from: text)! }
    static let newYork = TimeZone(identifier: "America/New_York")!

    static func definition(
        _ name: String, _ cron: String, zone: TimeZone = TimeZone(identifier: "UTC")!, misfire: MisfirePolicy = .skip
    ) throws -> ScheduleDefinition {
        ScheduleDefinition(
            name: name, cron: try CronExpression(cron), timeZone: zone, misfire: misfire,
            job: NewJob(chain: ChainDefinition(input: ["from": "schedule"], stages: [.task("noop")]), queue: "timed"))
    }

    static func runner(_ db: TestDatabase) -> ScheduleRunner {
        ScheduleRunner(
            store: db.store,
            leadership: Leadership(store: db.store, workerID: "t", interval: .seconds(1), logger: db.logger),
            logger: db.logger)
    }

    /// The keys of the jobs a schedule enqueued, oldest first.
    static func keys(_ db: TestDatabase, _ name: String) async throws -> [String] {
        try await db.values(
            """
            SELECT idempotency_key FROM \(unescaped: db.configuration.schema).jobs
            WHERE idempotency_key LIKE \("schedule:\(name):%") ORDER BY id
            """, as: String.self)
    }

    /// Runners ticking at once (a lead changing hands mid-tick, or many workers) enqueue each slot
    /// once; and a slot's job enqueued again by a runner that missed the move is the same job.
    @Test func eachSlotIsEnqueuedOnceWhateverTheRunners() async throws {
        try await TestDatabase.with { db async throws in
            try await db.store.saveSchedule(
                try Self.definition("every5", "*/5 * * * * *", misfire: .runMissed(100)), source: .api,
                now: Self.date("2030-01-01T00:00:00Z"))
            let now = Self.date("2030-01-01T00:01:02Z")
            let enqueued = try await withThrowingTaskGroup(of: [EnqueuedJob].self) { group in
                for _ in 0..<4 { group.addTask { try await Self.runner(db).tick(now: now) } }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            let slots = (1...12).map { Self.date("2030-01-01T00:00:00Z").addingTimeInterval(Double($0 * 5)) }
            #expect(enqueued.count == 12)
            let keys = try await Self.keys(db, "every5")
            #expect(keys == slots.map { ScheduleRecord.key("every5", $0) })
            #expect(keys.first == "schedule:every5:2030-01-01T00:00:05Z")
            let schedule = try #require(try await db.store.schedule("every5"))
            #expect(schedule.nextRunAt == Self.date("2030-01-01T00:01:05Z"))
            #expect(schedule.lastRunAt == Self.date("2030-01-01T00:01:00Z"))
            #expect(schedule.lastJobID == enqueued.map(\.id).max())

            let again = try await db.store.enqueue([schedule.job(for: Self.date("2030-01-01T00:01:00Z"))])
            #expect(again[0].inserted == false && again[0].id == schedule.lastJobID)
            #expect(try await Self.runner(db).tick(now: now).isEmpty, "nothing is due twice")
        }
    }

    /// Across daylight saving time in New York: the skipped 02:30 of March 8 runs once at 03:00,
    /// and the twice-shown 01:30 of November 1 runs once, the first time.
    @Test func daylightSavingTimeTransitions() async throws {
        try await TestDatabase.with { db async throws in
            let runner = Self.runner(db)
            try await db.store.saveSchedule(
                try Self.definition("spring", "30 2 * * *", zone: Self.newYork), source: .api,
                now: Self.date("2026-03-07T12:00:00Z"))
            #expect(try await db.store.schedule("spring")?.nextRunAt == Self.date("2026-03-08T07:00:00Z"))
            #expect(try await runner.tick(now: Self.date("2026-03-08T06:59:59Z")).isEmpty)
            #expect(try await runner.tick(now: Self.date("2026-03-08T07:00:02Z")).count == 1)
            #expect(try await Self.keys(db, "spring") == ["schedule:spring:2026-03-08T07:00:00Z"])
            #expect(try await db.store.schedule("spring")?.nextRunAt == Self.date("2026-03-09T06:30:00Z"))

            try await db.store.saveSchedule(
                try Self.definition("autumn", "30 1 * * *", zone: Self.newYork), source: .api,
                now: Self.date("2026-10-31T12:00:00Z"))
            #expect(try await runner.tick(now: Self.date("2026-11-01T05:30:01Z")).count == 1)
            #expect(try await runner.tick(now: Self.date("2026-11-01T06:30:01Z")).isEmpty, "01:30 again, EST")
            #expect(try await Self.keys(db, "autumn") == ["schedule:autumn:2026-11-01T05:30:00Z"])
            #expect(try await db.store.schedule("autumn")?.nextRunAt == Self.date("2026-11-02T06:30:00Z"))
        }
    }

    /// After downtime each policy runs what it says; a paused schedule runs nothing and, resumed,
    /// goes on from its next slot.
    @Test func misfirePoliciesAndPausing() async throws {
        try await TestDatabase.with { db async throws in
            let start = Self.date("2030-01-01T00:00:00Z")
            // The 01:00 slot is five minutes late: missed, for `skip`.
            let later = start.addingTimeInterval(65 * 60)
            for (name, policy) in [("skip", MisfirePolicy.skip), ("latest", .runLatest), ("missed", .runMissed(3))] {
                try await db.store.saveSchedule(
                    try Self.definition(name, "@every 10m", misfire: policy), source: .api, now: start)
            }
            try await db.store.saveSchedule(try Self.definition("held", "@every 10m"), source: .api, now: start)
            #expect(try await db.store.setSchedulePaused("held", true, now: start))
            _ = try await Self.runner(db).tick(now: later)
            let skipped = try await Self.keys(db, "skip")
            #expect(skipped.isEmpty)
            let latest = try await Self.keys(db, "latest")
            #expect(latest == ["schedule:latest:2030-01-01T01:00:00Z"])
            let missed = try await Self.keys(db, "missed")
            #expect(missed == ["00:40", "00:50", "01:00"].map { "schedule:missed:2030-01-01T\($0):00Z" })
            let held = try await Self.keys(db, "held")
            #expect(held.isEmpty)
            for name in ["skip", "latest", "missed"] {
                #expect(try await db.store.schedule(name)?.nextRunAt == Self.date("2030-01-01T01:10:00Z"))
            }
            #expect(try await db.store.setSchedulePaused("held", false, now: later))
            #expect(try await db.store.schedule("held")?.nextRunAt == Self.date("2030-01-01T01:10:00Z"))
        }
    }

    /// The settings file's schedules are exactly what it lists: a removed entry goes, one the API
    /// made stays; editing what a schedule runs keeps its next slot.
    @Test func settingsSchedulesAreDeclarative() async throws {
        try await TestDatabase.with { db async throws in
            let now = Self.date("2030-01-01T00:00:30Z")
            try await db.store.saveSchedule(try Self.definition("mine", "@hourly"), source: .api, now: now)
            try await db.store.syncSettingsSchedules(
                [try Self.definition("a", "@hourly"), try Self.definition("b", "@daily")], now: now)
            #expect(try await db.store.schedules().map(\.name) == ["a", "b", "mine"])
            var edited = try Self.definition("a", "@hourly")
            edited.job.priority = 5
            try await db.store.syncSettingsSchedules([edited], now: now.addingTimeInterval(7200))
            let schedules = try await db.store.schedules()
            #expect(schedules.map(\.name) == ["a", "mine"])
            #expect(schedules.first?.job.priority == 5)
            #expect(schedules.first?.nextRunAt == Self.date("2030-01-01T01:00:00Z"), "kept its place")
            #expect(schedules.map(\.source) == [.settings, .api])
        }
    }
}
