import Baton
import BatonPostgres
import BatonTestSupport
import Foundation
import PostgresNIO
import Testing

/// Rate limits as the database keeps them, without a worker: a claim spends one token per stage
/// of a limited key, and says when the next token comes.
@Suite(.timeLimit(.minutes(2)))
struct RateLimitTests {
    func limited(_ key: String, _ input: Int, lane: String? = nil) -> NewJob {
        NewJob(chain: ChainDefinition(input: .number(input), stages: [.task("t", lane: lane, rate: key)]))
    }

    @Test func aClaimTakesNoMoreStagesOfAKeyThanItHasTokens() async throws {
        try await TestDatabase.with { db async throws in
            try await db.store.setRateLimit(RateLimit(key: "partner", rate: 2, per: .seconds(3600)))
            let limitedIDs = try await db.store.enqueue((0..<5).map { limited("partner", $0) }).map(\.id)
            let free = try await db.store.enqueue([NewJob(chain: ChainDefinition(stages: [.task("t")]))])[0].id
            let first = try await db.store.claimCountingTokens(queue: "default", limit: 10, worker: "w")
            #expect(Set(first.jobs.map(\.id)) == Set([free] + limitedIDs.prefix(2)))
            // The next token comes after half an hour (2 an hour).
            let wait = try #require(first.nextToken)
            #expect(wait > .seconds(1790) && wait <= .seconds(1800))
            let second = try await db.store.claimCountingTokens(queue: "default", limit: 10, worker: "w")
            #expect(second.jobs.isEmpty)
            #expect(try await db.store.rateLimits().map(\.key) == ["partner"])
            #expect(try await db.store.rateLimits().first.map { $0.tokens < 0.01 } == true)
            // The limit gone, the key no longer limits.
            #expect(try await db.store.deleteRateLimit("partner"))
            #expect(
                try await db.store.claim(queue: "default", limit: 10, worker: "w").map(\.id) == Array(limitedIDs[2...]))
        }
    }

    @Test func tokensComeBackAtTheRateUpToTheBurst() async throws {
        try await TestDatabase.with { db async throws in
            try await db.store.setRateLimit(RateLimit(key: "k", rate: 1, per: .milliseconds(200), burst: 1))
            _ = try await db.store.enqueue((0..<3).map { limited("k", $0) })
            #expect(try await db.store.claim(queue: "default", limit: 10, worker: "w").count == 1)
            let wait = try #require(
                try await db.store.claimCountingTokens(queue: "default", limit: 10, worker: "w").nextToken)
            #expect(wait <= .milliseconds(200))
            try await Task.sleep(for: wait)
            #expect(try await db.store.claim(queue: "default", limit: 10, worker: "w").count == 1)
        }
    }

    /// A stage naming a key nobody limited is claimed like any other; a limited stage entering a
    /// lane is not handed to the worker that freed the lane (that would start it without a token).
    @Test func anUnlimitedKeyDoesNotLimitAndALaneHandOverTakesNoLimitedStage() async throws {
        try await TestDatabase.with { db async throws in
            let ids = try await db.store.enqueue((0..<3).map { limited("nobody", $0) }).map(\.id)
            #expect(try await db.store.claim(queue: "default", limit: 10, worker: "w").map(\.id) == ids)

            try await db.store.setRateLimit(RateLimit(key: "slow", rate: 1, per: .seconds(3600)))
            let laned = try await db.store.enqueue((0..<2).map { limited("slow", $0, lane: "l") }).map(\.id)
            let claimed = try await db.store.claim(queue: "default", limit: 10, worker: "w")
            #expect(claimed.map(\.id) == [laned[0]])
            let applied = try await db.store.apply(
                [Outcome(jobID: laned[0], stage: 0, attempt: 1, transition: .complete(output: "0"))], worker: "w",
                slots: ["default": 5])
            #expect(applied.claimed.isEmpty)
            #expect(try await db.store.job(laned[1])?.state == .available)
            #expect(try await db.store.claim(queue: "default", limit: 10, worker: "w").isEmpty, "no token left")
        }
    }

    @Test func badLimitsAreRefusedNamingTheField() async throws {
        try await TestDatabase.with { db async throws in
            for (limit, path) in [
                (RateLimit(key: "k", rate: 0, per: .seconds(1)), "rate"),
                (RateLimit(key: "k", rate: 1, per: .zero), "per"),
                (RateLimit(key: "k", rate: 1, per: .seconds(1), burst: 0), "burst"),
                (RateLimit(key: "", rate: 1, per: .seconds(1)), "key"),
            ] {
                await #expect(throws: BatonError.self) { try await db.store.setRateLimit(limit) }
                do { try await db.store.setRateLimit(limit) } catch let BatonError.invalidChain(at, _) {
                    #expect(at == path)
                }
            }
        }
    }
}

