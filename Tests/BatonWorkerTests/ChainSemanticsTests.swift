import Baton
import BatonPostgres
import BatonTestSupport
import BatonWorker
import Foundation
import PostgresNIO
import Synchronization
import Testing

/// Chains run by a real worker against a real PostgreSQL.
@Suite(.timeLimit(.minutes(3)))
struct ChainSemanticsTests {
    @Test func eachStageGetsThePreviousOutput() async throws {
        try await TestDatabase.with { db async throws in
            try await withWorker(db, tasks: testTasks) { baton, _ async throws in
                let job = try await baton.enqueue(
                    Chain(input: 2).then(Add(n: 3)).then(Multiply(by: 4)).then(Add(n: -1)))
                #expect(try await job.result() == 19)
                let record = try await job.record()
                #expect(record.results.map(\.output) == [5, 20, 19])
                #expect(record.results.map(\.attempts) == [1, 1, 1])
            }
        }
    }

    /// A worker never runs a stage of a task it does not have (issue 20's reproduction): on one
    /// queue, a worker without `Multiply` runs every `Add` and neither hops into nor claims the
    /// `Multiply` after it, which waits, with one attempt allowed, for a worker that runs it.
    @Test func aStageWaitsForAWorkerThatRunsItsTask() async throws {
        try await TestDatabase.with { db async throws in
            var adding = TaskRegistry()
            adding.register(Add.self)
            try await withWorker(db, tasks: adding) { baton, _ async throws in
                var enqueued: [JobHandle<Int>] = []
                for n in 0..<10 {
                    enqueued.append(
                        try await baton.enqueue(Chain(input: n).then(Add(n: 1)).then(Multiply(by: 2)).retry(.none)))
                }
                let handles = enqueued
                try await eventually("every Add to be done and every Multiply to wait") {
                    var waiting = 0
                    for handle in handles {
                        let record = try await handle.record()
                        if record.stage == 1, record.state == .available { waiting += 1 }
                    }
                    return waiting == handles.count
                }
                try await withWorker(db, tasks: testTasks) { _, _ async throws in
                    for (n, handle) in handles.enumerated() { #expect(try await handle.result() == (n + 1) * 2) }
                }
                for handle in handles { #expect(try await handle.record().results.map(\.attempts) == [1, 1]) }
            }
        }
    }

    @Test func numbersPassThroughAChainExactly() async throws {
        try await TestDatabase.with { db async throws in
            try await withWorker(db, tasks: testTasks) { baton, _ async throws in
                let given = Measurement(
                    id: .max, amount: Decimal(string: "1234567890123456789.2")!,
                    reading: try JSONValue(parsing: #"{"raw": 123456789012345678901234567890, "scale": 1e-400}"#))
                let job = try await baton.enqueue(
                    Chain(input: given).then(Measure(), name: "measured").then(Restate(stage: "measured")))
                var expected = given
                expected.amount = Decimal(string: "1234567890123456789.3")!
                #expect(try await job.result() == expected)
                #expect(try await job.record().input == (try JSONValue(encoding: given)))
            }
        }
    }

    @Test func aStageReadsAnEarlierOutputByName() async throws {
        try await TestDatabase.with { db async throws in
            try await withWorker(db, tasks: testTasks) { baton, _ async throws in
                let chain = Chain(input: 1)
                    .then(Add(n: 1), name: "first")
                    .then(Multiply(by: 10), name: "second")
                    .then(AddNamed(stage: "first"))
                #expect(try await baton.enqueue(chain).result() == 22)
            }
        }
    }

    @Test func aGroupFansOutAndHandsOnItsOutputsInMemberOrder() async throws {
        try await TestDatabase.with { db async throws in
            try await withWorker(db, tasks: testTasks) { baton, _ async throws in
                let members = (1...5).map { Add(n: $0) }
                let fan = Chain(input: 10).group(members, name: "fan", lane: { $0 == 2 ? "group-lane" : nil })
                let job = try await baton.enqueue(fan)
                #expect(try await job.result() == [11, 12, 13, 14, 15])
                let summed = try await baton.enqueue(fan.then(Sum()))
                #expect(try await summed.result() == 65)
                #expect(try await db.store.members(of: job.id, stage: 0).count == 5)
            }
        }
    }

    /// Members of several stages (issue 48): each member's job runs its sub-chain in order, a
    /// laned stage in its lane, and the group hands on each member's last output, in member order.
    /// A member whose sub-chain holds a group fans out again; a failed sub-chain fails the group.
    @Test func aGroupOfSubChainsHandsOnEachMembersLastOutput() async throws {
        try await TestDatabase.with { db async throws in
            try await withWorker(db, tasks: testTasks) { baton, _ async throws in
                let fan = Chain(input: 10)
                    .group(
                        name: "fan",
                        [
                            { $0.then(Add(n: 1)).then(Add(n: 3)).then(Multiply(by: 2), lane: "sub-lane") },  // 28
                            { $0.then(Multiply(by: 3)) },  // 30
                            { $0.group([Add(n: 1), Add(n: 2)]).then(Sum()) },  // 23
                        ]
                    )
                    .then(Sum())
                let job = try await baton.enqueue(fan)
                #expect(try await job.result() == 81)
                let members = try #require(try await db.store.jobWithMembers(job.id)?.members)
                #expect(members.map(\.output) == [28, 30, 23])
                #expect(members.map(\.state) == [.completed, .completed, .completed])
                let first = try #require(try await db.store.job(members[0].id))
                #expect(first.results.map(\.output) == [11, 14, 28])
                #expect(first.lane == "sub-lane", "its last stage ran in its lane")

                let failing = ChainDefinition(
                    input: 1,
                    stages: [
                        .group([
                            .chain([.task("Add", args: ["n": 1]), .task("Refuse", retry: .none)]),
                            .task("Add", args: ["n": 1]),
                        ]),
                        .task("Sum"),
                    ])
                let id = try await baton.enqueue([NewJob(chain: failing)])[0].id
                let record = try await baton.waitUntilFinished(id, timeout: .seconds(20))
                #expect(record.state == .discarded)
                #expect(record.lastError?.contains("group member 0 was discarded: refused on purpose") == true)
            }
        }
    }

    /// A map (issue 48): a sub-chain per element, a laned stage in it, a map inside a map; the
    /// next stage gets the results in element order; an empty array goes straight on; something
    /// else than an array, or a failed element, fails the job with a clear error.
    @Test func aMapRunsItsStagesPerElementAndHandsOnTheResultsInOrder() async throws {
        try await TestDatabase.with { db async throws in
            try await withWorker(db, tasks: testTasks) { baton, _ async throws in
                let mapped = try await baton.enqueue(
                    Chain(input: [1, 2, 3, 4, 5])
                        .map { $0.then(Add(n: 1)).then(Multiply(by: 10), lane: "map-lane") }
                        .then(Sum()))
                #expect(try await mapped.result() == 200)
                let members = try #require(try await db.store.jobWithMembers(mapped.id)?.members)
                #expect(members.map(\.output) == [20, 30, 40, 50, 60])

                let nested = ChainDefinition(
                    input: [[1, 2], [3], []],
                    stages: [.map([.map([.task("Add", args: ["n": 1])]), .task("Sum")])])
                let nestedID = try await baton.enqueue([NewJob(chain: nested)])[0].id
                let nestedRecord = try await baton.waitUntilFinished(nestedID, timeout: .seconds(30))
                #expect(nestedRecord.state == .completed)
                #expect(nestedRecord.output == [5, 4, 0])

                let empty = try await baton.enqueue(Chain(input: [Int]()).map { $0.then(Add(n: 1)) }.then(Sum()))
                #expect(try await empty.result() == 0)

                // Over an array a stored property of the output holds, named by its key path.
                struct Numbers: Codable, Sendable { var values: [Int] }
                let overPath = try await baton.enqueue(
                    Chain(input: Numbers(values: [1, 2, 3])).map(\.values) { $0.then(Add(n: 1)) }.then(Sum()))
                #expect(try await overPath.result() == 9)

                // Known at enqueue when the map is the first stage, over the job's input...
                await #expect(
                    throws: BatonError.invalidChain(
                        path: "stages[0].map", reason: "map over output.items: a number found, not an array")
                ) {
                    try await baton.enqueue([
                        NewJob(
                            chain: ChainDefinition(
                                input: ["items": 7], stages: [.map(over: "output.items", [.task("Add")])]))
                    ])
                }
                // ...else a failure for good of the stage when it runs.
                let notArray = ChainDefinition(
                    input: 7, stages: [.task("Add", args: ["n": 0]), .map(over: "output", [.task("Add")])])
                let failing = ChainDefinition(input: [1, 2], stages: [.map([.task("Refuse", retry: .none)])])
                let tooMany = ChainDefinition(
                    input: 1,
                    stages: [
                        .group([
                            .task("Add", args: ["n": 1]), .task("Add", args: ["n": 2]), .task("Add", args: ["n": 3]),
                        ]),
                        .map(maxElements: 2, [.task("Add")]),
                    ])
                let ids = try await baton.enqueue([
                    NewJob(chain: notArray), NewJob(chain: failing), NewJob(chain: tooMany),
                ])
                .map(\.id)
                let refused = try await baton.waitUntilFinished(ids[0], timeout: .seconds(20))
                #expect(refused.state == .discarded)
                #expect(refused.lastError == "map over output: a number found, not an array")
                let failed = try await baton.waitUntilFinished(ids[1], timeout: .seconds(20))
                #expect(failed.state == .discarded)
                #expect(failed.lastError?.contains("refused on purpose") == true)
                let overLimit = try await baton.waitUntilFinished(ids[2], timeout: .seconds(20))
                #expect(overLimit.state == .discarded)
                #expect(overLimit.lastError == "map over output: 3 elements, more than its limit of 2")
            }
        }
    }

    @Test func aFailedAttemptIsRetriedAfterItsBackoffUntilItSucceeds() async throws {
        try await TestDatabase.with { db async throws in
            try await withWorker(db, tasks: testTasks) { baton, _ async throws in
                let job = try await baton.enqueue(
                    Chain(input: 7).then(Flaky(failures: 2)).retry(.constant(.milliseconds(300), attempts: 5)))
                #expect(try await job.result() == 7)
                let record = try await job.record()
                #expect(record.results.map(\.attempts) == [3])
                #expect(record.errors.map(\.attempt) == [1, 2])
                // The backoff was waited: each retry started no sooner than 300 ms after the failure.
                let started = try #require(record.attemptedAt)
                let lastFailure = try #require(ISO8601DateFormatter.fractional.date(from: record.errors[1].at))
                #expect(started.timeIntervalSince(lastFailure) >= 0.29)
            }
        }
    }

    /// Any stage reads the job's own input, not only the output of the stage before.
    @Test func aLaterStageReadsTheJobsInput() async throws {
        try await TestDatabase.with { db async throws in
            var tasks = testTasks
            tasks.register(name: "job-input") { _, input, context in
                ["job": try await context.jobInput(), "stage": input]
            }
            try await withWorker(db, tasks: tasks) { baton, _ async throws in
                let input: JSONValue = ["order": .number(JSONNumber("9007199254740993")!)]
                let job = try await baton.enqueue([
                    NewJob(
                        chain: ChainDefinition(
                            input: input, stages: [.task("job-input"), .task("job-input"), .task("job-input")]))
                ])[0]
                let record = try await baton.waitUntilFinished(job.id)
                #expect(record.results.map { $0.output["job"] } == [input, input, input])
                let context = StageContext(testingJob: 1, jobInput: input)
                #expect(try await context.jobInput() == input)
            }
        }
    }

    @Test func exhaustingItsAttemptsDiscardsTheJob() async throws {
        try await TestDatabase.with { db async throws in
            try await withWorker(db, tasks: testTasks) { baton, _ async throws in
                let job = try await baton.enqueue(
                    Chain(input: 1).then(Flaky(failures: 10)).retry(.constant(.milliseconds(10), attempts: 3))
                        .then(Add(n: 1)))
                await #expect(throws: BatonError.self) { try await job.result() }
                let record = try await job.record()
                #expect(record.state == .discarded)
                #expect(record.stage == 0)
                #expect(record.errors.map(\.attempt) == [1, 2, 3])
            }
        }
    }

    @Test func aPermanentFailureSkipsTheRetries() async throws {
        try await TestDatabase.with { db async throws in
            try await withWorker(db, tasks: testTasks) { baton, _ async throws in
                let job = try await baton.enqueue(Chain(input: 1).then(Refuse()).retry(.constant(.zero, attempts: 10)))
                _ = try await baton.waitUntilFinished(job.id)
                let record = try await job.record()
                #expect(record.state == .discarded)
                #expect(record.errors.map(\.error) == ["refused on purpose"])
            }
        }
    }

    /// A failure is a value: its code and details (numbers exact) are stored with the attempt and
    /// come back from `result()` as the error a caller switches on.
    @Test func aTypedFailureComesBackAsItWasThrown() async throws {
        try await TestDatabase.with { db async throws in
            let details = Charge.declined
            var tasks = TaskRegistry()
            tasks.register(Charge.self)
            tasks.register(name: "flaky") { _, _, context in
                if context.attempt == 1 { throw StageError("busy", code: "busy") }
                return 1
            }
            try await withWorker(db, tasks: tasks) { baton, _ async throws in
                let job = try await baton.enqueue(Chain(input: 1).then(Charge()))
                await #expect(
                    throws: BatonError.jobFailed(
                        id: job.id, state: .discarded,
                        error: StageError("card declined", code: "card_declined", details: details))
                ) { try await job.result() }
                let record = try await baton.job(job.id)
                #expect(record.errors.first?.code == "card_declined" && record.errors.first?.details == details)

                let retried = try await baton.enqueue([
                    NewJob(
                        chain: ChainDefinition(input: 1, stages: [.task("flaky", retry: .constant(.zero, attempts: 2))])
                    )
                ])[0]
                let done = try await baton.waitUntilFinished(retried.id)
                #expect(done.state == .completed)
                #expect(done.errors.map(\.code) == ["busy"] && done.errors.first?.details == nil)
            }
        }
    }

    @Test func aTasksFailedStatementIsRecordedAsPostgreSQLSaidIt() async throws {
        try await TestDatabase.with { db async throws in
            var tasks = TaskRegistry()
            tasks.register(name: "divide") { _, input, _ in
                try await db.pool.execute("SELECT 1 / 0")
                return input
            }
            try await withWorker(db, tasks: tasks) { baton, _ async throws in
                let job = try await baton.enqueue([
                    NewJob(
                        chain: ChainDefinition(
                            input: 1, stages: [.task("divide", retry: .constant(.zero, attempts: 1))]))
                ])[0]
                let record = try await baton.waitUntilFinished(job.id)
                #expect(record.state == .discarded)
                #expect(record.errors.map(\.error) == ["PostgreSQL: division by zero (SQLSTATE 22012)"])
            }
        }
    }

    @Test func aStageThatOutrunsItsTimeoutFails() async throws {
        try await TestDatabase.with { db async throws in
            try await withWorker(db, tasks: testTasks) { baton, _ async throws in
                // Two attempts, each timed out on its own.
                let job = try await baton.enqueue(
                    Chain(input: 1).then(
                        Hang(seconds: 60), retry: .constant(.zero, attempts: 2), timeout: .milliseconds(200)))
                let record = try await baton.waitUntilFinished(job.id, timeout: .seconds(20))
                #expect(record.state == .discarded)
                #expect(record.errors.map(\.error) == ["timed out after 0.2 seconds", "timed out after 0.2 seconds"])
            }
        }
    }

    @Test func aDiscardedMemberFailsItsGroup() async throws {
        try await TestDatabase.with { db async throws in
            try await withWorker(db, tasks: testTasks) { baton, _ async throws in
                let definition = ChainDefinition(
                    input: 1,
                    stages: [
                        .group([.task("Add", args: ["n": 1]), .task("Refuse", retry: .none)]), .task("Sum"),
                    ])
                let id = try await baton.enqueue([NewJob(chain: definition)])[0].id
                let record = try await baton.waitUntilFinished(id, timeout: .seconds(20))
                #expect(record.state == .discarded)
                #expect(record.lastError?.contains("group member 1 was discarded: refused on purpose") == true)
            }
        }
    }

    @Test func cancellingARunningJobStopsItsTask() async throws {
        try await TestDatabase.with { db async throws in
            try await withWorker(db, tasks: testTasks) { baton, worker async throws in
                let job = try await baton.enqueue(Chain(input: 1).then(Hang(seconds: 600)))
                try await eventually("the stage to start") { worker.runningJobs == [job.id] }
                #expect(try await job.cancel())
                try await eventually("the task to stop") { worker.runningJobs.isEmpty }
                #expect(try await job.record().state == .cancelled)
                await #expect(throws: BatonError.jobFailed(id: job.id, state: .cancelled, error: nil)) {
                    try await job.result()
                }
            }
        }
    }

    /// A map with `concurrency` 3 over 20 elements, each run a laned-free two-stage sub-chain:
    /// never more than 3 runs at once (the gauge counts its first stage's), 3 reached, every
    /// result in element order; the elements not yet started wait in `map_elements`, not as jobs.
    @Test func aMapWithABoundRunsAtMostThatManyAtOnce() async throws {
        try await TestDatabase.with { db async throws in
            var tasks = testTasks
            tasks.register(Gauge.self)
            try await withWorker(db, tasks: tasks) { baton, _ async throws in
                let job = try await baton.enqueue(
                    Chain(input: Array(0..<20)).map(concurrency: 3) { $0.then(Gauge()).then(Add(n: 1)) })
                try await eventually("the first runs to start") {
                    try await db.values(
                        "SELECT count(*)::int FROM \(unescaped: db.configuration.schema).map_elements", as: Int.self
                    )
                    .first ?? 0 > 0
                }
                #expect(try await job.result() == (0..<20).map { $0 * 2 + 1 })
                #expect(Gauge.state.withLock { $0.most } == 3)
                #expect(
                    try await db.values(
                        "SELECT count(*)::int FROM \(unescaped: db.configuration.schema).map_elements", as: Int.self)
                        == [0])
            }
        }
    }

