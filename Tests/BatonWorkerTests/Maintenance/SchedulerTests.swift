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
            try await scheduler.promoteDue()
            #expect(try await db.store.job(jobs[0].id)?.state == .available)
            #expect(try await db.store.job(jobs[1].id)?.state == .scheduled)
            #expect(woken.withLock { $0 } == ["due"])
        }
    }
}
