import ArgumentParser
import Baton
import BatonPostgres
import BatonWorker
import Foundation
import LocalPostgres
import Logging
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// `baton-bench`: the engine measured, apart from the `baton` binary operators run.
@main
struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "baton-bench",
        abstract: "Measure this engine: enqueue and processing throughput, pickup and hop latency.",
        discussion: """
            Runs against --database-url (in a schema of its own, dropped afterwards) or, by default, a \
            private PostgreSQL with default durability. Every stage runs the `bench` task, a no-op that \
            records when it starts and ends.
            """)

    enum Mode: String, ExpressibleByArgument, CaseIterable {
        case burnDown = "burn-down"
        case steady
    }

    @Option(name: .customLong("database-url"), help: "Benchmark this database instead of a private one.")
    var databaseURL: String?
    @Option(help: "Jobs to run.") var jobs: Int = 10_000
    @Option(help: "Stages per job.") var chain: Int = 1
    @Option(
        help: ArgumentHelp(
            "Each job maps over this many elements, the --chain stages running once per element (0: no map).",
            discussion: "Rates, CPU and WAL are then per element (a run of the stages), the figure to compare "
                + "with as many independent jobs of the same stages."))
    var map: Int = 0
    @Option(help: "Ordered lanes the jobs are spread over (0: background stages only).") var lanes: Int = 0
    @Option(help: "How many stages of each lane run at once (its width).") var laneWidth: Int = 1
    @Option(help: "Every stage names the rate limit key \"bench\", limited to RATE per second (0: no key).")
    var rateLimit: Int = 0
    @Option(help: "Stages the worker runs at once.") var concurrency: Int = 100
    @Option(help: "Fairness keys the jobs are spread over (tenant-0, tenant-1…; 0: none, the queue's order).")
    var fairKeys: Int = 0
    @Option(
        help:
            "Burn-down: meanwhile one job every 1/N s of the key trickle (no key without --fair-keys); reports their pickups."
    )
    var trickle: Int = 0
    @Option(
        help: """
            burn-down: enqueue all, analyse the table (as autovacuum would have), then start the \
            worker; steady: producer and worker together.
            """)
    var mode: Mode = .burnDown
    @Option(help: "Idle-worker pickup samples (one job at a time).") var pickupSamples: Int = 200
    @Option(
        help: ArgumentHelp(
            "Reach PostgreSQL through a proxy on loopback that holds each chunk this many milliseconds each way.",
            discussion: "A round trip then costs twice as much more, as to a database on another host; 0 goes "
                + "through the same proxy without waiting, the figure to compare with. Reports round trips too."))
    var networkDelay: Double?
    @Option(
        help: ArgumentHelp(
            "Finished jobs the table holds before the run (a day of them, as retention keeps them).",
            discussion: "Reports the API's listing times over them, and the table's and indexes' sizes."))
    var retained: Int = 0
    @Flag(
        help: ArgumentHelp(
            "Prune the retained jobs while the jobs run, as the maintenance leader prunes a backlog.",
            discussion: "Then prunes the rest, vacuums, and writes another day of them, with the sizes after each."))
    var prune = false
    @Option(help: "With --prune: days of finished jobs written, each after the day before is pruned.")
    var days: Int = 2
    @Option(
        help: ArgumentHelp(
            "Offer jobs at this steady rate (jobs/s) for --duration while the worker runs, reported by --window.",
            discussion: "With --hold-after, the cluster's xmin horizon is held from then on by a session in "
                + "`BEGIN; SELECT txid_current();`, as a pg_dump or an idle transaction holds it (issue 46)."))
    var offeredRate: Int = 0
    @Option(help: "With --offered-rate: how long jobs are offered (250ms, 30s, 10m…).") var duration = "60s"
    @Option(help: "With --offered-rate: the length of each reported window.") var window = "60s"
    @Option(help: "With --offered-rate: hold the xmin horizon from this long after the start to the end of the load.")
    var holdAfter: String?
    @Option(
        help:
            "With --offered-rate: fail (exit 1) unless every window completed at least this fraction of what it offered."
    )
    var keepPace: Double?
    @Flag(
        help: ArgumentHelp(
            "With --offered-rate: priorities, delayed jobs and retries in the load.",
            discussion: "Priorities 0, 1 and 2 in turn; one job in ten due 2 s after it is offered (its pickup "
                + "counted from then); one in ten failing its first attempt, retried 1 s later."))
    var mixed = false
    @Flag(
        help: ArgumentHelp(
            "Each stage logs one line through context.logger (at debug: kept with the attempt, not printed).",
            discussion: "What keeping a stage's log costs: compare a run with it and one without."))
    var logLine = false
    @Flag(help: "Print one JSON object instead of a summary.") var json = false

    var printsJSON: Bool { json }

    /// Parses and runs; a command line that does not parse exits 2, as `baton`'s do.
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            if exitCode(for: error) == .validationFailure {
                FileHandle.standardError.write(Data((fullMessage(for: error) + "\n").utf8))
                Foundation.exit(2)
            }
            exit(withError: error)
        }
    }

    func validate() throws {
        guard jobs >= 1, chain >= 1, chain <= ChainDefinition.maxStages, lanes >= 0, concurrency >= 1,
            (0...1_000_000).contains(map), (0...1_000_000).contains(fairKeys), (0...1000).contains(trickle),
            pickupSamples >= 0, LaneSetting.widths.contains(laneWidth), (networkDelay ?? 0) >= 0,
            (networkDelay ?? 0) <= 1000, retained >= 0, !prune || retained > 0, (2...30).contains(days),
            rateLimit == 0 || RateLimit.rates.contains(rateLimit), (0...100_000).contains(offeredRate),
            [duration, window].allSatisfy({ (DurationFormat.parse($0) ?? .zero) > .zero }),
            holdAfter.map({ DurationFormat.parse($0) != nil }) ?? true
        else {
            throw ValidationError(
                "--jobs, --chain (≤ 100) and --concurrency must be positive; --map and --fair-keys 0 to 1000000; "
                    + "--trickle 0 to 1000; --lanes ≥ 0; "
                    + "--lane-width 1 to 10000; "
                    + "--rate-limit 0 to 1000000; --network-delay 0 to 1000 (ms); --retained ≥ 0, and > 0 with --prune; "
                    + "--days 2 to 30; --offered-rate 0 to 100000; --duration and --window positive durations "
                    + "(\"30s\", \"10m\"); --hold-after a duration")
        }
    }

    func run() async throws {
        // Progress and the report are the output; only warnings and errors are logged (errors
        // only with --mixed, whose failing attempts the worker would warn of 80 times a second).
        LoggingSystem.bootstrap { StreamLogHandler.standardError(label: $0) }
        var bootLogger = Logger(label: "baton.bench")
        let least: Logger.Level = mixed ? .error : .warning
        bootLogger.logLevel =
            max(
                ProcessInfo.processInfo.environment["BATON_LOG_LEVEL"].flatMap {
                    Logger.Level(rawValue: $0.lowercased())
                }
                    ?? least, least)
        let logger = bootLogger
        let progress = Progress(enabled: !printsJSON && isatty(STDERR_FILENO) == 1)
        if let databaseURL {
            return try await run(on: databaseURL, postmaster: nil, logger: logger, progress: progress)
        }
        progress.show("starting a private PostgreSQL…")
        let server = try await LocalPostgres.start(
            LocalPostgres.Options(settings: [
                "shared_preload_libraries": "pg_stat_statements", "pg_stat_statements.track": "all",
            ]), logger: logger)
        do {
            try await run(on: server.url, postmaster: server.postmaster, logger: logger, progress: progress)
        } catch {
            await server.shutdown()
            throw error
        }
        await server.shutdown()
    }

    /// The benchmark against the server at `baseURL` (whose first process is `postmaster` if it
    /// runs on this machine: its CPU time is measured), in a schema of its own, dropped afterwards.
    private func run(on baseURL: String, postmaster: pid_t?, logger: Logger, progress: Progress) async throws {
        let schema = "bench_" + String(UInt32.random(in: 0...UInt32.max), radix: 36)
        var database = try DatabaseConfiguration(url: baseURL).inSchema(schema)
        var proxy: DelayProxy?
        if let networkDelay {
            guard case .tcp(let host, let port) = database.endpoints.first, database.endpoints.count == 1 else {
                throw ValidationError("--network-delay needs one database server reached over TCP, not a Unix socket")
            }
            proxy = try await DelayProxy.start(to: host, port: port, delay: .microseconds(Int64(networkDelay * 1000)))
            database = database.at(host: "127.0.0.1", port: proxy!.port)
        }
        if offeredRate > 0 { return try await runOffered(database, logger: logger, progress: progress) }
        let report = try await Self.withPool(database, logger: logger) { [proxy] pool in
            try await Migrator(schema: schema, logger: logger).migrate(pool)
            var retainedUpTo: Int64 = 0
            var retention = RetentionReport()
            if retained > 0 {
                retainedUpTo = try await retain(retained, pool: pool, progress: progress)
                retention.afterLoad = try await sizes(pool)
                progress.show("timing the listings over \(retained) finished jobs…")
                retention.listings = try await listingLatencies(
                    Store(pool: pool, logger: logger), someJob: retainedUpTo / 2)
            }
            var report = try await measure(
                pool: pool, proxy: proxy, postmaster: postmaster, logger: logger, progress: progress,
                after: retainedUpTo)
            if prune {
                // What the throttled pruning deleted while the jobs ran; the rest flat out.
                let left = try await count(pool, "id <= \(retainedUpTo)")
                retention.pruned = retained - left
                retention.pruneSeconds = report.retention?.pruneSeconds
                // Then day after day: the day before pruned (flat out), vacuumed, a new day written.
                for day in 2...days {
                    progress.show("day \(day): pruning the day before…")
                    try await Pruner.prune(
                        .completed, retention: .seconds(24 * 3600), store: Store(pool: pool, logger: logger),
                        restFactor: 0)
                    try await pool.execute(PostgresQuery(unsafeSQL: "VACUUM ANALYZE \(schema).jobs"))
                    if day == 2 { retention.afterPrune = try await sizes(pool) }
                    _ = try await retain(retained, pool: pool, progress: progress)
                    retention.days.append(try await sizes(pool))
                }
            }
            if retained > 0 {
                retention.count = retained
                report.retention = retention
            }
            _ = try? await pool.execute("DROP SCHEMA \(unescaped: schema) CASCADE")
            return report
        }
        if printsJSON {
            print(report.json)
        } else {
            progress.clear()
            print(report.summary)
        }
        await proxy?.stop()
        if report.lost > 0 { throw ExitCode(1) }
    }

    /// The worker's one task, `bench`, which tells `recorder` when each stage starts and ends; and
    /// the lane width and rate limit the options ask for, set through `baton`.
    func prepare(_ baton: BatonClient, recording recorder: some StageRecorder) async throws -> TaskRegistry {
        var tasks = TaskRegistry(builtins: false)
        let (mixed, logLine) = (self.mixed, self.logLine)
        tasks.register("bench") { _, input, context in
            recorder.started(job: context.jobID, stage: context.stageIndex)
            if logLine { context.logger.debug("bench stage", metadata: ["input": "\(input)"]) }
            // The input is the job's index as JSON text.
            if mixed, context.attempt == 1, context.stageIndex == 0, let index = Int(input),
                Self.failsFirstAttempt(index)
            {
                throw StageError("the first attempt of one job in ten fails (--mixed)")
            }
            recorder.ended(job: context.jobID, stage: context.stageIndex)
            return input
        }
        // `--trickle`: its input is when its enqueue was called (seconds since 1970, a JSON string).
        tasks.register("trickle") { _, input, context in
            let called = Double(input.trimmingCharacters(in: CharacterSet(charactersIn: "\""))) ?? 0
            trickleWaits.started(context.jobID, called: Date(timeIntervalSince1970: called))
            return input
        }
        if laneWidth > 1 { try await baton.setLaneWidth(laneWidth, lane: "lane-*") }
        if rateLimit > 0 { try await baton.setRateLimit(RateLimit(key: "bench", rate: rateLimit, per: .seconds(1))) }
        return tasks
    }

    /// What is counted as a job in rates, CPU and WAL: each element with `--map`.
    var units: Int { map > 0 ? jobs * map : jobs }

    func makeJobs(_ range: Range<Int>, now: Date = Date()) -> [NewJob] {
        range.map { index in
            let lane = lanes > 0 ? "lane-\(index % lanes)" : nil
            let stages = Array(
                repeating: StageSpec.task(
                    "bench", lane: lane, retry: .constant(mixed ? .seconds(1) : .zero, attempts: 3),
                    rate: rateLimit > 0 ? "bench" : nil), count: chain)
            return NewJob(
                chain: map > 0
                    ? ChainDefinition(
                        input: .array((0..<map).map { .number(JSONNumber(index * map + $0)) }), stages: [.map(stages)])
                    : ChainDefinition(input: .number(index), stages: stages),
                queue: "bench", priority: mixed ? index % 3 : 0,
                runAt: dueAfter(index).map { now + $0.seconds },
                fairKey: fairKeys > 0 ? "tenant-\(index % fairKeys)" : nil)
        }
    }

    /// How long after it is offered job `index` is due (`--mixed`: one in ten, 2 s), nil: at once.
    func dueAfter(_ index: Int) -> Duration? {
        mixed && Self.tenth(index, 3) ? .seconds(2) : nil
    }

    /// Whether job `index`'s first attempt fails (`--mixed`: one in ten).
    static func failsFirstAttempt(_ index: Int) -> Bool { tenth(index, 7) }

    /// Whether job `index` is in tenth `which` of the jobs, by a hash of the index rather than the
    /// index itself: lanes are chosen by the index (`index % lanes`), and every job of a lane
    /// delayed or failing is not the load meant.
    private static func tenth(_ index: Int, _ which: UInt64) -> Bool {
        ((UInt64(index) &* 0x9E37_79B9_7F4A_7C15) >> 40) % 10 == which
    }

    /// Runs the jobs (their ids above `after`: retained ones are below) and measures.
    func measure(
        pool: DatabasePool, proxy: DelayProxy?, postmaster: pid_t?, logger: Logger, progress: Progress, after: Int64
    )
        async throws -> Report
    {
        let database = pool.configuration
        // Enqueue as a Swift service would: through the client, whose waker NOTIFYs the worker.
        let baton = BatonClient(pool: pool, logger: logger)
        let timings = Timings(stages: units * chain, timed: chain > 1 || mode == .steady)
        let tasks = try await prepare(baton, recording: timings)
        let statsAvailable = await resetStatementStatistics(pool)
        let worker = Worker(
            pool: pool, tasks: tasks,
            configuration: WorkerConfiguration(
                queues: ["bench": concurrency], lease: .seconds(30),
                // Retained jobs are pruned by `--prune` alone, not by the worker's maintenance.
                retention: Retention(completed: .seconds(30 * 86400))),
            logger: logger)
        let group = ServiceGroup(services: [baton, worker], logger: logger)
        let total = units * chain
        let batch = map > 0 ? max(1, 1000 / map) : 1000

        // The log from the first enqueue to the last outcome (the idle pickup samples excluded).
        let walStart = await WALUse.position(pool)
        let cpuStart = CPUTime.now(postmaster: postmaster)
        // Burn-down: everything is enqueued before the worker starts.
        var enqueueSeconds = 0.0
        let clock = ContinuousClock()
        if mode == .burnDown {
            let start = clock.now
            for offset in stride(from: 0, to: jobs, by: batch) {
                _ = try await baton.enqueue(makeJobs(offset..<min(jobs, offset + batch)))
                progress.show("enqueued \(min(jobs, offset + batch))/\(jobs)")
            }
            enqueueSeconds = (clock.now - start).seconds
            // The statistics of a database that has run a while: autovacuum would have analysed a
            // backlog this size by the time a worker plans its statements there, and plans made
            // from them differ (a hand-over over deep lanes once cost enough to be compiled at
            // every flush; docs/benchmarks.md, "Compiled at every flush").
            try await pool.execute(PostgresQuery(unsafeSQL: "ANALYZE \(database.schema).jobs"))
        }

        return try await withThrowingTaskGroup(of: Void.self) { running in
            running.addTask { try await group.run() }
            defer { running.cancelAll() }
            while !baton.listener.isListening || !worker.isListening {
                try await Task.sleep(for: .milliseconds(10))
            }
            let start = clock.now
            let flightsAtStart = proxy?.flightsToServer ?? 0
            // With `--prune`, the retained jobs are pruned as the maintenance leader prunes a backlog.
            let pruning =
                prune
                ? Task {
                    try await Pruner.prune(
                        .completed, retention: .seconds(24 * 3600), store: Store(pool: pool, logger: logger))
                } : nil
            // Another tenant's trickle during the burn-down (stopped with it, before the idle samples);
            // when each was enqueued travels in its input.
            let trickling =
                trickle > 0 && mode == .burnDown
                ? Task {
                    while !Task.isCancelled {
                        let job = NewJob(
                            chain: ChainDefinition(
                                input: .string(String(Date().timeIntervalSince1970)), stages: [.task("trickle")]),
                            queue: "bench", fairKey: fairKeys > 0 ? "trickle" : nil)
                        let enqueued = try await baton.enqueue([job])
                        trickleWaits.committed(enqueued[0].id)
                        try await Task.sleep(for: .milliseconds(1000 / trickle))
                    }
                } : nil
            if mode == .steady {
                running.addTask {
                    for offset in stride(from: 0, to: jobs, by: 100) {
                        let jobs = makeJobs(offset..<min(self.jobs, offset + 100))
                        let enqueued = try await baton.enqueue(jobs)
                        let committed = ContinuousClock.now
                        for job in enqueued { timings.committed(job: job.id, at: committed) }
                    }
                }
            }
            while timings.completedStages < total {
                try await Task.sleep(for: .milliseconds(50))
                progress.show("ran \(timings.completedStages)/\(total) stages")
                if (clock.now - start) > .seconds(3600) { break }
            }
            trickling?.cancel()
            _ = try? await trickling?.value
            // The last outcomes are committed shortly after the last stage ends.
            var finished = 0
            let settle = clock.now
            repeat {
                // (the trickle's jobs, of another task, are not the burn-down's)
                finished = try await count(
                    pool,
                    "state = 'completed' AND queue = 'bench' AND parent_id IS NULL AND id > \(after) "
                        + "AND chain -> 0 ->> 'task' IS DISTINCT FROM 'trickle'")
                if finished >= jobs { break }
                try await Task.sleep(for: .milliseconds(20))
            } while clock.now - settle < .seconds(30)
            let processSeconds = (clock.now - start).seconds
            let walEnd = await WALUse.position(pool)
            let cpuEnd = CPUTime.now(postmaster: postmaster)
            pruning?.cancel()
            _ = try? await pruning?.value
            let roundTripsPerJob = proxy.map { Double($0.flightsToServer - flightsAtStart) / Double(jobs) }
            if mode == .steady { enqueueSeconds = processSeconds }
            let statements = statsAvailable ? await statementsPerJob(pool, schema: database.schema, jobs: jobs) : nil
            let hops = timings.hopLatencies()
            let steadyPickups = timings.pickupLatencies()

            // Pickup on an idle worker: one job at a time, from the enqueue's commit to the stage start.
            var pickups = steadyPickups
            var roundTripsPerPickup: Double?
            var callToStart: [Double] = []
            if mode == .burnDown, pickupSamples > 0 {
                timings.reset()
                let flightsBefore = proxy?.flightsToServer ?? 0
                var fromCall: [Double] = []
                for sample in 0..<pickupSamples {
                    let called = ContinuousClock.now
                    let enqueued = try await baton.enqueue(
                        makeJobs(0..<1).map { job in
                            var job = job
                            job.chain.stages = [.task("bench")]
                            return job
                        })
                    let committed = ContinuousClock.now
                    timings.committed(job: enqueued[0].id, at: committed)
                    while !timings.hasStarted(job: enqueued[0].id) { try await Task.sleep(for: .microseconds(200)) }
                    if let started = timings.start(job: enqueued[0].id) {
                        fromCall.append((started - called).seconds * 1000)
                    }
                    progress.show("pickup sample \(sample + 1)/\(pickupSamples)")
                    try await Task.sleep(for: .milliseconds(5))
                }
                pickups = timings.pickupLatencies()
                callToStart = fromCall
                roundTripsPerPickup = proxy.map { Double($0.flightsToServer - flightsBefore) / Double(pickupSamples) }
            }
            await group.triggerGracefulShutdown()
            try await running.waitForAll()
            var wal: WALUse?
            if let walStart, let walEnd { wal = await WALUse.between(walStart, walEnd, jobs: units, pool: pool) }
            return Report(
                mode: mode.rawValue, jobs: units, stages: total, map: map, lanes: lanes, laneWidth: laneWidth,
                rateLimit: rateLimit,
                concurrency: concurrency,
                enqueuePerSecond: Double(units) / max(enqueueSeconds, 1e-9),
                processPerSecond: Double(units) / max(processSeconds, 1e-9),
                stagesPerSecond: Double(total) / max(processSeconds, 1e-9),
                pickupP50: percentile(pickups, 0.5), pickupP99: percentile(pickups, 0.99),
                callToStartP50: percentile(callToStart, 0.5), callToStartP99: percentile(callToStart, 0.99),
                hopP50: percentile(hops, 0.5), hopP99: percentile(hops, 0.99),
                lost: jobs - finished, statementsPerJob: statements, networkDelay: networkDelay,
                roundTripsPerJob: roundTripsPerJob, roundTripsPerPickup: roundTripsPerPickup, wal: wal,
                batonCPUPerJob: (cpuEnd.baton - cpuStart.baton) * 1000 / Double(units),
                postgresCPUPerJob: cpuEnd.postgres.flatMap { end in
                    cpuStart.postgres.map { (end - $0) * 1000 / Double(units) }
                },
                retention: prune ? RetentionReport(pruneSeconds: processSeconds) : nil,
                fairKeys: fairKeys, trickle: trickle > 0 ? trickleWaits.waits() : nil)
        }
    }

    func count(_ pool: DatabasePool, _ condition: String) async throws -> Int {
        let rows = try await pool.read(
            PostgresQuery(unsafeSQL: "SELECT count(*)::int FROM \(pool.configuration.schema).jobs WHERE \(condition)"),
            logger: pool.logger)
        return try rows.first?.decode(Int.self) ?? 0
    }

    func resetStatementStatistics(_ pool: DatabasePool) async -> Bool {
        do {
            try await pool.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            try await pool.execute("SELECT pg_stat_statements_reset()")
            return true
        } catch {
            return false
        }
    }

    /// Statements that touched Baton's schema during the run, per job: those the client sent
    /// (round trips) and those run in all, inside Baton's functions included.
    func statementsPerJob(_ pool: DatabasePool, schema: String, jobs: Int) async -> (sent: Double, all: Double)? {
        do {
            let rows = try await pool.read(
                PostgresQuery(
                    unsafeSQL: """
                        SELECT coalesce(sum(calls) FILTER (WHERE toplevel), 0)::float8, coalesce(sum(calls), 0)::float8
                        FROM pg_stat_statements
                        WHERE (query LIKE '%\(schema).%' OR NOT toplevel) AND query NOT LIKE '%count(*)%'
                          AND query NOT LIKE '%pg_stat_statements%'
                        """), logger: pool.logger)
            if let (sent, all) = try rows.first?.decode((Double, Double).self) {
                return (sent / Double(jobs), all / Double(jobs))
            }
        } catch {}
        return nil
    }
}