    /// Cancelling a job whose map runs cancels every run not finished, and stops those running.
    @Test func cancellingAMapCancelsItsRuns() async throws {
        try await TestDatabase.with { db async throws in
            try await withWorker(db, tasks: testTasks) { baton, worker async throws in
                let job = try await baton.enqueue(Chain(input: [1, 2, 3]).map { $0.then(Hang(seconds: 600)) })
                try await eventually("the runs to start") { worker.runningJobs.count == 3 }
                #expect(try await job.cancel())
                try await eventually("the runs to stop") { worker.runningJobs.isEmpty }
                let members = try #require(try await db.store.jobWithMembers(job.id)?.members)
                #expect(members.map(\.state) == [.cancelled, .cancelled, .cancelled])
                #expect(try await job.record().state == .cancelled)
            }
        }
    }

    /// A map that goes on past failures (issue 48) runs every element and hands on each result
    /// in element order, `nil` where the run failed for good, with the failures; over nothing it
    /// hands on empty lists.
    @Test func aMapThatGoesOnHandsOnItsResultsAndFailuresInElementOrder() async throws {
        try await TestDatabase.with { db async throws in
            var tasks = testTasks
            tasks.register(name: "odd-only") { _, input, _ in
                let n = try input.decode(as: Int.self)
                if n % 2 == 0 { throw TaskFailure.permanent("even: \(n)") }
                return .number(JSONNumber(n * 10))
            }
            try await withWorker(db, tasks: tasks) { baton, _ async throws in
                let definition = ChainDefinition(
                    input: [1, 2, 3, 4, 5],
                    stages: [
                        .map(failures: .continue(stopAfter: nil), [.task("Add", args: ["n": 0]), .task("odd-only")])
                    ])
                let id = try await baton.enqueue([NewJob(chain: definition)])[0].id
                let record = try await baton.waitUntilFinished(id, timeout: .seconds(30))
                #expect(record.state == .completed)
                let output = try (record.output ?? .null).decode(as: MapResults<Int>.self)
                #expect(output.results == [10, nil, 30, nil, 50])
                #expect(
                    output.failures == [
                        MapFailure(index: 1, state: "discarded", error: "even: 2"),
                        MapFailure(index: 3, state: "discarded", error: "even: 4"),
                    ])

                let typed = try await baton.enqueue(
                    Chain(input: [Int]()).mapCollectingFailures { $0.then(Add(n: 1)) })
                #expect(try await typed.result() == MapResults<Int>(results: [], failures: []))
            }
        }
    }

    /// A map whose runs' outputs add up to more than PostgreSQL holds in one value (256 MiB) fails
    /// for good saying so, with every run completed and none left running; the worker goes on.
    /// (The limit used to fail the flush that finished the last run: under `continue`, the policy
    /// here, that run was left running and rescued without end. Under the default policy the
    /// gather is the same `map_output`.) The two large outputs are written inside PostgreSQL, while
    /// the last run waits: made by a task, this test spent half a minute of both cores on them.
    @Test func aMapWhoseOutputsAreTooLargeToGatherFailsSayingSo() async throws {
        try await TestDatabase.with { db async throws in
            let (release, released) = AsyncStream.makeStream(of: Void.self)
            var tasks = testTasks
            tasks.register(name: "last-waits") { _, input, _ in
                if input == 3 { for await _ in release { break } }
                return input
            }
            try await withWorker(db, tasks: tasks) { baton, _ async throws in
                let id = try await baton.enqueue([
                    NewJob(
                        chain: ChainDefinition(
                            input: [1, 2, 3], stages: [.map(failures: .continue(stopAfter: nil), [.task("last-waits")])]
                        ))
                ])[0].id
                let jobs = "\(db.configuration.schema).jobs"
                try await eventually("the first two runs to complete") {
                    try await db.values(
                        "SELECT count(*)::int FROM \(unescaped: jobs) WHERE parent_id = \(id) AND state = 'completed'",
                        as: Int.self) == [2]
                }
                // 140 MB each: together past the limit (2^28 - 1 bytes).
                try await db.pool.execute(
                    """
                    UPDATE \(unescaped: jobs)
                    SET results = jsonb_set(results, '{-1,output}', to_jsonb(repeat('x', 140000000)))
                    WHERE parent_id = \(id) AND state = 'completed'
                    """)
                released.yield()
                let record = try await baton.waitUntilFinished(id, timeout: .seconds(60))
                #expect(record.state == .discarded)
                let error = try #require(record.errors.last?.error)
                #expect(error.contains("the outputs of its 3 members add up to 280000005 bytes"), "\(error)")
                #expect(error.contains("more than PostgreSQL holds in one value"), "\(error)")
                let runs = try await db.values(
                    "SELECT state::text FROM \(unescaped: jobs) WHERE parent_id = \(id)", as: String.self)
                #expect(runs == ["completed", "completed", "completed"])
                #expect(try await baton.enqueue(Chain(input: 1).then(Add(n: 1))).result() == 2)
            }
        }
    }

    /// `stop_after`: a bounded map fails at its second failure and starts no more; a retry starts
    /// again only the runs that did not complete, at the stage they stopped on, then the elements
    /// never started, and the map completes with every result in element order.
    @Test func aMapStopsAfterItsFailuresAndARetryRunsOnlyWhatDidNotComplete() async throws {
        try await TestDatabase.with { db async throws in
            let refusing = Mutex(true)
            let runs = Mutex<[Int: Int]>([:])
            var tasks = testTasks
            tasks.register(name: "even-refused") { _, input, _ in
                let n = try input.decode(as: Int.self)
                runs.withLock { $0[n, default: 0] += 1 }
                if n % 2 == 0, refusing.withLock({ $0 }) { throw TaskFailure.permanent("even: \(n)") }
                return .number(JSONNumber(n))
            }
            try await withWorker(db, tasks: tasks) { baton, _ async throws in
                let definition = ChainDefinition(
                    input: .array((1...10).map { .number(JSONNumber($0)) }),
                    stages: [
                        .map(
                            concurrency: 1, failures: .continue(stopAfter: 2),
                            [.task("Add", args: ["n": 0]), .task("even-refused")])
                    ])
                let id = try await baton.enqueue([NewJob(chain: definition)])[0].id
                let failed = try await baton.waitUntilFinished(id, timeout: .seconds(30))
                #expect(failed.state == .discarded)
                #expect(failed.lastError == "2 runs failed (stop after 2); map element 3 was discarded: even: 4")
                #expect(runs.withLock { $0 } == [1: 1, 2: 1, 3: 1, 4: 1])
                let unstarted = try await db.values(
                    "SELECT count(*)::int FROM \(unescaped: db.configuration.schema).map_elements", as: Int.self)
                #expect(unstarted == [6])
                let stopped = try #require(try await db.store.jobWithMembers(id))
                #expect(stopped.job.unstartedElements == [0: 6])
                let runsBefore = stopped.members.map(\.id)

                refusing.withLock { $0 = false }
                #expect(try await baton.retry(id) != nil)
                let retried = try await baton.waitUntilFinished(id, timeout: .seconds(30))
                #expect(retried.state == .completed, "\(retried.errors)")
                let numbers = JSONValue.array((1...10).map { .number(JSONNumber($0)) })
                #expect(retried.output == ["results": numbers, "failures": []])
                #expect(runs.withLock { $0 } == [1: 1, 2: 2, 3: 1, 4: 2, 5: 1, 6: 1, 7: 1, 8: 1, 9: 1, 10: 1])
                // Each run that failed started again at the stage it stopped on, the same job.
                let members = try #require(try await db.store.jobWithMembers(id)?.members)
                #expect(.array(members.map { $0.output ?? .null }) == numbers)
                #expect(Array(members.map(\.id).prefix(4)) == runsBefore)
            }
        }
    }

    /// A run that fails by running out of time for its signal fails its map, as any failed run
    /// does (the wait's expiry used to leave the map waiting for ever).
    @Test func aRunWhoseSignalNeverComesFailsItsMap() async throws {
        try await TestDatabase.with { db async throws in
            try await withWorker(db, tasks: testTasks) { baton, _ async throws in
                let definition = ChainDefinition(
                    input: [1, 2], stages: [.map([.awaitSignal("never", timeout: .milliseconds(200))])])
                let id = try await baton.enqueue([NewJob(chain: definition)])[0].id
                let record = try await baton.waitUntilFinished(id, timeout: .seconds(30))
                #expect(record.state == .discarded)
                #expect(record.lastError?.hasPrefix("map element ") == true, "\(record.errors)")
                #expect(record.lastError?.contains("was discarded: no signal \"never\" within") == true)
            }
        }
    }

    @Test func anEnqueueInsideARolledBackTransactionLeavesNoJob() async throws {
        try await TestDatabase.with { db async throws in
            try await withWorker(db, tasks: testTasks) { baton, _ async throws in
                struct Rollback: Error {}
                let rolledBack = Mutex<Int64?>(nil)
                do {
                    try await db.pool.withTransaction(logger: db.logger) { connection in
                        let id = try await baton.enqueue(Chain(input: 1).then(Add(n: 1)), on: connection).id
                        rolledBack.withLock { $0 = id }
                        throw Rollback()
                    }
                } catch {}
                let missing = try #require(rolledBack.withLock { $0 })
                #expect(try await db.store.job(missing) == nil)
                let committed = try await db.pool.withTransaction(logger: db.logger) { connection in
                    try await baton.enqueue(Chain(input: 1).then(Add(n: 1)), on: connection)
                }
                #expect(try await committed.result() == 2)
            }
        }
    }
}

