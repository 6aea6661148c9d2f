import Baton
import BatonPostgres
import BatonTestSupport
import Foundation
import Testing

/// Fair share (issue 49) as an operator runs it: several `baton worker` processes claiming one
/// queue, the shares measured from the database's record of when each stage started.
@Suite(.timeLimit(.minutes(5)))
struct FairShareProcessTests {
    /// Keys `a` (weight 1) and `b` (weight 2), 900 stages each, burnt down by three worker
    /// processes of 8 slots, one killed mid-stage a third of the way through. Over every window of
    /// 90 consecutive starts while both keys had stages left to start, `b` took its weight's share
    /// (2/3) within ±10 %; the killed worker's stages ran again elsewhere after its lease, and
    /// every stage completed.
    @Test func startsFollowTheKeysWeightsAcrossWorkersThroughAKill() async throws {
        try await TestDatabase.with { db async throws in
            func stages(_ key: String, weight: Double?) -> [NewJob] {
                (0..<100).map { _ in
                    NewJob(
                        chain: ChainDefinition(input: nil, stages: [.task("sleep", args: ["ms": 10])]), queue: "shared",
                        fairKey: key, fairWeight: weight)
                }
            }
            for _ in 0..<9 {
                _ = try await db.store.enqueue(stages("a", weight: nil))
                _ = try await db.store.enqueue(stages("b", weight: 2))
            }
            let schema = db.configuration.schema
            func completed() async throws -> Int {
                try await db.values(
                    "SELECT count(*)::int FROM \(unescaped: schema).jobs WHERE state = 'completed'", as: Int.self)[0]
            }

            let environment: [String: String?] = ["BATON_LOG_LEVEL": "warning"]
            var workers: [ChildProcess] = []
            for _ in 0..<3 {
                workers.append(
                    try await ChildProcess(
                        try ChildProcess.builtBinary("baton"),
                        ["worker", "--database-url", db.url, "--queue", "shared:8", "--lease", "2s"],
                        environment: environment))
            }
            defer { for worker in workers where worker.isRunning { worker.signal(SIGKILL) } }
            try await eventually(timeout: .seconds(60), "a third of the stages to complete") {
                try await completed() >= 600
            }
            workers[0].signal(SIGKILL)
            try await eventually(timeout: .seconds(120), "every stage to complete") {
                for worker in workers.dropFirst() where !worker.isRunning {
                    throw TestFailure("a worker stopped: \(worker.standardError)")
                }
                return try await completed() == 1800
            }

            // Each stage's start (its last attempt's: a stage the kill interrupted counts where it
            // ran again), in order.
            let rows = try await db.values(
                """
                SELECT fair_key || ' ' || attempt FROM \(unescaped: schema).jobs WHERE queue = 'shared'
                ORDER BY attempted_at, id
                """, as: String.self)
            let starts = rows.map { $0.split(separator: " ") }
            #expect(starts.count == 1800)
            #expect(starts.contains { $0[1] != "1" }, "the killed worker's stages ran again")
            // Both keys had stages left to start until the first of them started its last one (a
            // stage the kill interrupted ran again after the lease, when its key may have had none
            // left).
            let end = ["a", "b"].map { key in starts.lastIndex { $0 == [Substring(key), "1"] } ?? 0 }.min() ?? 0
            let keys = starts.map { String($0[0]) }
            let windows = stride(from: 0, to: end - 89, by: 90).map { keys[$0..<($0 + 90)] }
            #expect(windows.count >= 10)
            for (index, window) in windows.enumerated() {
                let share = Double(window.filter { $0 == "b" }.count) / Double(window.count)
                #expect(abs(share - 2.0 / 3) <= 0.1 * 2 / 3, "window \(index): b took \(share) of the starts")
            }
        }
    }
}
