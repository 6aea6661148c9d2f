import Baton
import Foundation

/// A schedule to save: when it fires and what it enqueues.
public struct ScheduleDefinition: Sendable {
    public var name: String
    public var cron: CronExpression
    public var timeZone: TimeZone
    public var misfire: MisfirePolicy
    public var paused: Bool
    /// The job each slot enqueues. Its `runAt` and `idempotencyKey` are the schedule's: the slot's
    /// job runs at once, keyed `schedule:NAME:SLOT`.
    public var job: NewJob
    /// The job as it was given, to be shown back (the JSON of `POST /v1/jobs`), if it came so.
    public var request: JSONValue?

    public init(
        name: String, cron: CronExpression, timeZone: TimeZone = TimeZone(identifier: "UTC")!,
        misfire: MisfirePolicy = .skip, paused: Bool = false, job: NewJob, request: JSONValue? = nil
    ) {
        self.name = name
        self.cron = cron
        self.timeZone = timeZone
        self.misfire = misfire
        self.paused = paused
        self.job = job
        self.request = request
    }
}

/// A schedule as stored.
public struct ScheduleRecord: Sendable {
    /// Who owns a schedule: the settings file (what it lists is what runs) or the API.
    public typealias Source = SettingSource

    public var name: String
    public var cron: CronExpression
    public var timeZone: TimeZone
    public var misfire: MisfirePolicy
    public var paused: Bool
    public var source: Source
    public var request: JSONValue?
    /// What each slot enqueues (its key and run time aside).
    public var job: NewJob
    /// The next slot; nil when the expression never fires again.
    public var nextRunAt: Date?
    /// The last slot enqueued (or run by hand), and its job.
    public var lastRunAt: Date?
    public var lastJobID: Int64?
    public var createdAt: Date
    public var updatedAt: Date

    /// The next `count` slots from `nextRunAt` on.
    public func upcoming(_ count: Int) -> [Date] {
        var slots: [Date] = []
        var slot = nextRunAt
        while let current = slot, slots.count < count {
            slots.append(current)
            slot = cron.next(after: current, in: timeZone)
        }
        return slots
    }

    /// The job of `slot`.
    func job(for slot: Date) -> NewJob {
        var job = job
        job.runAt = nil
        job.idempotencyKey = Self.key(name, slot)
        return job
    }

    /// The idempotency key of a slot's job (`schedule:nightly:2026-11-25T02:00:00Z`; slots are whole
    /// seconds): the database admits one job per key.
    public static func key(_ name: String, _ slot: Date) -> String {
        "schedule:\(name):\(slot.formatted(Date.ISO8601FormatStyle()))"
    }
}