extension Bench {
    /// Runs `body` with a pool for `database`, connected first (so that an unreachable database is
    /// said at once), its `run()` going alongside.
    static func withPool<T: Sendable>(
        _ database: DatabaseConfiguration, logger: Logger, _ body: @Sendable (DatabasePool) async throws -> T
    ) async throws -> T {
        let pool = DatabasePool(configuration: try await database.checkConnection(logger: logger), logger: logger)
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addImmediateTask {
                await pool.run()
                return nil
            }
            defer { group.cancelAll() }
            return try await body(pool)
        }
    }
}

extension JSONValue {
    /// A figure of the report, to three decimals.
    static func measured(_ value: Double) -> JSONValue {
        JSONNumber(String(format: "%.3f", value)).map(JSONValue.number) ?? .null
    }
}

func percentile(_ values: [Double], _ p: Double) -> Double {
    guard !values.isEmpty else { return 0 }
    let sorted = values.sorted()
    return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

/// What the `bench` task tells as each stage starts and ends.
protocol StageRecorder: Sendable {
    func started(job: Int64, stage: Int)
    func ended(job: Int64, stage: Int)
}

/// When each stage started and ended, and when each job's enqueue committed.
final class Timings: StageRecorder {
    /// One stage of one job: a flat key, so that recording a stage allocates nothing of its own
    /// (a dictionary of stages per job cost the bench's process a thirtieth of its CPU, counted
    /// as Baton's).
    private struct Stage: Hashable {
        var job: Int64
        var index: Int
    }

    private struct State {
        var starts: [Stage: ContinuousClock.Instant] = [:]
        var ends: [Stage: ContinuousClock.Instant] = [:]
        var commits: [Int64: ContinuousClock.Instant] = [:]
    }

    private let state: Mutex<State>
    private let completed = Atomic(0)
    /// Whether stages' starts and ends are kept: for hops, pickups under load and idle pickups.
    /// A burn-down of single stages needs only the count (the timings were a tenth of the
    /// process's samples, counted as Baton's CPU).
    private let timed: Atomic<Bool>

    /// Room for `stages` stages made at once, if they are `timed`: growing the dictionaries
    /// rehashes them while the stages run.
    init(stages: Int, timed: Bool) {
        var state = State()
        if timed {
            state.starts.reserveCapacity(stages)
            state.ends.reserveCapacity(stages)
        }
        self.state = Mutex(state)
        self.timed = Atomic(timed)
    }

    func started(job: Int64, stage: Int) {
        guard timed.load(ordering: .relaxed) else { return }
        let now = ContinuousClock.now
        state.withLock { $0.starts[Stage(job: job, index: stage)] = now }
    }

    func ended(job: Int64, stage: Int) {
        if timed.load(ordering: .relaxed) {
            let now = ContinuousClock.now
            state.withLock { $0.ends[Stage(job: job, index: stage)] = now }
        }
        completed.add(1, ordering: .relaxed)
    }

    func committed(job: Int64, at instant: ContinuousClock.Instant) {
        state.withLock { $0.commits[job] = instant }
    }

    func hasStarted(job: Int64) -> Bool { start(job: job) != nil }
    func start(job: Int64) -> ContinuousClock.Instant? { state.withLock { $0.starts[Stage(job: job, index: 0)] } }
    var completedStages: Int { completed.load(ordering: .relaxed) }

    /// Forgets what was recorded, and times every stage from now on.
    func reset() {
        state.withLock { $0 = State() }
        completed.store(0, ordering: .relaxed)
        timed.store(true, ordering: .relaxed)
    }

    /// Milliseconds from a stage's end to the next stage's start.
    func hopLatencies() -> [Double] {
        state.withLock { state in
            state.starts.compactMap { stage, start -> Double? in
                guard stage.index > 0, let end = state.ends[Stage(job: stage.job, index: stage.index - 1)] else {
                    return nil
                }
                return (start - end).seconds * 1000
            }
        }
    }

    /// Milliseconds from the enqueue's commit to the first stage's start.
    func pickupLatencies() -> [Double] {
        state.withLock { state in
            state.commits.compactMap { job, committed in
                state.starts[Stage(job: job, index: 0)].map { ($0 - committed).seconds * 1000 }
            }
        }
    }
}

struct Report {
    var mode: String
    /// Jobs, or with `map`, elements: the unit of every rate and per-job figure.
    var jobs: Int
    var stages: Int
    /// Elements per map (0: no map).
    var map = 0
    var lanes: Int
    var laneWidth: Int
    var rateLimit: Int
    var concurrency: Int
    var enqueuePerSecond: Double
    var processPerSecond: Double
    var stagesPerSecond: Double
    var pickupP50: Double
    var pickupP99: Double
    /// Idle samples only: from the enqueue's call (before its commit is known) to the stage's start.
    var callToStartP50: Double
    var callToStartP99: Double
    var hopP50: Double
    var hopP99: Double
    var lost: Int
    var statementsPerJob: (sent: Double, all: Double)?
    /// Through ``DelayProxy``: its one-way delay (ms), and the flights of statements Baton sent
    /// through it per job while the jobs ran, and per idle pickup sample (its enqueue included).
    var networkDelay: Double?
    var roundTripsPerJob: Double?
    var roundTripsPerPickup: Double?
    var wal: WALUse?
    /// CPU milliseconds per job from the first enqueue to the last outcome: this process's (the
    /// producer and the worker), and the private PostgreSQL's (nil with `--database-url`).
    var batonCPUPerJob: Double
    var postgresCPUPerJob: Double?
    var retention: RetentionReport?
    /// `--fair-keys`, and with `--trickle` the pickups (ms) of the trickle's jobs during the run.
    var fairKeys = 0
    var trickle: (fromCommit: [Double], fromCall: [Double])?

    var json: String {
        let number = JSONValue.measured
        var fields: [String: JSONValue] = [
            "mode": .string(mode), "jobs": .number(jobs), "stages": .number(stages), "map": .number(map),
            "lanes": .number(lanes),
            "lane_width": .number(laneWidth), "rate_limit_per_s": .number(rateLimit),
            "concurrency": .number(concurrency), "enqueue_per_s": number(enqueuePerSecond),
            "process_per_s": number(processPerSecond), "stages_per_s": number(stagesPerSecond),
            "pickup_p50_ms": number(pickupP50), "pickup_p99_ms": number(pickupP99),
            "enqueue_call_to_start_p50_ms": number(callToStartP50),
            "enqueue_call_to_start_p99_ms": number(callToStartP99), "hop_p50_ms": number(hopP50),
            "hop_p99_ms": number(hopP99), "lost": .number(lost),
        ]
        if let statementsPerJob {
            fields["statements_per_job"] = number(statementsPerJob.sent)
            fields["statements_per_job_in_functions_too"] = number(statementsPerJob.all)
        }
        fields["wal"] = wal?.json ?? .null
        fields["baton_cpu_ms_per_job"] = number(batonCPUPerJob)
        fields["postgres_cpu_ms_per_job"] = postgresCPUPerJob.map(number) ?? .null
        if let networkDelay {
            fields["network_delay_ms"] = number(networkDelay)
            fields["round_trips_per_job"] = roundTripsPerJob.map(number) ?? .null
            fields["round_trips_per_pickup"] = roundTripsPerPickup.map(number) ?? .null
        }
        fields["fair_keys"] = .number(fairKeys)
        if let trickle {
            fields["trickle_jobs"] = .number(trickle.fromCommit.count)
            fields["trickle_pickup_p50_ms"] = number(percentile(trickle.fromCommit, 0.5))
            fields["trickle_pickup_p99_ms"] = number(percentile(trickle.fromCommit, 0.99))
            fields["trickle_call_to_start_p50_ms"] = number(percentile(trickle.fromCall, 0.5))
            fields["trickle_call_to_start_p99_ms"] = number(percentile(trickle.fromCall, 0.99))
        }
        if let retention {
            fields["retained"] = .number(JSONNumber(retention.count))
            fields["listing_p95_ms"] = .object(retention.listings.mapValues(number))
            fields["sizes_after_load"] = retention.afterLoad?.json ?? .null
            if let pruned = retention.pruned {
                fields["pruned"] = .number(JSONNumber(pruned))
                fields["prune_seconds"] = retention.pruneSeconds.map(number) ?? .null
                fields["sizes_after_prune_and_vacuum"] = retention.afterPrune?.json ?? .null
                fields["sizes_after_each_next_day"] = .array(retention.days.map(\.json))
            }
        }
        return JSONValue.object(fields).jsonText
    }

    var summary: String {
        func f(_ value: Double, _ digits: Int = 0) -> String { String(format: "%.\(digits)f", value) }
        return """
            baton-bench: \(mode), \(jobs) \(map > 0 ? "elements of maps of \(map) (jobs below: elements)" : "jobs") × \(stages / max(jobs, 1)) stages, \(lanes == 0 ? "background" : "\(lanes) lanes" + (laneWidth > 1 ? " of width \(laneWidth)" : "")), concurrency \(concurrency)
              enqueue     \(f(enqueuePerSecond)) jobs/s
              process     \(f(processPerSecond)) jobs/s (\(f(stagesPerSecond)) stages/s)
              pickup      p50 \(f(pickupP50, 2)) ms   p99 \(f(pickupP99, 2)) ms   (from the enqueue's call: p50 \(f(callToStartP50, 2)) ms   p99 \(f(callToStartP99, 2)) ms)
              hop         p50 \(f(hopP50, 2)) ms   p99 \(f(hopP99, 2)) ms
              statements  \(statementsPerJob.map { "\(f($0.sent, 3)) sent per job, \(f($0.all, 2)) run per job (functions' inner statements too)" } ?? "n/a (pg_stat_statements not loaded)")
              cpu         \(f(batonCPUPerJob, 4)) ms per job in this process (producer and worker), \(postgresCPUPerJob.map { "\(f($0, 4)) ms in PostgreSQL" } ?? "PostgreSQL's n/a (not the bench's own)")
              wal         \(wal?.summary ?? "n/a")
              lost        \(lost)
            """ + network + retainedLines + trickleLines
    }

    /// The trickle's line, with `--trickle` only.
    private var trickleLines: String {
        guard let trickle else { return "" }
        let (commit, call) = (trickle.fromCommit, trickle.fromCall)
        return "\n  trickle     \(commit.count) jobs\(fairKeys > 0 ? " of key trickle" : ", no key"): pickup p50 "
            + String(format: "%.1f ms   p99 %.1f ms", percentile(commit, 0.5), percentile(commit, 0.99))
            + String(
                format: "   (from the call: p50 %.1f ms   p99 %.1f ms)", percentile(call, 0.5), percentile(call, 0.99))
    }

    /// The retained jobs' lines, with `--retained` only.
    private var retainedLines: String {
        guard let retention else { return "" }
        func mb(_ bytes: Int64?) -> String { bytes.map { String(format: "%.0f MB", Double($0) / 1e6) } ?? "n/a" }
        func sizes(_ sizes: Bench.Sizes?) -> String { "table \(mb(sizes?.table)), indexes \(mb(sizes?.indexes))" }
        var lines = "\n  retained    \(retention.count) finished jobs: \(sizes(retention.afterLoad))"
        for (name, p95) in retention.listings.sorted(by: { $0.key < $1.key }) {
            lines += "\n    \(name): p95 \(String(format: "%.2f", p95)) ms"
        }
        if let pruned = retention.pruned {
            lines +=
                "\n  pruned      \(pruned) in the \(String(format: "%.1f", retention.pruneSeconds ?? 0)) s the jobs ran; "
            lines += "after a vacuum \(sizes(retention.afterPrune))"
            for (index, day) in retention.days.enumerated() {
                lines += "\n  day \(index + 2)       pruned, vacuumed and written again: \(sizes(day))"
            }
        }
        return lines
    }

    /// The network line, through ``DelayProxy`` only.
    private var network: String {
        guard let networkDelay else { return "" }
        func f(_ value: Double?) -> String { value.map { String(format: "%.2f", $0) } ?? "n/a" }
        return "\n  network     \(f(networkDelay)) ms each way: \(f(roundTripsPerJob)) round trips per job, "
            + "\(f(roundTripsPerPickup)) per idle pickup (its enqueue included)"
    }
}

/// A one-line progress display on a terminal (standard error), nothing otherwise.
struct Progress: Sendable {
    let enabled: Bool

    func show(_ text: String) {
        guard enabled else { return }
        try? FileHandle.standardError.write(contentsOf: Data("\r\u{1B}[K\(text)".utf8))
    }

    func clear() { show("") }
}

/// `--trickle`: when each trickle job's enqueue was called and committed, and when it started.
final class TrickleWaits: Sendable {
    private let times = Mutex<(called: [Int64: Date], committed: [Int64: Date], started: [Int64: Date])>(
        ([:], [:], [:]))
    func started(_ job: Int64, called: Date) {
        let now = Date()
        times.withLock {
            $0.called[job] = called
            $0.started[job] = now
        }
    }
    func committed(_ job: Int64) {
        let now = Date()
        times.withLock { $0.committed[job] = now }
    }
    /// Milliseconds from the commit (0 when the stage started first: the worker heard of it before
    /// the client did) and from the call to each start.
    func waits() -> (fromCommit: [Double], fromCall: [Double]) {
        times.withLock { times in
            (
                times.started.compactMap { job, start in
                    times.committed[job].map { max(0, start.timeIntervalSince($0) * 1000) }
                },
                times.started.compactMap { job, start in times.called[job].map { start.timeIntervalSince($0) * 1000 } }
            )
        }
    }
}

let trickleWaits = TrickleWaits()