extension ISO8601DateFormatter {
    nonisolated(unsafe) static let fractional: ISO8601DateFormatter = {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter
    }()
}

/// Jobs written straight into the schema's `enqueue` function, as the README shows with psql.
@Suite(.timeLimit(.minutes(3)))
struct SQLEnqueueTests {
    @Test func aChainEnqueuedInSQLRunsAndAnUnreadableOneFailsAlone() async throws {
        try await TestDatabase.with { db async throws in
            try await withWorker(db, tasks: testTasks) { baton, _ async throws in
                let schema = db.configuration.schema
                let ids = try await db.values(
                    """
                    SELECT id FROM \(unescaped: schema).enqueue('[
                        {"input": {"n": 1}, "chain": [{"task": "sleep", "args": {"ms": 5}}, {"task": "noop", "lane": "c-42"}]},
                        {"input": 2, "chain": [{"nope": true}]}
                    ]')
                    """, as: Int64.self)
                #expect(ids.count == 2)
                let good = try await baton.waitUntilFinished(ids[0], timeout: .seconds(20))
                #expect(good.state == .completed)
                #expect(good.output == ["n": 1])
                let bad = try await baton.waitUntilFinished(ids[1], timeout: .seconds(20))
                #expect(bad.state == .discarded)
                #expect(bad.lastError?.contains("does not decode") == true)
            }
        }
    }
}

/// Declines, for good, with a code and details.
struct Charge: BatonTask {
    static let declined: JSONValue = [
        "reason": "insufficient_funds", "amount": .number(JSONNumber("12345678901234567890.01")!),
    ]

    func run(_ input: Int, context: StageContext) async throws -> Int {
        throw TaskFailure.permanent("card declined", code: "card_declined", details: Self.declined)
    }
}

/// Counts how many of its runs are under way at once (`most`), each holding 30 ms; doubles.
struct Gauge: BatonTask {
    static let state = Mutex((now: 0, most: 0))
    func run(_ input: Int, context: StageContext) async throws -> Int {
        Self.state.withLock { state in
            state.now += 1
            state.most = max(state.most, state.now)
        }
        defer { Self.state.withLock { $0.now -= 1 } }
        try await Task.sleep(for: .milliseconds(30))
        return input * 2
    }
}
