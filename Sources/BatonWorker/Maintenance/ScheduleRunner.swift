import Baton
import BatonPostgres
import Foundation
import Logging
import ServiceLifecycle

/// Enqueues the jobs of due schedule slots, every second, while this worker holds the
/// maintenance lead. The lead only saves work: each slot's job is keyed by schedule and slot, and
/// a schedule moves on in the same transaction as its enqueue, so runners that overlap (a lead
/// changing hands mid-tick) still enqueue each slot once.
struct ScheduleRunner: Service {
    let store: Store
    let leadership: Leadership
    let logger: Logger
    var period: Duration = .seconds(1)

    func run() async {
        await leadership.repeatWhileLeading(every: period, "running schedules") {
            _ = try await tick(now: Date())
            return nil
        }
    }

    /// Runs every schedule due at `now` by its misfire policy; returns the jobs enqueued.
    func tick(now: Date) async throws -> [EnqueuedJob] {
        var enqueued: [EnqueuedJob] = []
        for schedule in try await store.dueSchedules(now: now) {
            guard let next = schedule.nextRunAt else { continue }
            let (slots, following) = schedule.misfire.due(schedule.cron, in: schedule.timeZone, next: next, now: now)
            let jobs = try await store.runSchedule(schedule, slots: slots, next: following)
            enqueued += jobs
            let missed = slots.isEmpty ? "skipped missed slots" : "enqueued"
            logger.debug(
                "schedule \(missed)",
                metadata: [
                    "schedule": "\(schedule.name)", "slots": "\(slots.map(RFC3339.format))",
                    "jobs": "\(jobs.map(\.id))", "next": "\(following.map(RFC3339.format) ?? "none")",
                ])
        }
        return enqueued
    }
}
