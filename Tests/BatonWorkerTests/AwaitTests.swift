import Baton
import BatonTestSupport
import Foundation
import Synchronization
import Testing

@testable import BatonPostgres
@testable import BatonWorker

/// Holds its stage until the test opens the gate for its job, then returns its input.
struct HeldOpen: BatonTask {
    private struct Gates {
        var open: Set<Int64> = []
        var waiting: [Int64: CheckedContinuation<Void, any Error>] = [:]
    }

    private static let gates = Mutex(Gates())

    /// Lets the stage of `job` finish (now, or as soon as it starts).
    static func open(_ job: Int64) {
        let waiting = gates.withLock { gates in
            gates.open.insert(job)
            return gates.waiting.removeValue(forKey: job)
        }
        waiting?.resume()
    }

    func run(_ input: Int, context: StageContext) async throws -> Int {
        let job = context.jobID
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let isOpen = Self.gates.withLock { gates in
                    if gates.open.contains(job) || Task.isCancelled { return true }
                    gates.waiting[job] = continuation
                    return false
                }
                if isOpen { continuation.resume() }
            }
        } onCancel: {
            Self.gates.withLock { $0.waiting.removeValue(forKey: job) }?.resume(throwing: CancellationError())
        }
        try Task.checkCancellation()
        return input
    }
}

/// Stages that wait for the outside world: a job waits for its signal holding no worker, goes on
/// with its payload, keeps a signal that came first, and fails by its timeout.
@Suite(.timeLimit(.minutes(2)))
struct AwaitTests {
    static var tasks: TaskRegistry {
        var tasks = testTasks
        tasks.register(HeldOpen.self)
        return tasks
    }

    @Test func aJobWaitsForItsSignalHoldingNoWorkerAndGoesOnWithThePayload() async throws {
        try await TestDatabase.with { db async throws in
            try await withWorker(db, tasks: Self.tasks) { baton, worker async throws in
                let job = try await baton.enqueue(
                    Chain(input: 1).then(Add(n: 1)).awaitSignal("approved", as: Int.self, name: "approval")
                        .then(Add(n: 10)))
                let waiting = try await eventually("the job to wait for its signal") {
                    let record = try await baton.job(job.id)
                    return record.state == .waiting ? record : nil
                }
                #expect(waiting.stage == 1)
                #expect(waiting.waitingFor.map(\.kind) == [.signal])
                #expect(waiting.workerID == nil)
                #expect(worker.runningJobs.isEmpty, "no slot is held while it waits")

                #expect(try await baton.signal(job.id, "approved", payload: 100) == .resumed)
                #expect(try await job.result() == 110)
                #expect(try await baton.signal(job.id, "approved", payload: 999) == .duplicate)
                let record = try await baton.job(job.id)
                #expect(record.results.map(\.output) == [2, 100, 110])
                #expect(record.results.map(\.attempts) == [1, 1, 1])
            }
        }
    }

    /// A webhook may come back before the request that asked for it has finished: the signal is
    /// kept, and the chain does not wait when it reaches the stage. Its numbers stay exact.
    @Test func aSignalThatComesFirstIsKeptForItsStage() async throws {
        try await TestDatabase.with { db async throws in
            try await withWorker(db, tasks: Self.tasks) { baton, _ async throws in
                let job = try await baton.enqueue(
                    Chain(input: 1).then(HeldOpen()).awaitSignal("paid", as: JSONValue.self))
                try await eventually("the first stage to run") { try await baton.job(job.id).state == .running }
                let payload: JSONValue = ["amount": .number(JSONNumber("12345678901234567890.01")!), "id": "pay_1"]
                #expect(try await baton.signal(job.id, "paid", payload: payload) == .kept)
                HeldOpen.open(job.id)
                #expect(try await job.result() == payload)
                #expect(try await baton.job(job.id).errors.isEmpty)
            }
        }
    }

