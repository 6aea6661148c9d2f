import Baton
import BatonPostgres
import BatonTestSupport
import BatonWorker
import Foundation
import LocalPostgres
import PostgresNIO
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Workers in processes of their own: lanes across processes, SIGKILL, SIGSTOP, SIGTERM.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct ProcessTests {
    func count(_ db: TestDatabase, _ condition: String) async throws -> Int {
        try await db.values(
            PostgresQuery(unsafeSQL: "SELECT count(*)::int FROM \(db.configuration.schema).jobs WHERE \(condition)"),
            as: Int.self)[0]
    }

    func record(_ args: JSONValue, lane: String? = nil, attempts: Int = 1) -> StageSpec {
        .task("record", args: args, lane: lane, retry: .constant(.milliseconds(10), attempts: attempts))
    }

    @Test func lanesHoldAcrossWorkerProcesses() async throws {
        try await TestDatabase.with { db async throws in
            try await db.createRunsTable()
            let lanes = 12
            let jobs = (0..<240).map { index in
                NewJob(
                    chain: ChainDefinition(
                        input: .number(index),
                        stages: [
                            record(["min_ms": 0, "max_ms": 4]),
                            // Every 40th job always fails: after 3 attempts it is discarded and must release its lane.
                            record(
                                ["min_ms": 1, "max_ms": 8, "fail_percent": index % 40 == 7 ? 100 : 20],
                                lane: "lane-\(index % lanes)", attempts: 3),
                        ]))
            }
            let workers = [
                try await WorkerProcess(url: db.url, queue: "default:8"),
                try await WorkerProcess(url: db.url, queue: "default:8"),
            ]
            for slice in stride(from: 0, to: jobs.count, by: 40) {
                _ = try await db.store.enqueue(Array(jobs[slice..<slice + 40]))
            }
            try await eventually(timeout: .seconds(120), "every job to finish") {
                try await count(db, "state NOT IN ('completed', 'discarded')") == 0
            }
            for worker in workers { worker.signal(SIGTERM) }
            for worker in workers { #expect(try await worker.waitForExit() == 0) }

            let schema = db.configuration.schema
            // The jobs made to fail are discarded; the ones behind them in their lanes still ran.
            let forced = try await db.values(
                "SELECT state::text FROM \(unescaped: schema).jobs WHERE (input::text)::int % 40 = 7", as: String.self)
            #expect(forced == Array(repeating: "discarded", count: 6))
            #expect(try await count(db, "state = 'completed'") >= 220)
            // Both processes ran ordered stages.
            #expect(
                try await db.values(
                    "SELECT count(DISTINCT pid)::int FROM \(unescaped: schema).test_runs WHERE stage = 1", as: Int.self)
                    == [2])
            // Never two runs of one lane at once.
            #expect(try await db.laneOverlaps(stage: 1) == 0)
            // FIFO: in each lane, runs (retries included) follow the order the stages entered the
            // lane, and a job's retries all come before the next job starts.
            let outOfOrder = try await db.values(
                """
                SELECT count(*)::int FROM (
                    SELECT j.lane_ready_at, j.id,
                           lag(j.lane_ready_at) OVER w AS previous_ready, lag(j.id) OVER w AS previous_id
                    FROM \(unescaped: schema).test_runs r JOIN \(unescaped: schema).jobs j ON j.id = r.job
                    WHERE r.stage = 1
                    WINDOW w AS (PARTITION BY r.lane ORDER BY r.started_at)) x
                WHERE (lane_ready_at, id) < (previous_ready, previous_id)
                """, as: Int.self)
            #expect(outOfOrder == [0])
            // Retries happened, and the retrying job held its lane meanwhile (no run of another
            // job of that lane between its attempts).
            #expect(
                try await db.values(
                    "SELECT count(*)::int FROM \(unescaped: schema).test_runs WHERE failed", as: Int.self)[0] > 18)
        }
    }

    /// Lanes of width 3 across worker processes: three of each run at once while a gate holds
    /// them, never a fourth; a worker killed while it holds slots gives them back after its lease,
    /// and every stage completes on the others.
    @Test func aWiderLaneHoldsItsWidthAcrossProcessesAndThroughAKill() async throws {
        try await TestDatabase.with { db async throws in
            try await db.createRunsTable()
            try await db.store.setLaneWidth(3, lane: "wide-*")
            let gate = try await Gate(db)
            let doomed = try await WorkerProcess(url: db.url, queue: "default:8", lease: .seconds(1))
            let jobs = (0..<24).map { index in
                NewJob(
                    chain: ChainDefinition(
                        input: .number(index),
                        stages: [
                            record(
                                ["gate": .number(gate.key), "min_ms": 0, "max_ms": 5], lane: "wide-\(index % 2)",
                                attempts: 3)
                        ]))
            }
            _ = try await db.store.enqueue(jobs)
            try await eventually("three stages of each lane to run") {
                try await count(db, "state = 'running'") == 6
            }
            #expect(try await count(db, "state = 'waiting'") == 18)
            doomed.signal(SIGKILL)
            _ = try await doomed.waitForExit()
            let workers = [
                try await WorkerProcess(url: db.url, queue: "default:8", lease: .seconds(1)),
                try await WorkerProcess(url: db.url, queue: "default:8", lease: .seconds(1)),
            ]
            try await gate.open()
            try await eventually(timeout: .seconds(60), "every job to complete") {
                try await count(db, "state = 'completed'") == 24
            }
            for worker in workers { worker.signal(SIGTERM) }
            for worker in workers { #expect(try await worker.waitForExit() == 0) }

            let schema = db.configuration.schema
            // The killed worker's six stages ran again elsewhere, after its lease.
            #expect(try await count(db, "attempt = 2") == 6)
            // Never more than three runs of a lane at once (each run lies inside the time its
            // stage held the lane): the most that were running when any one of them started.
            let most = try await db.values(
                """
                SELECT max((SELECT count(*) FROM \(unescaped: schema).test_runs o
                                    WHERE o.lane = r.lane AND o.started_at <= r.started_at
                                      AND o.ended_at > r.started_at))::int
                FROM \(unescaped: schema).test_runs r GROUP BY r.lane ORDER BY r.lane
                """, as: Int.self)
            #expect(most.count == 2)
            #expect(most.allSatisfy { $0 <= 3 }, "\(most)")
        }
    }

    /// A rate limit across worker processes: over any stretch of time, the stages of a key claimed
    /// (the instant each took its token, recorded by the database) never exceed the rate times the
    /// stretch plus the burst; every stage runs, none spends an attempt waiting.
    @Test func aRateLimitHoldsAcrossProcesses() async throws {
        try await TestDatabase.with { db async throws in
            try await db.createRunsTable()
            try await db.store.setRateLimit(RateLimit(key: "partner", rate: 20, per: .seconds(1), burst: 5))
            let workers = [
                try await WorkerProcess(url: db.url, queue: "default:8"),
                try await WorkerProcess(url: db.url, queue: "default:8"),
            ]
            let jobs = (0..<60).map { index in
                NewJob(
                    chain: ChainDefinition(
                        input: .number(index),
                        stages: [.task("record", args: ["min_ms": 0, "max_ms": 3], retry: .none, rate: "partner")]))
            }
            _ = try await db.store.enqueue(jobs)
            try await eventually(timeout: .seconds(60), "every job to complete") {
                try await count(db, "state = 'completed'") == 60
            }
            for worker in workers { worker.signal(SIGTERM) }
            for worker in workers { #expect(try await worker.waitForExit() == 0) }
            let schema = db.configuration.schema
            #expect(try await count(db, "attempt = 1") == 60)
            // For each claim, the claims in the second from it: at most 20 × 1 + 5.
            let most = try await db.values(
                """
                SELECT max((SELECT count(*) FROM \(unescaped: schema).test_runs o
                            WHERE o.claimed_at >= r.claimed_at AND o.claimed_at < r.claimed_at + interval '1 second'))::int
                FROM \(unescaped: schema).test_runs r
                """, as: Int.self)[0]
            #expect(most <= 25, "\(most) claims within a second")
            // And the limit was what paced them: 60 stages took at least (60 − 5) / 20 s.
            let span = try await db.values(
                "SELECT extract(epoch FROM max(claimed_at) - min(claimed_at))::float8 FROM \(unescaped: schema).test_runs",
                as: Double.self)[0]
            #expect(span >= 2.7, "\(span) s")
        }
    }

    /// A worker killed while it runs rate-limited stages takes no token with it: a token is a
    /// start, the stages it started run again after its lease with tokens of their own, and the
    /// key goes on at its rate.
    @Test func aKilledWorkerLeaksNoRateToken() async throws {
        try await TestDatabase.with { db async throws in
            try await db.createRunsTable()
            try await db.store.setRateLimit(RateLimit(key: "partner", rate: 4, per: .seconds(1), burst: 4))
            let gate = try await Gate(db)
            let doomed = try await WorkerProcess(url: db.url, queue: "default:4", lease: .seconds(1))
            let jobs = (0..<12).map { index in
                NewJob(
                    chain: ChainDefinition(
                        input: .number(JSONNumber(index)),
                        stages: [
                            .task(
                                "record", args: ["gate": .number(JSONNumber(gate.key))],
                                retry: .constant(.milliseconds(10), attempts: 3), rate: "partner")
                        ]))
            }
            _ = try await db.store.enqueue(jobs)
            // The burst's four tokens spent by the doomed worker, its four stages held at the gate.
            try await eventually("the doomed worker to start four stages") {
                try await count(db, "state = 'running'") == 4
            }
            doomed.signal(SIGKILL)
            _ = try await doomed.waitForExit()
            try await gate.open()
            let survivor = try await WorkerProcess(url: db.url, queue: "default:8", lease: .seconds(1))
            try await eventually(timeout: .seconds(60), "every job to complete") {
                try await count(db, "state = 'completed'") == 12
            }
            survivor.signal(SIGTERM)
            #expect(try await survivor.waitForExit() == 0)
            // The four killed stages ran again, once each.
            #expect(try await count(db, "attempt = 2") == 4)
            #expect(try await count(db, "attempt = 1") == 8)
            // Every start the survivor made, its four retries among them, kept to the rate.
            let schema = db.configuration.schema
            let most = try await db.values(
                """
                SELECT max((SELECT count(*) FROM \(unescaped: schema).test_runs o
                            WHERE o.claimed_at >= r.claimed_at AND o.claimed_at < r.claimed_at + interval '1 second'))::int
                FROM \(unescaped: schema).test_runs r
                """, as: Int.self)[0]
            #expect(most <= 8, "\(most) claims within a second")
        }
    }

    /// A worker killed in the middle of a map (issue 48): the runs it was running go back after its
    /// lease and run again elsewhere, the others run once, and the map hands on every element's
    /// result in element order; nothing is lost, nothing runs twice but what the kill cut.
    @Test func aMapGoesOnThroughAKilledWorker() async throws {
        try await TestDatabase.with { db async throws in
            try await db.createRunsTable()
            let gate = try await Gate(db)
            let doomed = try await WorkerProcess(url: db.url, queue: "default:8", lease: .seconds(1))
            let elements: [JSONValue] = (0..<40).map { .string("element-\($0)") }
            let id = try await db.store.enqueue([
                NewJob(
                    chain: ChainDefinition(
                        input: .array(elements),
                        stages: [
                            .map([record(["gate": .number(gate.key)], attempts: 3), record([:], attempts: 3)])
                        ]))
            ])[0].id
            try await eventually("eight runs to be running") {
                try await count(db, "state = 'running' AND parent_id IS NOT NULL") == 8
            }
            doomed.signal(SIGKILL)
            _ = try await doomed.waitForExit()
            let workers = [
                try await WorkerProcess(url: db.url, queue: "default:8", lease: .seconds(1)),
                try await WorkerProcess(url: db.url, queue: "default:8", lease: .seconds(1)),
            ]
            try await gate.open()
            try await eventually(timeout: .seconds(60), "the map to complete") {
                try await db.store.job(id)?.state == .completed
            }
            for worker in workers { worker.signal(SIGTERM) }
            for worker in workers { #expect(try await worker.waitForExit() == 0) }
            #expect(try await db.store.job(id)?.output == .array(elements))
            // Each run's first stage ended once (a run records as it ends): the eight the kill cut
            // (held by the gate, so they never ended) on their second attempt, the others on their first.
            let schema = db.configuration.schema
            let runs = try await db.values(
                """
                SELECT count(*)::int || '/' || count(DISTINCT r.job) || '/' || count(*) FILTER (WHERE r.attempt = 2)
                FROM \(unescaped: schema).test_runs r
                JOIN \(unescaped: schema).jobs m ON m.id = r.job AND m.parent_id = \(id)
                WHERE r.stage = 0
                """, as: String.self)
            #expect(runs == ["40/40/8"], "ended / runs / on a second attempt: \(runs)")
        }
    }

    @Test func aKilledWorkersStageFinishesElsewhereAfterTheLease() async throws {
        try await TestDatabase.with { db async throws in
            try await db.createRunsTable()
            let doomed = try await WorkerProcess(url: db.url, lease: .seconds(1))
            let id = try await db.store.enqueue([
                NewJob(chain: ChainDefinition(input: "payload", stages: [record(["min_ms": 1500], attempts: 3)]))
            ])[0].id
            try await eventually("the stage to start") { try await db.store.job(id)?.state == .running }
            doomed.signal(SIGKILL)
            _ = try await doomed.waitForExit()
            let survivor = try await WorkerProcess(url: db.url, lease: .seconds(1))
            try await eventually(timeout: .seconds(60), "the job to complete") {
                try await db.store.job(id)?.state == .completed
            }
            let job = try #require(try await db.store.job(id))
            #expect(job.output == "payload")
            #expect(job.results.map(\.attempts) == [2])
            #expect(job.errors.count == 1)
            #expect(job.errors[0].error.hasPrefix("worker lost"))
            survivor.signal(SIGTERM)
            #expect(try await survivor.waitForExit() == 0)
        }
    }

    @Test func aPausedWorkerThatWakesAfterItsLeaseCannotFinishTheJobTwice() async throws {
        try await TestDatabase.with { db async throws in
            try await db.createRunsTable()
            // The stage runs until the gate opens: the pause falls inside it whatever the timing.
            let gate = try await Gate(db)
            let sleeper = try await WorkerProcess(url: db.url, lease: .seconds(1))
            let id = try await db.store.enqueue([
                NewJob(chain: ChainDefinition(input: 1, stages: [record(["gate": .number(gate.key)], attempts: 3)]))
            ])[0].id
            try await eventually("the stage to start") { try await db.store.job(id)?.state == .running }
            sleeper.signal(SIGSTOP)
            let rescuer = try await WorkerProcess(url: db.url, lease: .seconds(1))
            try await eventually(timeout: .seconds(60), "the rescuer to run the job's second attempt") {
                let job = try await db.store.job(id)
                return job?.state == .running && job?.attempt == 2
            }
            try await gate.open()
            try await eventually(timeout: .seconds(60), "the rescued job to complete") {
                try await db.store.job(id)?.state == .completed
            }
            sleeper.signal(SIGCONT)
            // The sleeper finishes its run (at least once: both ran) but its outcome is refused.
            try await eventually(timeout: .seconds(30), "the sleeper's run to end") {
                try await db.values(
                    "SELECT count(*)::int FROM \(unescaped: db.configuration.schema).test_runs", as: Int.self) == [2]
            }
            sleeper.signal(SIGTERM)
            rescuer.signal(SIGTERM)
            _ = try await sleeper.waitForExit()
            _ = try await rescuer.waitForExit()
            let job = try #require(try await db.store.job(id))
            #expect(job.state == .completed)
            #expect(job.results.count == 1)
            #expect(job.results[0].attempts == 2)
        }
    }

    /// A cancel made in one process stops the stage running in a worker process: the worker lets
    /// go of the job (its heartbeat no longer lists it) long before the stage would have ended.
    @Test func aCancelStopsAStageRunningInAnotherProcess() async throws {
        try await TestDatabase.with { db async throws in
            let worker = try await WorkerProcess(url: db.url, lease: .seconds(2))
            let id = try await db.store.enqueue([
                NewJob(chain: ChainDefinition(input: 1, stages: [.task("sleep", args: ["ms": 60_000])]))
            ])[0].id
            func held() async throws -> [Int64] {
                try await db.values(
                    "SELECT unnest(holds) FROM \(unescaped: db.configuration.schema).workers", as: Int64.self)
            }
            try await eventually("the worker to hold the running stage") { try await held().contains(id) }
            #expect(try await !db.store.cancel(id).isEmpty)
            try await eventually(timeout: .seconds(10), "the worker to let go of the cancelled stage") {
                try await !held().contains(id)
            }
            #expect(try await db.store.job(id)?.state == .cancelled)
            worker.signal(SIGTERM)
            #expect(try await worker.waitForExit(timeout: .seconds(30)) == 0)
        }
    }

    @Test func sigtermDrainsFinishingWhatFitsTheGraceAndPuttingBackTheRest() async throws {
        try await TestDatabase.with { db async throws in
            try await db.createRunsTable()
            let worker = try await WorkerProcess(url: db.url, lease: .seconds(5), grace: .seconds(2))
            // The short stage runs until the gate opens, after the SIGTERM: it is running when
            // the drain begins, and ends within the grace.
            let gate = try await Gate(db)
            let short = try await db.store.enqueue([
                NewJob(chain: ChainDefinition(input: 1, stages: [record(["gate": .number(gate.key)])]))
            ])[0].id
            let long = try await db.store.enqueue([
                NewJob(chain: ChainDefinition(input: 2, stages: [.task("sleep", args: ["ms": 60_000])]))
            ])[0].id
            try await eventually("both stages to start") {
                let shortState = try await db.store.job(short)?.state
                let longState = try await db.store.job(long)?.state
                return shortState == .running && longState == .running
            }
            worker.signal(SIGTERM)
            try await gate.open()
            #expect(try await worker.waitForExit(timeout: .seconds(30)) == 0)
            #expect(try await db.store.job(short)?.state == .completed)
            let putBack = try #require(try await db.store.job(long))
            #expect(putBack.state == .available)
            #expect(putBack.attempt == 0)
            #expect(putBack.errors.isEmpty)
            #expect(
                try await db.values(
                    "SELECT count(*)::int FROM \(unescaped: db.configuration.schema).workers", as: Int.self) == [0])
        }
    }
}

extension ProcessTests {
    /// With the database gone, a SIGTERM still ends the worker within its grace and
    /// ``Worker/drainMargin``: a stage that ended within the grace and one put back after it have
    /// outcomes the worker cannot write, which it says with their jobs' ids; both run again, to
    /// completion, once the database is back and their lease has passed.
    @Test func aDrainWithTheDatabaseGoneIsBoundedAndSaysWhatItCouldNotWrite() async throws {
        try await withLocalPostgres(LocalPostgres.Options(fast: true)) { cluster in
            try await TestDatabase.with(baseURL: cluster.url) { db async throws in
                let grace = Duration.seconds(2)
                let worker = try await WorkerProcess(
                    url: db.url, lease: .seconds(2), grace: grace, environment: ["BATON_TEST_LOG_LEVEL": "info"])
                let short = try await db.store.enqueue([
                    NewJob(chain: ChainDefinition(input: 1, stages: [.task("sleep", args: ["ms": 1500])]))
                ])[0].id
                let long = try await db.store.enqueue([
                    NewJob(chain: ChainDefinition(input: 2, stages: [.task("sleep", args: ["ms": 60_000])]))
                ])[0].id
                try await eventually("both stages to start") {
                    let states = (try await db.store.job(short)?.state, try await db.store.job(long)?.state)
                    return states == (.running, .running)
                }
                try await cluster.stopServer(mode: "fast")
                let signalled = ContinuousClock.now
                worker.signal(SIGTERM)
                #expect(try await worker.waitForExit(timeout: .seconds(30)) == 0)
                let took = signalled.duration(to: .now)
                // The margin, and half a second for the process to start its exit on a busy machine.
                #expect(took < grace + Worker.drainMargin + .milliseconds(500), "the drain took \(took)")
                let log = worker.child.standardError
                let unwritten = log.split(separator: "\n").filter { $0.contains("outcomes not written") }.joined()
                #expect(
                    unwritten.contains("\(short)") && unwritten.contains("\(long)"),
                    "\(log.split(separator: "\n").filter { $0.contains("outcome") || $0.contains("drain") || $0.contains("stopp") })"
                )

                try await cluster.startServer()
                let again = try await WorkerProcess(url: db.url, lease: .seconds(2), grace: grace)
                defer { again.signal(SIGKILL) }
                try await eventually(timeout: .seconds(30), "the short stage to run again after the lease") {
                    try await db.store.job(short)?.state == .completed
                }
                #expect(try await db.store.job(long)?.state == .running, "the long one runs again")
            }
        }
    }
}

