import Baton
import BatonTestSupport
import Synchronization
import Testing

@testable import BatonPostgres
@testable import BatonWorker

/// One worker of the cluster at a time holds the maintenance lead.
@Suite(.timeLimit(.minutes(3)))
struct LeadershipTests {
    /// The lead is a row: its holder renews it; another takes it once it has run out.
    @Test func theLeadIsHeldByOneWorkerAndTakenOverWhenItLapses() async throws {
        try await TestDatabase.with { db async throws in
            let store = db.store
            #expect(try await store.lead("maintenance", worker: "a", lease: .seconds(60)))
            #expect(try await !store.lead("maintenance", worker: "b", lease: .seconds(60)))
            #expect(try await store.lead("maintenance", worker: "a", lease: .seconds(60)), "renewed by its holder")
            try await db.pool.execute(
                """
                UPDATE \(unescaped: db.configuration.schema).leaders SET expires_at = now() - interval '1 second'
                WHERE name = 'maintenance'
                """)
            #expect(try await store.lead("maintenance", worker: "b", lease: .seconds(60)), "taken over once lapsed")
            #expect(try await !store.lead("maintenance", worker: "a", lease: .seconds(60)))
        }
    }

    /// Two workers' leadership loops: while one leads the other does no chores; when the leader
    /// stops, the other leads within the lead's lease, and its chores start.
    @Test func whenTheLeaderStopsAnotherLeadsAndDoesTheChores() async throws {
        try await TestDatabase.with { db async throws in
            let a = Leadership(store: db.store, workerID: "a", interval: .milliseconds(20), logger: db.logger)
            let b = Leadership(store: db.store, workerID: "b", interval: .milliseconds(20), logger: db.logger)
            let choresByB = Counter()
            let leading = Task { await a.run() }
            try await eventually("a to lead") { a.isLeading }
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await b.run() }
                group.addTask {
                    await b.repeatWhileLeading(every: .milliseconds(20), "counting") {
                        choresByB.add()
                        return nil
                    }
                }
                #expect(!b.isLeading)
                #expect(choresByB.value == 0, "no chores without the lead")
                leading.cancel()
                await leading.value
                try await eventually(timeout: .seconds(5), "b to take over once a's lead lapses") { b.isLeading }
                try await eventually("b's chores to run") { choresByB.value > 0 }
                group.cancelAll()
            }
        }
    }
}

/// A count shared with a chore.
final class Counter: Sendable {
    private let count = Mutex(0)
    func add() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}
