import Baton
import BatonPostgres
import BatonTestSupport
import Foundation
import Testing

@testable import BatonWorker

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

    /// Each key's share of recent starts (`GET /v1/queues`' `recent_top`): the worker's history
    /// counts the stages it claimed per key, exactly while a minute has fewer than a sample's
    /// 1,000; a queue that is not fair records none.
    @Test func eachKeysShareOfRecentStartsIsCounted() async throws {
        try await TestDatabase.with { db async throws in
            @Sendable func stages(_ count: Int, key: String?, queue: String = "default") -> [NewJob] {
                (0..<count).map { _ in
                    NewJob(chain: ChainDefinition(input: nil, stages: [.task("nap")]), queue: queue, fairKey: key)
                }
            }
            var configuration = WorkerConfiguration.test()
            configuration.queues = ["default": 8, "plain": 8]
            let ids = try await withWorker(db, tasks: Self.naps, configuration: configuration) {
                baton, _ async throws in
                let ids = try await baton.enqueue(
                    stages(30, key: "a") + stages(10, key: "b") + stages(5, key: nil)
                        + stages(7, key: nil, queue: "plain")
                ).map(\.id)
                for id in ids {
                    #expect(try await baton.waitUntilFinished(id, timeout: .seconds(30)).state == .completed)
                }
                return ids
            }
            // The worker wrote its history as it stopped.
            #expect(ids.count == 52)
            let fair = try #require(try await db.store.fairShareBacklogs()["default"])
            #expect(fair.recentStarts == 45)
            #expect(fair.recentTop.map { "\($0.key) \($0.stages)" } == ["a 30", "b 10", " 5"])
            #expect(fair.share(ofRecentStarts: 30) == 30.0 / 45)
            #expect(try await db.store.fairShareBacklogs()["plain"] == nil)
            let plain = try await db.values(
                """
                SELECT count(*)::int FROM \(unescaped: db.configuration.schema).queue_minutes
                WHERE queue = 'plain' AND fair_starts IS NOT NULL
                """, as: Int.self)
            #expect(plain == [0])
        }
    }

    /// Past a sample's 1,000 claims a minute, each key's count is estimated from the sample: within
    /// a few percent, and adding up to the pickups; a second write adds to the first.
    @Test func aKeysShareIsEstimatedFromASampleOfManyStarts() async throws {
        try await TestDatabase.with { db async throws in
            let jobs = (0..<3_000).map { index in
                NewJob(
                    chain: ChainDefinition(input: nil, stages: [.task("nap")]), fairKey: index % 3 == 2 ? "b" : "a")
            }
            let ids = try await db.store.enqueue(jobs).map(\.id)
            let history = QueueHistory(store: db.store, logger: db.logger)
            for id in ids.shuffled() { history.pickedUp(queue: "default", waited: 0.01, job: id) }
            await history.write()
            let fair = try #require(try await db.store.fairShareBacklogs()["default"])
            #expect(fair.recentStarts == 3_000)
            let counts = Dictionary(uniqueKeysWithValues: fair.recentTop.map { ($0.key, $0.stages) })
            #expect(counts.values.reduce(0, +) == 3_000)
            // A share from 1,000 of 3,000 is within 1.5 % of the truth (one standard deviation);
            // six percent is four of them.
            #expect(abs((counts["a"] ?? 0) - 2_000) <= 180, "\(counts)")
            for id in ids.prefix(10) { history.pickedUp(queue: "default", waited: 0.01, job: id) }
            await history.write()
            let again = try #require(try await db.store.fairShareBacklogs()["default"])
            #expect(again.recentStarts == 3_010)
            #expect(again.recentTop.map(\.stages).reduce(0, +) == 3_010)
        }
    }
}
