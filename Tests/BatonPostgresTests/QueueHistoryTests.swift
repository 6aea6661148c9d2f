import Baton
import BatonPostgres
import BatonTestSupport
import Foundation
import Testing

/// The per-minute queue history (`queue_minutes`) and the overview's counts, in the store.
@Suite(.timeLimit(.minutes(2)))
struct QueueHistoryTests {
    static func minute(_ queue: String, _ date: Date, completed: Int = 0, discarded: Int = 0, waits: [Int: Int] = [:])
        -> Store.HistoryMinute
    {
        var minute = Store.HistoryMinute(queue: queue, minute: date)
        minute.completed = completed
        minute.discarded = discarded
        for (bucket, count) in waits { minute.waits[bucket] = count }
        return minute
    }

    /// Writes add up (several workers write the same minutes), and reads sum minutes into bins.
    @Test func writesAddUpAndReadsSumIntoBins() async throws {
        try await TestDatabase.with { db async throws in
            let now = Date()
            let start = Date(timeIntervalSince1970: (now.timeIntervalSince1970 / 3600).rounded(.down) * 3600 - 3600)
            let first = start.addingTimeInterval(60)
            try await db.store.recordHistory(
                [Self.minute("mail", first, completed: 3, waits: [0: 2, 5: 1])])
            try await db.store.recordHistory(
                [Self.minute("mail", first, completed: 2, discarded: 1, waits: [5: 1])])
            try await db.store.recordHistory(
                [
                    Self.minute("mail", first, completed: 10, waits: [14: 4]),
                    Self.minute("mail", start.addingTimeInterval(120), completed: 1),
                    Self.minute("pdf", first, discarded: 2),
                ])

            let minutes = try await db.store.history(since: start, bin: .seconds(60))
            let mail = try #require(minutes.first { $0.queue == "mail" && $0.minute == first })
            #expect(mail.completed == 15)
            #expect(mail.discarded == 1)
            #expect(mail.waits[0] == 2 && mail.waits[5] == 2 && mail.waits[14] == 4)
            #expect(minutes.map(\.queue) == ["mail", "pdf", "mail"], "oldest first, then by queue")

            let hours = try await db.store.history(since: start, bin: .seconds(3600))
            #expect(hours.map(\.completed) == [16, 0])
            #expect(hours.first?.wait(percentile: 0.5) == Store.waitBuckets[5].bound)
            #expect(hours.first?.wait(percentile: 0.95) == 3600, "past the last bound")
        }
    }

    /// Workers writing the same minutes at once, each listing them in its own order, neither
    /// deadlock nor lose a count.
    @Test func concurrentWritersAddUp() async throws {
        try await TestDatabase.with { db async throws in
            let start = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 / 60).rounded(.down) * 60 - 600)
            let keys = (0..<5).flatMap { m in ["a", "b", "c"].map { ($0, start.addingTimeInterval(Double(m) * 60)) } }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<8 {
                    let order = writer.isMultiple(of: 2) ? keys : keys.reversed()
                    group.addTask {
                        for _ in 0..<5 {
                            try await db.store.recordHistory(order.map { Self.minute($0.0, $0.1, completed: 1) })
                        }
                    }
                }
                try await group.waitForAll()
            }
            let minutes = try await db.store.history(since: start, bin: .seconds(60))
            #expect(minutes.count == keys.count)
            #expect(minutes.allSatisfy { $0.completed == 40 })
        }
    }

    /// History older than the retention goes; a day of it always stays.
    @Test func historyIsPrunedPastItsRetention() async throws {
        try await TestDatabase.with { db async throws in
            let now = Date()
            try await db.store.recordHistory(
                [
                    Self.minute("mail", now.addingTimeInterval(-2 * 86400), completed: 1),
                    Self.minute("mail", now.addingTimeInterval(-3600), completed: 2),
                ])
            try await db.store.pruneHistory(keep: .seconds(86400))
            let left = try await db.store.history(since: now.addingTimeInterval(-3 * 86400), bin: .seconds(60))
            #expect(left.map(\.completed) == [2])
        }
    }

    /// The overview's counts: unfinished jobs from the table, finished ones from the history (a
    /// cancel adds to it); paused queues without jobs too.
    @Test func queueSummariesCountWithoutTheCompletedJobs() async throws {
        try await TestDatabase.with { db async throws in
            let jobs = (0..<3).map { _ in NewJob(chain: ChainDefinition(stages: [.task("noop")]), queue: "mail") }
            let enqueued = try await db.store.enqueue(
                jobs + [
                    NewJob(
                        chain: ChainDefinition(stages: [.task("noop")]), queue: "pdf",
                        runAt: Date().addingTimeInterval(3600))
                ])
            try await db.store.cancel(enqueued[0].id)
            try await db.store.setPaused(true, queue: "later", unchecked: true)
            try await db.store.recordHistory([Self.minute("mail", Date(), completed: 7)])

            let summaries = try await db.store.queueSummaries(finishedSince: Date().addingTimeInterval(-86400))
            #expect(summaries.map(\.name) == ["later", "mail", "pdf"])
            let mail = try #require(summaries.first { $0.name == "mail" })
            #expect(mail.counts == [.available: 2, .cancelled: 1, .completed: 7])
            #expect(mail.oldestAvailable != nil)
            #expect(summaries.first { $0.name == "pdf" }?.counts == [.scheduled: 1])
            #expect(summaries.first { $0.name == "later" }?.paused == true)
        }
    }
}