extension RateLimitTests {
    /// A snooze or a retry that pauses its key: no stage of the key starts until its delay is
    /// over, across workers, while a plain snooze leaves the key's tokens alone.
    @Test(arguments: [
        Transition.snooze(delay: .seconds(60), pauseRateLimit: true),
        Transition.retry(error: "HTTP 429", delay: .seconds(60), pauseRateLimit: true),
    ])
    func aSnoozeOrRetryPausingItsKeyStopsTheWholeKey(pausing: Transition) async throws {
        try await TestDatabase.with { db async throws in
            try await db.store.setRateLimit(RateLimit(key: "partner", rate: 100, per: .seconds(1)))
            let ids = try await db.store.enqueue((0..<3).map { limited("partner", $0) }).map(\.id)
            let first = try await db.store.claim(queue: "default", limit: 1, worker: "w")
            #expect(first.map(\.id) == [ids[0]])
            _ = try await db.store.apply(
                [Outcome(jobID: ids[0], stage: 0, attempt: 1, transition: .snooze(delay: .seconds(60)))], worker: "w")
            #expect(try await db.store.claim(queue: "default", limit: 1, worker: "w").map(\.id) == [ids[1]])
            _ = try await db.store.apply(
                [
                    Outcome(
                        jobID: ids[1], stage: 0, attempt: 1,
                        transition: pausing)
                ], worker: "w")
            let paused = try await db.store.claimCountingTokens(queue: "default", limit: 10, worker: "w")
            #expect(paused.jobs.isEmpty, "the key gives no token while paused")
            let wait = try #require(paused.nextToken)
            // What is left of the minute (less what a loaded machine took since), not a token's 10 ms.
            #expect(wait > .seconds(50) && wait <= .seconds(60))
        }
    }
}

extension RateLimitTests {
    /// A prefix's limit gives each key it starts a bucket of its own (each customer its own rate),
    /// a key's own limit wins, and a stage cannot name a prefix.
    @Test func aPrefixGivesEachOfItsKeysABucketOfItsOwn() async throws {
        try await TestDatabase.with { db async throws in
            try await db.store.setRateLimit(RateLimit(key: "customer-*", rate: 2, per: .seconds(3600)))
            try await db.store.setRateLimit(RateLimit(key: "customer-vip", rate: 3, per: .seconds(3600)))
            for key in ["customer-1", "customer-2", "customer-vip", "other"] {
                _ = try await db.store.enqueue((0..<4).map { limited(key, $0) })
            }
            let claimed = try await db.store.claim(queue: "default", limit: 100, worker: "w")
            var perKey: [String: Int] = [:]
            for job in claimed { perKey[job.chain[0].task?.rate ?? "", default: 0] += 1 }
            #expect(perKey == ["customer-1": 2, "customer-2": 2, "customer-vip": 3, "other": 4])
            // The buckets the prefix made are not listed as limits of their own.
            #expect(try await db.store.rateLimits().map(\.key) == ["customer-*", "customer-vip"])
            // A new prefix limit: its keys' buckets start afresh from it.
            try await db.store.setRateLimit(RateLimit(key: "customer-*", rate: 1, per: .seconds(3600)))
            #expect(try await db.store.claim(queue: "default", limit: 100, worker: "w").count == 2)

            await #expect(throws: BatonError.self) {
                try await db.store.enqueue([limited("customer-*", 0)])
            }
        }
    }
}