/// Processes the tests and the PostgreSQL launcher start begin with no signal blocked: they are
/// spawned from threads that block most signals, and a blocked mask survives exec (a PgBouncer
/// started so ignored SIGTERM, and outlived every test run).
@Test func childrenStartWithNoSignalBlockedOrIgnored() async throws {
    // Block SIGTERM on this thread, as Dispatch's and NIO's threads do, then spawn.
    var blocked = sigset_t()
    sigemptyset(&blocked)
    sigaddset(&blocked, SIGTERM)
    var previous = sigset_t()
    pthread_sigmask(SIG_BLOCK, &blocked, &previous)
    let child = try await ChildProcess(URL(fileURLWithPath: "/bin/grep"), ["-E", "^Sig(Blk|Ign)", "/proc/self/status"])
    pthread_sigmask(SIG_SETMASK, &previous, nil)
    #expect(try await child.waitForExit(timeout: .seconds(20)) == 0)
    let lines = child.standardOutput.split(separator: "\n").map { $0.split(separator: "\t").map(String.init) }
    #expect(lines.first { $0.first == "SigBlk:" }?.last == "0000000000000000", "\(child.standardOutput)")
    // SIGPIPE (bit 13), which NIO ignores in this process, is back to its default.
    let ignored = lines.first { $0.first == "SigIgn:" }?.last.flatMap { UInt64($0, radix: 16) }
    #expect(ignored.map { $0 & (1 << (SIGPIPE - 1)) } == 0, "\(child.standardOutput)")
}
