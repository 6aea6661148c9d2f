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

    /// Writes of one worker add up; several workers' rows are summed when read, per bin.
    @Test func writesAddUpAndReadsSumOverWorkers() async throws {
        try await TestDatabase.with { db async throws in
            let now = Date()
            let start = Date(timeIntervalSince1970: (now.timeIntervalSince1970 / 3600).rounded(.down) * 3600 - 3600)
            let first = start.addingTimeInterval(60)
            try await db.store.recordHistory(
                worker: "a", [Self.minute("mail", first, completed: 3, waits: [0: 2, 5: 1])])
            try await db.store.recordHistory(
                worker: "a", [Self.minute("mail", first, completed: 2, discarded: 1, waits: [5: 1])])
            try await db.store.recordHistory(
                worker: "b",
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
            #expect(hours.first?.wait(percentile: 0.5) == Store.waitBucketBounds[5])
            #expect(hours.first?.wait(percentile: 0.95) == 3600, "past the last bound")
        }
    }

    /// History older than the retention goes; a day of it always stays.
    @Test func historyIsPrunedPastItsRetention() async throws {
        try await TestDatabase.with { db async throws in
            let now = Date()
            try await db.store.recordHistory(
                worker: "a",
                [
                    Self.minute("mail", now.addingTimeInterval(-2 * 86400), completed: 1),
                    Self.minute("mail", now.addingTimeInterval(-3600), completed: 2),
                ])
            try await db.store.pruneHistory(keep: .seconds(86400))
            let left = try await db.store.history(since: now.addingTimeInterval(-3 * 86400), bin: .seconds(60))
            #expect(left.map(\.completed) == [2])
        }
    }

    /// The overview's counts: unfinished, discarded and cancelled jobs from the table, completed
    /// ones from the history; paused queues without jobs too.
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
            try await db.store.recordHistory(worker: "a", [Self.minute("mail", Date(), completed: 7)])

            let summaries = try await db.store.queueSummaries(completedSince: Date().addingTimeInterval(-86400))
            #expect(summaries.map(\.name) == ["later", "mail", "pdf"])
            let mail = try #require(summaries.first { $0.name == "mail" })
            #expect(mail.counts == [.available: 2, .cancelled: 1, .completed: 7])
            #expect(mail.oldestAvailable != nil)
            #expect(summaries.first { $0.name == "pdf" }?.counts == [.scheduled: 1])
            #expect(summaries.first { $0.name == "later" }?.paused == true)
        }
    }
}
