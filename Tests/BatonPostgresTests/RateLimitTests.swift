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
    func job(_ input: Int, queue: String = "default", lane: String? = nil, rate: String? = nil) -> NewJob {
        NewJob(
            chain: ChainDefinition(input: .number(input), stages: [.task("t", lane: lane, rate: rate)]), queue: queue)
    }

    func limited(_ key: String, _ input: Int, lane: String? = nil) -> NewJob { job(input, lane: lane, rate: key) }

    /// Completes `holder` with free slots to spare: the lane's next stage, `next`, is not handed
    /// to the worker (it has no token to start with), waits available, and no claim takes it.
    func expectNoHandOver(_ db: TestDatabase, completing holder: Int64, next: Int64) async throws {
        let applied = try await db.store.apply(
            [Outcome(jobID: holder, stage: 0, attempt: 1, transition: .complete(output: "0"))], worker: "w",
            slots: ["default": 5])
        #expect(applied.claimed.isEmpty)
        #expect(try await db.store.job(next)?.state == .available)
        #expect(try await db.store.claim(queue: "default", limit: 10, worker: "w").isEmpty, "no token left")
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

    /// A bucket is one row of `rate_tokens` (migration 22), written by each claim that spends it:
    /// while a transaction holds the xmin horizon, the versions those claims leave go with their
    /// slot's truncation, and the bucket, moved to the current slot, keeps its tokens.
    @Test func aBucketsVersionsGoWithItsSlotAndItKeepsItsTokens() async throws {
        try await TestDatabase.with { db async throws in
            let schema = db.configuration.schema
            try await db.store.setRateLimit(RateLimit(key: "k", rate: 100, per: .seconds(3600), burst: 100))
            let holder = try await db.configuration.connect(id: 2, logger: db.logger)
            _ = try await holder.query("BEGIN", logger: db.logger)
            _ = try await holder.query("SELECT txid_current()", logger: db.logger)
            _ = try await db.store.enqueue((0..<60).map { limited("k", $0) })
            for _ in 0..<60 { #expect(try await db.store.claim(queue: "default", limit: 1, worker: "w").count == 1) }
            func sizes() async throws -> [Int] {
                try await db.values(
                    """
                    SELECT pg_relation_size(format('%I.rate_tokens_%s', \(schema)::text, s))::int
                    FROM generate_series(0, 3) s ORDER BY s
                    """, as: Int.self)
            }
            let written = try await sizes()
            #expect(written.contains { $0 > 0 })
            try await eventually(timeout: .seconds(15), "the slots written to be truncated") {
                try await db.store.rotateRateTokens()
                return zip(written, try await sizes()).allSatisfy { before, now in before == 0 || now == 0 }
            }
            #expect(
                try await db.values("SELECT count(*)::int FROM \(unescaped: schema).rate_tokens", as: Int.self) == [1])
            let tokens = try #require(try await db.store.rateLimits().first?.tokens)
            #expect(tokens > 40 && tokens < 40.5, "100 less the 60 spent, and what an hour's rate gave back since")
            _ = try await holder.query("ROLLBACK", logger: db.logger)
            try await holder.close()
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
            try await expectNoHandOver(db, completing: laned[0], next: laned[1])
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

/// Limits on a whole queue or lane (`queue:NAME`, `lane:NAME`, or a prefix of either): every task
/// stage there that names no key of its own counts against it.
extension RateLimitTests {
    @Test func aQueueLimitBindsItsStagesThatNameNoKey() async throws {
        try await TestDatabase.with { db async throws in
            try await db.store.setRateLimit(RateLimit(key: "queue:mail", rate: 2, per: .seconds(3600)))
            let mail = try await db.store.enqueue((0..<4).map { job($0, queue: "mail") }).map(\.id)
            let own = try await db.store.enqueue([job(9, queue: "mail", rate: "own")])[0].id
            let other = try await db.store.enqueue([job(10)])[0].id
            let first = try await db.store.claimCountingTokens(queue: "mail", limit: 10, worker: "w")
            // The stage naming its own (unlimited) key is not bound by the queue's limit.
            #expect(Set(first.jobs.map(\.id)) == Set(mail.prefix(2) + [own]))
            #expect(first.nextToken != nil)
            #expect(try await db.store.claim(queue: "default", limit: 10, worker: "w").map(\.id) == [other])
            let waiting = try #require(try await db.store.job(mail[2]))
            #expect(waiting.waitingFor.map(\.kind).contains(.rateLimited))
            // Deleted, the limit frees its backlog at once.
            #expect(try await db.store.deleteRateLimit("queue:mail"))
            #expect(try await db.store.claim(queue: "mail", limit: 10, worker: "w").map(\.id) == Array(mail[2...]))
        }
    }

    /// A limit set while stages wait binds them too (they are re-keyed); one on a lane wins over
    /// the queue's.
    @Test func aNewQueueOrLaneLimitBindsTheBacklogAlreadyWaiting() async throws {
        try await TestDatabase.with { db async throws in
            let backlog = try await db.store.enqueue((0..<3).map { job($0, queue: "bulk") }).map(\.id)
            try await db.store.setRateLimit(RateLimit(key: "queue:bulk", rate: 1, per: .seconds(3600)))
            #expect(try await db.store.claim(queue: "bulk", limit: 10, worker: "w").map(\.id) == [backlog[0]])
            try await db.store.setRateLimit(RateLimit(key: "lane:tenant-*", rate: 1, per: .seconds(3600)))
            let laned = try await db.store.enqueue([job(5, queue: "bulk", lane: "tenant-1")])[0].id
            // The lane's bucket, not the (empty) queue's, admits it.
            #expect(try await db.store.claim(queue: "bulk", limit: 10, worker: "w").map(\.id) == [laned])
        }
    }

    /// Each lane under a prefix has a bucket of its own; the worker that frees a lane is not handed
    /// its next stage when the lane has no token (it waits for a claim).
    @Test func aLanePrefixGivesEachLaneItsOwnRate() async throws {
        try await TestDatabase.with { db async throws in
            try await db.store.setRateLimit(RateLimit(key: "lane:customer-*", rate: 1, per: .seconds(3600)))
            let one = try await db.store.enqueue((0..<2).map { job($0, lane: "customer-1") }).map(\.id)
            let two = try await db.store.enqueue([job(2, lane: "customer-2")])[0].id
            let free = try await db.store.enqueue([job(3, lane: "other")])[0].id
            let claimed = try await db.store.claim(queue: "default", limit: 10, worker: "w")
            #expect(Set(claimed.map(\.id)) == [one[0], two, free])
            try await expectNoHandOver(db, completing: one[0], next: one[1])
        }
    }

    /// A hop into a stage whose queue is limited is applied as an advance, and the worker is told:
    /// the stage starts with a token, which only a claim takes.
    @Test func aHopIntoALimitedQueueIsHandedOn() async throws {
        try await TestDatabase.with { db async throws in
            try await db.store.setRateLimit(RateLimit(key: "queue:mail", rate: 1, per: .seconds(3600)))
            let job = try await db.store.enqueue([
                NewJob(chain: ChainDefinition(input: 1, stages: [.task("t"), .task("t", queue: "mail")]))
            ])[0].id
            #expect(try await db.store.claim(queue: "default", limit: 1, worker: "w").map(\.id) == [job])
            let applied = try await db.store.apply(
                [Outcome(jobID: job, stage: 0, attempt: 1, transition: .hop(output: "2", queue: "mail"))], worker: "w")
            #expect(applied.applied == [job] && applied.handedOn == [job])
            #expect(applied.woken == ["mail"])
            let record = try #require(try await db.store.job(job))
            #expect(record.state == .available && record.stage == 1 && record.queue == "mail")
            #expect(try await db.store.claim(queue: "mail", limit: 10, worker: "w").map(\.id) == [job])
        }
    }

    @Test func aQueueOrLaneKeyMustNameOne() async throws {
        try await TestDatabase.with { db async throws in
            for key in ["queue:", "lane:"] {
                do {
                    try await db.store.setRateLimit(RateLimit(key: key, rate: 1, per: .seconds(1)))
                    Issue.record("\(key) accepted")
                } catch let BatonError.invalidChain(at, reason) {
                    #expect(at == "key" && reason.contains("names no queue or lane"))
                }
            }
        }
    }
}