    /// Signals delivered at every moment around the stage's start (before, while the worker
    /// decides to wait, after) are never lost: every job completes with its own payload.
    @Test func noSignalIsLostWhateverItsTiming() async throws {
        try await TestDatabase.with { db async throws in
            try await withWorker(db, tasks: Self.tasks) { baton, _ async throws in
                var jobs: [JobHandle<Int>] = []
                for _ in 0..<40 {
                    jobs.append(
                        try await baton.enqueue(Chain(input: 0).then(Add(n: 1)).awaitSignal("go", as: Int.self)))
                }
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for (index, job) in jobs.enumerated() {
                        group.addTask {
                            try await Task.sleep(for: .milliseconds(index % 8 * 3))
                            _ = try await baton.signal(job.id, "go", payload: index)
                        }
                    }
                    try await group.waitForAll()
                }
                for (index, job) in jobs.enumerated() {
                    #expect(try await job.result() == index)
                }
            }
        }
    }

    /// Each wait lasts its timeout; then the attempt fails, the stage waits again while attempts
    /// remain, and the job is discarded after the last; the failure handler hears both. A signal
    /// after that is refused.
    @Test func aWaitThatRunsOutFailsItsAttemptAndTheLastDiscardsTheJob() async throws {
        try await TestDatabase.with { db async throws in
            let heard = Mutex<[StageFailure]>([])
            var configuration = WorkerConfiguration.test()
            configuration.failures.handler = { failure in heard.withLock { $0.append(failure) } }
            try await withWorker(db, tasks: Self.tasks, configuration: configuration) { baton, _ async throws in
                let job = try await baton.enqueue(
                    Chain(input: 1).awaitSignal("never", as: Int.self, timeout: .milliseconds(300), attempts: 2),
                    metadata: ["order": 7])
                let record = try await baton.waitUntilFinished(job.id, timeout: .seconds(30))
                #expect(record.state == .discarded)
                #expect(record.errors.map(\.attempt) == [1, 2])
                #expect(record.errors.allSatisfy { $0.error.hasPrefix("no signal \"never\" within") })
                try await eventually("the handler to hear both waits end") { heard.withLock { $0.count } == 2 }
                let failures = heard.withLock { $0 }
                #expect(failures.map(\.jobID) == [job.id, job.id])
                #expect(failures.map(\.task) == ["await", "await"])
                #expect(failures.map(\.attempt) == [1, 2])
                #expect(failures.last?.outcome == .discarded)
                if case .retrying = failures.first?.outcome {} else { Issue.record("\(failures)") }
                #expect(failures.allSatisfy { $0.error.message.hasPrefix("no signal \"never\" within") })
                #expect(failures.first?.metadata == ["order": 7])
                await #expect(throws: SignalRefusal.late(job: job.id, signal: "never", state: .discarded)) {
                    try await baton.signal(job.id, "never", payload: 1)
                }
                // Retried by hand, it waits anew, and its signal completes it.
                _ = try await baton.store.retry(job.id)
                try await eventually("the retried job to wait again") { try await baton.job(job.id).state == .waiting }
                #expect(try await baton.signal(job.id, "never", payload: 5) == .resumed)
                #expect(try await job.result() == 5)
            }
        }
    }

    /// The narrowest moment: the signal comes after the worker found none and before its decision
    /// to wait commits. The wait ends as it begins; the next claim hands the payload on.
    @Test func aSignalKeptWhileTheWorkerDecidesToWaitEndsTheWait() async throws {
        try await TestDatabase.with { db async throws in
            let baton = BatonClient(pool: db.pool, logger: db.logger)
            let job = try await db.store.enqueue([
                NewJob(chain: ChainDefinition(input: 1, stages: [.awaitSignal("go")]))
            ])[0]
            let claimed = try #require(try await db.store.claim(queue: "default", limit: 1, worker: "w").first)
            #expect(claimed.attempt == 1)
            #expect(try await baton.signal(job.id, "go", payload: 7) == .kept)
            let applied = try await db.store.apply(
                [Outcome(jobID: job.id, stage: 0, attempt: 1, transition: .await(timeout: .seconds(60)))], worker: "w")
            #expect(applied.woken == ["default"])
            #expect(try await db.store.job(job.id)?.state == .available)
            let again = try #require(try await db.store.claim(queue: "default", limit: 1, worker: "w").first)
            #expect(again.attempt == 1, "the wait and its end are one attempt")
            #expect(try await db.store.signalPayload(job: job.id, name: "go") == "7")
        }
    }

    @Test func aSignalNoStageAwaitsIsRefused() async throws {
        try await TestDatabase.with { db async throws in
            try await withWorker(db, tasks: Self.tasks) { baton, _ async throws in
                let job = try await baton.enqueue(Chain(input: 1).awaitSignal("approved", as: Int.self))
                await #expect(throws: SignalRefusal.notAwaited(job: job.id, signal: "approve")) {
                    try await baton.signal(job.id, "approve", payload: 1)
                }
                await #expect(throws: SignalRefusal.noJob(424_242)) {
                    try await baton.signal(424_242, "approved", payload: 1)
                }
                #expect(throws: BatonError.self) {
                    try Chain(input: 1).awaitSignal("a/b", as: Int.self).definition()
                }
                #expect(throws: BatonError.self) {
                    try Chain(input: 1).awaitSignal("twice", as: Int.self).awaitSignal("twice", as: Int.self)
                        .definition()
                }
            }
        }
    }
}
