import Baton
import BatonPostgres
import BatonTestSupport
import Foundation
import Testing

/// Fair share (issue 49): in a queue where jobs name a fairness key, claims take the keys' stages
/// in turns (`ready.turn`, migration 28), decided by the database when each stage becomes ready.
@Suite(.timeLimit(.minutes(3)))
struct FairShareTests {
    func jobs(
        _ count: Int, key: String?, weight: Double? = nil, priority: Int = 0, runAt: Date? = nil,
        queue: String = "fair"
    ) -> [NewJob] {
        (0..<count).map { _ in
            NewJob(
                chain: ChainDefinition(input: nil, stages: [.task("noop")]), queue: queue, priority: priority,
                runAt: runAt, fairKey: key, fairWeight: weight)
        }
    }

    /// How many of `claimed` each key's jobs are.
    func shares(_ claimed: [ClaimedJob], _ keys: [Int64: String]) -> [String: Int] {
        claimed.reduce(into: [:]) { counts, job in counts[keys[job.id] ?? "?", default: 0] += 1 }
    }

    /// A key's flood does not hold back another's trickle: enqueued after 200 of `a`'s, `b`'s 10
    /// are claimed among the first 20, one of each key in turn; a key alone takes every slot.
    @Test func aFloodDoesNotHoldBackAnotherKeysTrickle() async throws {
        try await TestDatabase.with { db async throws in
            var keys: [Int64: String] = [:]
            for batch in [jobs(100, key: "a"), jobs(100, key: "a"), jobs(10, key: "b")] {
                for (job, enqueued) in zip(batch, try await db.store.enqueue(batch)) { keys[enqueued.id] = job.fairKey }
            }
            // Each waits for its key's turns, and says so.
            let b = try #require(keys.first { $0.value == "b" }?.key)
            #expect(
                try await db.store.job(b)?.waitingFor.filter { $0.kind == .fairShare }.map(\.message) == [
                    "queue \"fair\" takes the stages of 2 keys in turns (fair share); its key \"b\" has 10 stages "
                        + "waiting, this one among them"
                ])
            // The operator sees the keys with stages waiting, most first.
            let backlog = try await db.store.fairShareBacklogs()
            #expect(backlog["fair"]?.keys == 2)
            #expect(backlog["fair"]?.top.map { "\($0.key) \($0.stages)" } == ["a 200", "b 10"])
            #expect(
                try await db.store.queueSummaries(finishedSince: Date()).first { $0.name == "fair" }?.fairShare
                    == backlog["fair"])
            let first = try await db.store.claim(queue: "fair", limit: 20, worker: "w")
            #expect(shares(first, keys) == ["a": 10, "b": 10])
            let after = try await db.store.fairShareBacklogs()["fair"]
            #expect(after?.top.map { "\($0.key) \($0.stages)" } == ["a 190"])
            // Who holds the workers' slots now.
            #expect(after?.running == 20)
            #expect(after?.runningTop.map { "\($0.key) \($0.stages)" } == ["a 10", "b 10"])
            // `b` has nothing left: `a` alone takes every slot.
            let rest = try await db.store.claim(queue: "fair", limit: 200, worker: "w")
            #expect(shares(rest, keys) == ["a": 190])
        }
    }

    /// Two keys with work both take half of each claim, whichever came first; stages without a
    /// key in a fair queue share one key of their own.
    @Test func keysWithWorkShareEachClaim() async throws {
        try await TestDatabase.with { db async throws in
            var keys: [Int64: String] = [:]
            for batch in [jobs(100, key: "a"), jobs(100, key: nil), jobs(100, key: "b")] {
                for (job, enqueued) in zip(batch, try await db.store.enqueue(batch)) {
                    keys[enqueued.id] = job.fairKey ?? ""
                }
            }
            for _ in 0..<10 {
                let claimed = try await db.store.claim(queue: "fair", limit: 9, worker: "w")
                #expect(shares(claimed, keys) == ["a": 3, "": 3, "b": 3])
            }
        }
    }

    /// Weights: while keys have stages ready, each takes turns in proportion to its jobs' weight,
    /// 4:2:1 here, in every claim, across the key's batches; a weight that cannot be is refused
    /// naming `fair_weight`, and the weight a job was given is the one it is read with.
    @Test func keysTakeTurnsInProportionToTheirWeight() async throws {
        try await TestDatabase.with { db async throws in
            var keys: [Int64: String] = [:]
            let batches = [
                jobs(100, key: "a", weight: 2), jobs(100, key: "b"), jobs(100, key: "c", weight: 0.5),
                jobs(100, key: "a", weight: 2),
            ]
            for batch in batches {
                for (job, enqueued) in zip(batch, try await db.store.enqueue(batch)) { keys[enqueued.id] = job.fairKey }
            }
            for _ in 0..<5 {
                let claimed = try await db.store.claim(queue: "fair", limit: 14, worker: "w")
                #expect(shares(claimed, keys) == ["a": 8, "b": 4, "c": 2])
            }
            let a = try #require(keys.first { $0.value == "a" }?.key)
            #expect(try await db.store.job(a)?.fairWeight == 2)

            for weight in [0, -1, 1000.5, .nan, .infinity] {
                await #expect {
                    try await db.store.enqueue(jobs(1, key: "a", weight: weight))
                } throws: { error in
                    guard case BatonError.invalidChain(let path, _) = error else { return false }
                    return path == "fair_weight"
                }
            }
        }
    }

    /// Priorities come first: a stage of a higher priority goes before every stage of a lower one,
    /// whatever its key; keys take turns within a priority. A delayed stage, once due, takes its
    /// key's turn as a new one would: after its key's last, not at the head of the queue.
    @Test func prioritiesComeFirstAndKeysTakeTurnsWithinOne() async throws {
        try await TestDatabase.with { db async throws in
            var keys: [Int64: String] = [:]
            let later = Date().addingTimeInterval(3600)
            let batches = [
                jobs(20, key: "a"), jobs(5, key: "b", priority: -1), jobs(5, key: "c"),
                jobs(10, key: "c", runAt: later),
            ]
            for batch in batches {
                for (job, enqueued) in zip(batch, try await db.store.enqueue(batch)) {
                    keys[enqueued.id] = job.fairKey.map { $0 + (job.runAt == nil ? "" : " later") }
                }
            }
            let first = try await db.store.claim(queue: "fair", limit: 5, worker: "w")
            #expect(shares(first, keys) == ["b": 5])
            let second = try await db.store.claim(queue: "fair", limit: 6, worker: "w")
            #expect(shares(second, keys) == ["a": 3, "c": 3])
            // Due (their hour taken as passed): the delayed stages of c queue behind c's last (2
            // left), in turn with a's.
            let schema = db.configuration.schema
            try await db.pool.execute(
                "UPDATE \(unescaped: schema).jobs SET run_at = now() - interval '1 second' WHERE state = 'scheduled'")
            #expect(try await db.store.promoteDue(limit: 100, within: nil).promoted == 10)
            let third = try await db.store.claim(queue: "fair", limit: 12, worker: "w")
            #expect(shares(third, keys) == ["a": 6, "c": 2, "c later": 4])
        }
    }

    /// Rate limits compose: a limited stage starts only with a token, whatever its key's turn, and
    /// another key's stages do not wait for that bucket; keys whose stages name one rate key take
    /// turns for its tokens.
    @Test func rateLimitsBindWhateverTheTurnAndKeysTakeTurnsForTokens() async throws {
        try await TestDatabase.with { db async throws in
            try await db.store.setRateLimit(RateLimit(key: "partner", rate: 4, per: .seconds(3600)))
            func limited(_ count: Int, key: String) -> [NewJob] {
                (0..<count).map { _ in
                    NewJob(
                        chain: ChainDefinition(input: nil, stages: [.task("noop", rate: "partner")]), queue: "fair",
                        fairKey: key)
                }
            }
            var keys: [Int64: String] = [:]
            for batch in [limited(10, key: "a"), limited(10, key: "b"), jobs(10, key: "c")] {
                for (job, enqueued) in zip(batch, try await db.store.enqueue(batch)) { keys[enqueued.id] = job.fairKey }
            }
            let claimed = try await db.store.claim(queue: "fair", limit: 30, worker: "w")
            #expect(shares(claimed, keys) == ["a": 2, "b": 2, "c": 10])
            #expect(try await db.store.claim(queue: "fair", limit: 30, worker: "w").isEmpty, "no token left")
        }
    }

    /// A queue that takes its jobs' keys from their metadata: each job naming none takes the text
    /// there (one naming its own keeps it), and the keys take turns; a job with nothing there
    /// shares the key "" and says why it waits so; a number there refuses the batch, naming the
    /// job and the field; cleared, jobs name their own again.
    @Test func aQueueTakesItsJobsKeysFromTheirMetadata() async throws {
        try await TestDatabase.with { db async throws in
            try await db.store.setFairKeySource(try FairKeySource(parsing: "{{ metadata.tenant }}"), queue: "fair")
            #expect(try await db.store.fairShareBacklogs()["fair"]?.keyFrom == "metadata.tenant")
            func tenant(_ count: Int, _ tenant: JSONValue?, key: String? = nil) -> [NewJob] {
                (0..<count).map { _ in
                    NewJob(
                        chain: ChainDefinition(input: nil, stages: [.task("noop")]), queue: "fair",
                        metadata: tenant.map { ["tenant": $0] } ?? [:], fairKey: key)
                }
            }
            var keys: [Int64: String] = [:]
            for batch in [tenant(100, "a"), tenant(10, "b"), tenant(10, "a", key: "c"), tenant(1, nil)] {
                for enqueued in try await db.store.enqueue(batch) {
                    keys[enqueued.id] = try await db.store.job(enqueued.id)?.fairKey ?? ""
                }
            }
            #expect(Set(keys.values) == ["a", "b", "c", ""])
            let keyless = try #require(keys.first { $0.value == "" }?.key)
            #expect(
                try await db.store.job(keyless)?.waitingFor.first { $0.kind == .fairShare }?.message
                    == "queue \"fair\" takes the stages of 4 keys in turns (fair share); it has no key at "
                    + "metadata.tenant, so the key \"\" of stages without one has 1 stages waiting, this one among them"
            )
            let claimed = try await db.store.claim(queue: "fair", limit: 16, worker: "w")
            #expect(shares(claimed, keys) == ["a": 5, "b": 5, "c": 5, "": 1])

            await #expect {
                try await db.store.enqueue(tenant(1, "d") + tenant(1, 42))
            } throws: { error in
                guard let refused = error as? FairKeyNotText else { return false }
                return refused.index == 1 && refused.path == "metadata.tenant"
                    && refused.description.contains("where this job holds a number")
            }
            try await db.store.setFairKeySource(nil, queue: "fair")
            let own = try await db.store.enqueue(tenant(1, "d"))[0]
            #expect(try await db.store.job(own.id)?.fairKey == nil)
            for bad in ["output.tenant", "metadata", "metadata.", "tenant", "metadata.a b"] {
                #expect(throws: BatonError.self) { try FairKeySource(parsing: bad) }
            }
        }
    }

    /// A queue whose jobs name no key claims in the order its stages became ready, as before:
    /// no row of its stages has a turn of its own.
    @Test func aQueueWithoutKeysKeepsItsOrder() async throws {
        try await TestDatabase.with { db async throws in
            let enqueued = try await db.store.enqueue(jobs(50, key: nil, queue: "plain"))
            _ = try await db.store.enqueue(jobs(5, key: "a"))
            let claimed = try await db.store.claim(queue: "plain", limit: 50, worker: "w")
            #expect(claimed.map(\.id) == enqueued.map(\.id))
            let schema = db.configuration.schema
            #expect(
                try await db.values(
                    "SELECT queue FROM \(unescaped: schema).fair_queues ORDER BY queue", as: String.self) == ["fair"])
        }
    }

    /// A minute's claims per key from two workers add up, and a minute keeps the 20 keys with the
    /// most (`fair_starts_added`): a row stays small however many tenants there are.
    @Test func aMinuteAddsItsKeysStartsAndKeepsTheBusiest() async throws {
        try await TestDatabase.with { db async throws in
            func added(_ a: JSONValue?, _ b: JSONValue?) async throws -> JSONValue? {
                try await db.values(
                    """
                    SELECT \(unescaped: db.configuration.schema).fair_starts_added(
                        \(a?.jsonText)::jsonb, \(b?.jsonText)::jsonb)::text
                    """, as: String?.self
                ).first?.map { try JSONValue(parsing: $0) }
            }
            #expect(try await added(["a": 1, "b": 2], ["b": 3, "c": 1]) == ["a": 1, "b": 5, "c": 1])
            #expect(try await added(nil, ["b": 3]) == ["b": 3])
            #expect(try await added(["b": 3], nil) == ["b": 3])
            var many: [String: JSONValue] = [:]
            for index in 1...25 { many["k\(index)"] = .number(JSONNumber(index)) }
            let kept = try #require(try await added(.object(many), ["k1": 100]))
            #expect(kept.objectValue?.keys.sorted() == (["k1"] + (7...25).map { "k\($0)" }).sorted())
            #expect(kept["k1"] == 101)
        }
    }
}
