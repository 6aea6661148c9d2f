import Baton
import BatonTestSupport
import Foundation
import Synchronization
import Testing

@testable import BatonPostgres
@testable import BatonWorker

/// Snoozes `times` times for `ms` each (counted per job), then returns its input.
struct Sleepy: BatonTask {
    static let snoozes = Mutex([Int64: Int]())
    var times: Int
    var ms: Int

    func run(_ input: Int, context: StageContext) async throws -> Int {
        let done = Self.snoozes.withLock { $0[context.jobID, default: 0] }
        guard done >= times else {
            Self.snoozes.withLock { $0[context.jobID, default: 0] += 1 }
            throw Snooze(for: .milliseconds(ms))
        }
        return input
    }
}

/// A task that snoozes runs again later without spending an attempt or recording an error, and a
/// laned stage keeps its lane meanwhile.
@Suite(.timeLimit(.minutes(2)))
struct SnoozeTests {
    static var tasks: TaskRegistry {
        var tasks = testTasks
        tasks.register(Sleepy.self)
        return tasks
    }

    @Test func aSnoozeSpendsNoAttemptAndRecordsNoError() async throws {
        try await TestDatabase.with { db async throws in
            try await withWorker(db, tasks: Self.tasks) { baton, _ async throws in
                // One attempt only: two snoozes leave it.
                let job = try await baton.enqueue(
                    Chain(input: 7).then(Sleepy(times: 2, ms: 400)).retry(.constant(.zero, attempts: 1)))
                let snoozed = try await eventually("the job to be snoozed") {
                    let record = try await baton.job(job.id)
                    return record.waitingFor.first?.kind == .snoozed ? record : nil
                }
                #expect(snoozed.state == .retryable)
                #expect(snoozed.waitingFor.first?.until == snoozed.runAt)
                #expect(try await job.result() == 7)
                let record = try await baton.job(job.id)
                #expect(record.errors.isEmpty)
                #expect(record.results.map(\.attempts) == [1])
                #expect(Sleepy.snoozes.withLock { $0[job.id] } == 2)
            }
        }
    }

    /// The lane's order holds: the job behind a snoozing holder runs after it, not meanwhile.
    @Test func aSnoozedLanedStageKeepsItsLane() async throws {
        try await TestDatabase.with { db async throws in
            try await withWorker(db, tasks: Self.tasks) { baton, _ async throws in
                let first = try await baton.enqueue(Chain(input: 1).then(Sleepy(times: 1, ms: 300), lane: "snooze"))
                let second = try await baton.enqueue(Chain(input: 2).then(Add(n: 0), lane: "snooze"))
                #expect(try await first.result() == 1)
                #expect(try await second.result() == 2)
                let (a, b) = (try await baton.job(first.id), try await baton.job(second.id))
                let firstDone = try #require(a.finishedAt)
                let secondStarted = try #require(b.attemptedAt)
                #expect(secondStarted >= firstDone, "the second ran only after the snoozing holder finished")
            }
        }
    }
}
