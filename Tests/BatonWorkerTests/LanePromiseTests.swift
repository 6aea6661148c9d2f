import Baton
import BatonPostgres
import BatonTestSupport
import BatonWorker
import Foundation
import Synchronization
import Testing

/// What the README promises of lanes beyond one-at-a-time order: retries, pauses, schedules.
@Suite(.timeLimit(.minutes(3)))
struct LanePromiseTests {
    /// A lane's steps as they started, per test run; `hold` keeps a step running until released.
    final class Steps: Sendable {
        let run = UUID().uuidString
        private let state = Mutex<(started: [String], gates: [String: WakeUp])>(([], [:]))

        var started: [String] { state.withLock { $0.started } }

        func gate(_ name: String) -> WakeUp {
            state.withLock { state in
                if let gate = state.gates[name] { return gate }
                let gate = WakeUp()
                state.gates[name] = gate
                return gate
            }
        }

        func release(_ name: String) { gate(name).signal() }

        var tasks: TaskRegistry {
            var tasks = TaskRegistry()
            tasks.register(name: "step") { args, input, _ in
                guard let name = args["name"]?.stringValue else { return input }
                self.state.withLock { $0.started.append(name) }
                if args["hold"] == true { await self.gate(name).wait() }
                if args["fail"] == true { throw TaskFailure.permanent("\(name) fails") }
                return input
            }
            return tasks
        }

        func job(
            _ name: String, lane: String, hold: Bool = false, fail: Bool = false, queue: String = "default",
            runAt: Date? = nil
        ) -> NewJob {
            NewJob(
                chain: ChainDefinition(
                    input: 1,
                    stages: [
                        .task(
                            "step", args: ["name": .string(name), "hold": .bool(hold), "fail": .bool(fail)],
                            lane: lane, retry: .none)
                    ]),
                queue: queue, runAt: runAt)
        }
    }

    static func state(_ db: TestDatabase, _ id: Int64) async throws -> JobState? { try await db.store.job(id)?.state }

    /// A discarded job retried while its lane moved on joins the back of the lane: it runs after
    /// the jobs that were waiting when it was retried.
    @Test func aRetriedJobRejoinsTheBackOfItsLane() async throws {
        try await TestDatabase.with { db async throws in
            let steps = Steps()
            try await withWorker(db, tasks: steps.tasks) { _, _ async throws in
                let ids = try await db.store.enqueue([
                    steps.job("A", lane: "l", fail: true), steps.job("B", lane: "l", hold: true),
                    steps.job("C", lane: "l"),
                ]).map(\.id)
                try await eventually("A to fail and B to start") {
                    let (a, b) = (try await Self.state(db, ids[0]), try await Self.state(db, ids[1]))
                    return a == .discarded && b == .running
                }
                #expect(try await db.store.retry(ids[0]) == .waiting)
                steps.release("B")
                try await eventually("every job to finish") {
                    let (a, c) = (try await Self.state(db, ids[0]), try await Self.state(db, ids[2]))
                    return a == .discarded && c == .completed && steps.started.count == 4
                }
                #expect(steps.started == ["A", "B", "C", "A"])
            }
        }
    }

    /// A lane's next holder in a paused queue is not handed to the worker that released the lane:
    /// it waits, available, until the queue resumes.
    @Test func aPausedQueueHoldsItsLaneHandOffs() async throws {
        try await TestDatabase.with { db async throws in
            let steps = Steps()
            try await withWorker(db, tasks: steps.tasks) { _, _ async throws in
                let ids = try await db.store.enqueue([
                    steps.job("B", lane: "p", hold: true), steps.job("C", lane: "p"),
                ]).map(\.id)
                try await eventually("B to start") { try await Self.state(db, ids[0]) == .running }
                try await db.store.setPaused(true, queue: "default")
                steps.release("B")
                try await eventually("B to complete") { try await Self.state(db, ids[0]) == .completed }
                #expect(try await Self.state(db, ids[1]) == .available, "handed to the worker of a paused queue")
                try await db.store.setPaused(false, queue: "default")
                try await eventually("C to run after the resume") { try await Self.state(db, ids[1]) == .completed }
                #expect(steps.started == ["B", "C"])
            }
        }
    }

    /// A scheduled job of a lane enters it when due, behind the stage holding it.
    @Test func aScheduledJobJoinsItsLaneWhenDue() async throws {
        try await TestDatabase.with { db async throws in
            let steps = Steps()
            try await withWorker(db, tasks: steps.tasks) { _, _ async throws in
                let holder = try await db.store.enqueue([steps.job("B", lane: "s", hold: true)])[0].id
                try await eventually("B to start") { try await Self.state(db, holder) == .running }
                // Due when moved (a time a moment ahead may have passed on a loaded machine).
                let later = Date().addingTimeInterval(3600)
                let scheduled = try await db.store.enqueue([steps.job("D", lane: "s", runAt: later)])[0].id
                #expect(try await Self.state(db, scheduled) == .scheduled)
                try await db.pool.execute(
                    "UPDATE \(unescaped: db.configuration.schema).jobs SET run_at = now() WHERE id = \(scheduled)")
                try await eventually("D to be due and wait behind B") {
                    let state = try await Self.state(db, scheduled)
                    try #require(
                        state == .scheduled || state == .waiting,
                        "D left the lane's queue while B held it: \(String(describing: state))")
                    return state == .waiting
                }
                steps.release("B")
                try await eventually("D to run") { try await Self.state(db, scheduled) == .completed }
                #expect(steps.started == ["B", "D"])
            }
        }
    }
}
