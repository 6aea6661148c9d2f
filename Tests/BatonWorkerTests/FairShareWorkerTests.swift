import Baton
import BatonPostgres
import BatonTestSupport
import BatonWorker
import Foundation
import Testing

/// Fair share (issue 49) with a worker running the stages.
@Suite(.timeLimit(.minutes(3)))
struct FairShareWorkerTests {
    /// `nap`: 20 ms of a slot.
    static let naps: TaskRegistry = {
        var tasks = TaskRegistry()
        tasks.register(name: "nap") { _, input, _ in
            try await Task.sleep(for: .milliseconds(20))
            return input
        }
        return tasks
    }()

    /// The quick check, scaled to a test: while a worker of 8 slots burns down key `a`'s
    /// 1,000 stages of 20 ms (2.5 s of work), key `b`'s 10 stages, enqueued once `a`'s are running,
    /// take the next turns: all of them complete while most of `a`'s have not started. (In the
    /// order stages became ready, `b`'s would wait for every one of `a`'s.)
    @Test func anotherKeysStagesStartDuringAFlood() async throws {
        try await TestDatabase.with { db async throws in
            try await withWorker(db, tasks: Self.naps) { baton, _ async throws in
                func stages(_ count: Int, key: String) -> [NewJob] {
                    (0..<count).map { _ in
                        NewJob(chain: ChainDefinition(input: nil, stages: [.task("nap")]), fairKey: key)
                    }
                }
                for _ in 0..<10 { _ = try await baton.enqueue(stages(100, key: "a")) }
                let schema = db.configuration.schema
                func count(_ state: String) async throws -> Int {
                    try await db.values(
                        "SELECT count(*)::int FROM \(unescaped: schema).jobs WHERE fair_key = 'a' AND state = \(state)::\(unescaped: schema).job_state",
                        as: Int.self
                    ).first ?? 0
                }
                try await eventually("a's first stages to complete") { try await count("completed") >= 40 }
                for job in try await baton.enqueue(stages(10, key: "b")) {
                    let record = try await baton.waitUntilFinished(job.id, timeout: .seconds(30))
                    #expect(record.state == .completed)
                }
                let notStarted = try await count("available")
                #expect(notStarted >= 500, "only \(notStarted) of a's stages had not started")
            }
        }
    }

    /// Lanes compose: key `b`'s 10 stages of one lane run one at a time, each admitted to the
    /// lane as the one before completes, and each, once admitted, takes `b`'s turn: all complete
    /// while most of the flood of key `a` has not started.
    @Test func aLanesStagesTakeTheirKeysTurnAsTheyAreAdmitted() async throws {
        try await TestDatabase.with { db async throws in
            try await withWorker(db, tasks: Self.naps) { baton, _ async throws in
                func stages(_ count: Int, key: String, lane: String? = nil) -> [NewJob] {
                    (0..<count).map { _ in
                        NewJob(chain: ChainDefinition(input: nil, stages: [.task("nap", lane: lane)]), fairKey: key)
                    }
                }
                for _ in 0..<10 { _ = try await baton.enqueue(stages(100, key: "a")) }
                let lane = try await baton.enqueue(stages(10, key: "b", lane: "b-lane"))
                for job in lane {
                    let record = try await baton.waitUntilFinished(job.id, timeout: .seconds(30))
                    #expect(record.state == .completed)
                }
                let schema = db.configuration.schema
                let notStarted = try await db.values(
                    "SELECT count(*)::int FROM \(unescaped: schema).jobs WHERE fair_key = 'a' AND state = 'available'",
                    as: Int.self)[0]
                #expect(notStarted >= 400, "only \(notStarted) of a's stages had not started")
            }
        }
    }
}
