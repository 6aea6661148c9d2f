import Baton
import BatonTestSupport
import Foundation
import Synchronization
import Testing

@testable import BatonPostgres
@testable import BatonWorker

/// Scheduled and retryable jobs become available when due, and their queues hear of it.
@Suite(.timeLimit(.minutes(3)))
struct SchedulerTests {
    @Test func dueJobsBecomeAvailableAndTheirQueuesAreWoken() async throws {
        try await TestDatabase.with { db async throws in
            let later = Date().addingTimeInterval(3600)
            let jobs = try await db.store.enqueue(
                ["due", "later"].map {
                    NewJob(chain: ChainDefinition(input: 1, stages: [.task("noop")]), queue: $0, runAt: later)
                })
            try await db.pool.execute(
                """
                UPDATE \(unescaped: db.configuration.schema).jobs SET run_at = now() - interval '1 second'
                WHERE id = \(jobs[0].id)
                """)
            let woken = Mutex<[String]>([])
            let scheduler = Scheduler(
                store: db.store,
                leadership: Leadership(store: db.store, workerID: "s", interval: .milliseconds(20), logger: db.logger),
                interval: .milliseconds(20), wake: { queues in woken.withLock { $0 += queues } }, finished: { _ in })
            _ = try await scheduler.promoteDue(within: Scheduler.dueWindow)
            #expect(try await db.store.job(jobs[0].id)?.state == .available)
            #expect(try await db.store.job(jobs[1].id)?.state == .scheduled)
            #expect(woken.withLock { $0 } == ["due"])
        }
    }

    /// A promotion looks a few seconds back (under a held xmin horizon, a scan from the start of
    /// `jobs_due` steps over every job promoted since); a job whose time passed long before its
    /// enqueue committed is left to the sweep of them all. Each says when the next job is due.
    @Test func aJobLongOverdueWaitsForTheSweepAndTheNextDueTimeIsSaid() async throws {
        try await TestDatabase.with { db async throws in
            let jobs = try await db.store.enqueue(
                [3600, 7200].map {
                    NewJob(
                        chain: ChainDefinition(input: 1, stages: [.task("noop")]), runAt: Date().addingTimeInterval($0))
                })
            let none = try await db.store.promoteDue(limit: 10, within: nil)
            #expect(none.promoted == 0 && none.queues.isEmpty)
            let next = try #require(none.nextDue)
            #expect(next > .seconds(3500) && next <= .seconds(3600), "\(next)")

            try await db.pool.execute(
                """
                UPDATE \(unescaped: db.configuration.schema).jobs SET run_at = now() - interval '1 minute'
                WHERE id = \(jobs[0].id)
                """)
            let recent = try await db.store.promoteDue(limit: 10, within: Scheduler.dueWindow)
            #expect(recent.promoted == 0)
            #expect(try await db.store.job(jobs[0].id)?.state == .scheduled)
            let sweep = try await db.store.promoteDue(limit: 10, within: nil)
            #expect(sweep.promoted == 1 && sweep.queues == ["default"])
            #expect(try await db.store.job(jobs[0].id)?.state == .available)
            #expect(sweep.nextDue.map { $0 > .seconds(7100) } == true, "\(String(describing: sweep.nextDue))")
        }
    }

    /// The scheduler wakes when the next job is due, not at its next poll: with an interval of a
    /// minute, a job due in a second is available moments after.
    @Test func theSchedulerWakesWhenTheNextJobIsDue() async throws {
        try await TestDatabase.with { db async throws in
            let due = Date().addingTimeInterval(1)
            let job = try await db.store.enqueue(
                [NewJob(chain: ChainDefinition(input: 1, stages: [.task("noop")]), runAt: due)])[0]
            let leadership = Leadership(
                store: db.store, workerID: "s", interval: .milliseconds(20), logger: db.logger)
            let scheduler = Scheduler(
                store: db.store, leadership: leadership, interval: .seconds(60), wake: { _ in }, finished: { _ in })
            try await withThrowingDiscardingTaskGroup { group in
                group.addTask { await leadership.run() }
                group.addTask { await scheduler.run() }
                try await eventually(timeout: .seconds(20), "the job to be available") {
                    try await db.store.job(job.id)?.state == .available
                }
                #expect(
                    Date().timeIntervalSince(due) < 10, "promoted \(Date().timeIntervalSince(due)) s after its time")
                group.cancelAll()
            }
        }
    }
}
