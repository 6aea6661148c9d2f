import Baton
import Foundation
import Testing

@testable import BatonPostgres
@testable import BatonTestSupport

/// Unique jobs: while a job holds its rule's key, enqueueing another answers it, whatever the
/// number of enqueuers racing; the database enforces it.
@Suite(.timeLimit(.minutes(2)))
struct UniquenessTests {
    static func job(
        _ task: String = "sync", args: JSONValue = ["customer": 7], queue: String = "default", unique: Uniqueness
    ) -> NewJob {
        NewJob(chain: ChainDefinition(input: 1, stages: [.task(task, args: args)]), queue: queue, unique: unique)
    }

    static func finish(_ db: TestDatabase, _ id: Int64, as state: JobState) async throws {
        try await db.pool.execute(
            """
            UPDATE \(unescaped: db.configuration.schema).jobs
            SET state = \(unescaped: "'\(state.rawValue)'"), finished_at = now() WHERE id = \(id)
            """)
    }

    @Test func aKeyHeldByAnUnfinishedJobAnswersThatJob() async throws {
        try await TestDatabase.with { db async throws in
            let rule = Uniqueness(key: "sync-customer-7")
            let first = try await db.store.enqueue([Self.job(unique: rule)])[0]
            #expect(first.inserted)
            let again = try await db.store.enqueue([Self.job(args: ["other": true], unique: rule)])[0]
            #expect(!again.inserted && again.id == first.id)
            // Keys are per queue.
            #expect(try await db.store.enqueue([Self.job(queue: "elsewhere", unique: rule)])[0].inserted)
            // A batch with the key twice inserts one.
            let batch = try await db.store.enqueue([
                Self.job(unique: Uniqueness(key: "pair")), Self.job(unique: Uniqueness(key: "pair")),
            ])
            #expect(batch[0].inserted && !batch[1].inserted && batch[1].id == batch[0].id)
            // Once it has finished (the rule names no final state), the key is free.
            try await Self.finish(db, first.id, as: .completed)
            let next = try await db.store.enqueue([Self.job(unique: rule)])[0]
            #expect(next.inserted && next.id != first.id)
        }
    }

    @Test func withoutAKeyTheFirstTaskAndItsArgsMakeIt() async throws {
        try await TestDatabase.with { db async throws in
            let rule = Uniqueness()
            let first = try await db.store.enqueue([Self.job(args: ["customer": 7, "full": true], unique: rule)])[0]
            let same = try await db.store.enqueue([Self.job(args: ["full": true, "customer": 7], unique: rule)])[0]
            #expect(!same.inserted && same.id == first.id, "the same args in another order")
            #expect(try await db.store.enqueue([Self.job(args: ["customer": 8], unique: rule)])[0].inserted)
            #expect(
                try await db.store.enqueue([Self.job("export", args: ["customer": 7, "full": true], unique: rule)])[0]
                    .inserted)
        }
    }

    @Test func aRuleMayHoldTheKeyInFinalStatesToo() async throws {
        try await TestDatabase.with { db async throws in
            let rule = Uniqueness(key: "daily-digest", finished: [.completed])
            let first = try await db.store.enqueue([Self.job(unique: rule)])[0]
            try await Self.finish(db, first.id, as: .completed)
            let again = try await db.store.enqueue([Self.job(unique: rule)])[0]
            #expect(!again.inserted && again.id == first.id && again.state == .completed)
            // Discarded is not in the rule: a discarded job frees the key, and a retry of it waits
            // while another holds it.
            let other = Uniqueness(key: "retry-me")
            let failed = try await db.store.enqueue([Self.job(unique: other)])[0]
            try await Self.finish(db, failed.id, as: .discarded)
            let replacement = try await db.store.enqueue([Self.job(unique: other)])[0]
            #expect(replacement.inserted)
            #expect(try await db.store.retry(failed.id) == nil)
            #expect(try await db.store.uniqueKeyHolder(of: failed.id) == replacement.id)
            try await Self.finish(db, replacement.id, as: .cancelled)
            #expect(try await db.store.retry(failed.id) == .available)
        }
    }

    /// Twenty enqueuers at once, one key: one job, and every one of them is answered with it.
    @Test func racingEnqueuersGetOneJob() async throws {
        try await TestDatabase.with { db async throws in
            let ids = try await withThrowingTaskGroup(of: EnqueuedJob.self) { group in
                for _ in 0..<20 {
                    group.addTask { try await db.store.enqueue([Self.job(unique: Uniqueness(key: "race"))])[0] }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(Set(ids.map(\.id)).count == 1)
            #expect(ids.filter(\.inserted).count == 1)
        }
    }

    /// Windows are counted from the epoch: the same key within one, another in the next.
    @Test func aWindowSplitsTheKeyByTime() throws {
        let rule = Uniqueness(key: "report", window: .seconds(3600))
        let job = Self.job(unique: rule)
        let hour = Date(timeIntervalSince1970: 1_800_000_000 - 1_800_000_000.truncatingRemainder(dividingBy: 3600))
        #expect(rule.storedKey(for: job, at: hour) == rule.storedKey(for: job, at: hour + 3599))
        #expect(rule.storedKey(for: job, at: hour) != rule.storedKey(for: job, at: hour + 3600))
        #expect(Uniqueness(key: "report").storedKey(for: job, at: hour) != rule.storedKey(for: job, at: hour))
        #expect(throws: BatonError.self) { try Uniqueness(window: .zero).check(path: "unique") }
        #expect(throws: BatonError.self) { try Uniqueness(finished: [.running]).check(path: "unique") }
    }
}
