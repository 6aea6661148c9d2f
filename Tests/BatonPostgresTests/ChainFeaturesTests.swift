import Baton
import BatonPostgres
import BatonTestSupport
import Foundation
import Testing

/// Chain features (migration 25): a job stores what its chain uses that workers of an earlier
/// version cannot read, and only a worker that reads it all is given the job.
@Suite(.timeLimit(.minutes(2)))
struct ChainFeaturesTests {
    /// A worker of an earlier version (its row lists no features) neither claims a chain with a
    /// sub-chain nor is handed one by a lane it completes a stage of; the job says why it waits;
    /// a worker that reads sub-chains is given both.
    @Test func aChainIsGivenOnlyToAWorkerThatReadsItsFeatures() async throws {
        try await TestDatabase.with { db async throws in
            let schema = db.configuration.schema
            let subChain = StageSpec.group([.chain([.task("t"), .task("t")])])
            let ids = try await db.store.enqueue([
                NewJob(chain: ChainDefinition(input: 1, stages: [.task("t")])),
                NewJob(chain: ChainDefinition(input: 2, stages: [.task("t"), subChain])),
                NewJob(chain: ChainDefinition(input: 3, stages: [.task("t", lane: "L")])),
                NewJob(chain: ChainDefinition(input: 4, stages: [.task("t", lane: "L"), subChain])),
            ]).map(\.id)
            var stored: [String] = []
            for id in ids {
                stored += try await db.values(
                    "SELECT coalesce(features::text, '') FROM \(unescaped: schema).jobs WHERE id = \(id)",
                    as: String.self)
            }
            #expect(stored == ["", "{sub-chain}", "", "{sub-chain}"])

            try await db.store.registerWorker(id: "old", host: "h", pid: 1, queues: ["default"], tasks: ["t"])
            try await db.pool.execute("UPDATE \(unescaped: schema).workers SET features = NULL WHERE id = 'old'")
            let claimed = try await db.store.claim(queue: "default", limit: 10, worker: "old")
            #expect(Set(claimed.map(\.id)) == [ids[0], ids[2]])
            let waiting = try #require(try await db.store.job(ids[1]))
            #expect(waiting.waitingFor.map(\.kind) == [.noWorkerForFeature], "\(waiting.waitingFor)")

            // The lane's next holder is made available, not handed to the worker that cannot read it.
            let applied = try await db.store.apply(
                [Outcome(jobID: ids[2], stage: 0, attempt: 1, transition: .complete(output: "3"))], worker: "old",
                slots: ["default": 10], tasks: ["t"])
            #expect(applied.applied == [ids[2]])
            #expect(applied.claimed.isEmpty)
            #expect(try await db.store.job(ids[3])?.state == .available)

            try await db.store.registerWorker(id: "new", host: "h", pid: 2, queues: ["default"], tasks: ["t"])
            #expect(try await db.store.job(ids[1])?.waitingFor.isEmpty == true)
            let taken = try await db.store.claim(queue: "default", limit: 10, worker: "new")
            #expect(Set(taken.map(\.id)) == [ids[1], ids[3]])
        }
    }
}
