import BatonPostgres
import BatonTestSupport
import Foundation
import LocalPostgres
import Logging
import PostgresNIO
import Synchronization

/// What a scenario runs against: a private PostgreSQL with Baton's schema, `baton serve` and worker
/// processes (this binary's `worker`), all real, all on loopback.
final class Rig: Sendable {
    /// The server, when it is one of ours to restart (not under a failover manager).
    private let server: LocalPostgres?
    /// Where the processes connect: one server, or every node of a formation.
    let baseURL: String
    let database: DatabaseConfiguration
    let pool: DatabasePool
    let logger: Logger
    let token = "reliability-token-" + String(UInt64.random(in: 0...UInt64.max), radix: 36)
    /// The database URL with Baton's schema, for the processes.
    var url: String { baseURL + "&schema=\(Self.schema)" }

    /// The PostgreSQL server a scenario restarts.
    var postgres: LocalPostgres {
        get throws {
            guard let server else { throw ReliabilityError("this rig's servers are the failover manager's") }
            return server
        }
    }
    private let processes = Mutex<Processes>(Processes())

    struct Processes {
        var api: ChildProcess?
        var apiBase = ""
        var workers: [Int: ChildProcess] = [:]
        var workerIDs: [Int: String] = [:]
    }

    /// The schema Baton's tables live in, and the ledger the workers' `record` task writes.
    static let schema = "baton"

    private init(
        server: LocalPostgres?, baseURL: String, database: DatabaseConfiguration, pool: DatabasePool, logger: Logger
    ) {
        self.server = server
        self.baseURL = baseURL
        self.database = database
        self.pool = pool
        self.logger = logger
    }

    /// Server settings every scenario's PostgreSQL gets (`run --setting name=value`).
    @TaskLocal static var settings: [String: String] = [:]

    /// Starts PostgreSQL (default durability, `settings` and then `Rig.settings` on top), migrates,
    /// and runs `body`; stops every process and the server afterwards.
    static func with<T: Sendable>(
        settings: [String: String] = [:], logger: Logger, _ body: @Sendable (Rig) async throws -> T
    ) async throws -> T {
        let postgres = try await LocalPostgres.start(
            LocalPostgres.Options(
                settings: ["max_connections": "200"].merging(settings) { _, new in new }
                    .merging(Self.settings) { _, new in new }),
            logger: logger)
        do {
            let result = try await with(server: postgres, baseURL: postgres.url, logger: logger, body)
            await postgres.shutdown()
            return result
        } catch {
            await postgres.shutdown()
            throw error
        }
    }

    /// The same over a pg_auto_failover formation: the processes are given its URI (every node,
    /// `target_session_attrs=read-write`), and the formation is theirs to fail over.
    static func with<T: Sendable>(
        formation: LocalAutoFailover, logger: Logger, _ body: @Sendable (Rig) async throws -> T
    ) async throws -> T {
        try await with(server: nil, baseURL: try await formation.url(), logger: logger, body)
    }

    private static func with<T: Sendable>(
        server: LocalPostgres?, baseURL: String, logger: Logger, _ body: @Sendable (Rig) async throws -> T
    ) async throws -> T {
        var database = try DatabaseConfiguration(url: baseURL).inSchema(schema)
        database.maximumConnections = 8
        let pool = DatabasePool(configuration: database, logger: logger)
        let rig = Rig(server: server, baseURL: baseURL, database: database, pool: pool, logger: logger)
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addImmediateTask {
                await pool.run()
                return nil
            }
            defer { group.cancelAll() }
            do {
                try await Migrator(schema: schema, logger: logger).migrate(pool)
                try await pool.execute(
                    """
                    CREATE TABLE \(unescaped: schema).reliability_runs (
                        job bigint NOT NULL, stage int NOT NULL, attempt int NOT NULL, lane text, worker text NOT NULL,
                        started_at timestamptz NOT NULL, ended_at timestamptz NOT NULL, failed boolean NOT NULL)
                    """)
                let result = try await body(rig)
                await rig.stopProcesses()
                return result
            } catch {
                await rig.stopProcesses()
                throw error
            }
        }
    }

    // MARK: processes

    /// `baton serve` on a free port, its tokens set; returns once it answers `/readyz`.
    func startAPI() async throws {
        let port = try LocalPostgres.freePort()
        let api = try await ChildProcess(
            try ChildProcess.builtBinary("baton"),
            ["serve", "--database-url", url, "--port", "\(port)", "--max-wait", "5s"],
            environment: ["BATON_API_TOKEN": token, "BATON_LOG_LEVEL": "warning"])
        let base = "http://127.0.0.1:\(port)"
        processes.withLock {
            $0.api = api
            $0.apiBase = base
        }
        try await eventually("baton serve to answer", timeout: .seconds(60)) {
            guard api.isRunning else { throw ReliabilityError("baton serve exited: \(api.standardError)") }
            return await HTTP.status(base + "/readyz", token: nil) == 200
        }
    }

    var apiBase: String { processes.withLock { $0.apiBase } }
    var apiPID: Int32? { processes.withLock { $0.api?.pid } }

    /// Starts worker `index` (replacing one that ran under that index) and waits for its heartbeat.
    @discardableResult
    func startWorker(_ index: Int, concurrency: Int, lease: Duration = .seconds(5)) async throws -> String {
        let binary = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        let id = "worker-\(index)-\(UInt32.random(in: 0...UInt32.max))"
        let worker = try await ChildProcess(
            binary,
            [
                "worker", "--database-url", url, "--concurrency", "\(concurrency)", "--lease",
                "\(lease.milliseconds)ms", "--id", id,
            ],
            environment: ["BATON_LOG_LEVEL": ProcessInfo.processInfo.environment["BATON_WORKER_LOG_LEVEL"] ?? "warning"]
        )
        processes.withLock {
            $0.workers[index] = worker
            $0.workerIDs[index] = id
        }
        try await eventually("worker \(index) to register", timeout: .seconds(60)) {
            guard worker.isRunning else { throw ReliabilityError("worker exited: \(worker.standardError)") }
            return try await count("SELECT count(*)::int FROM \(unescaped: Self.schema).workers WHERE id = \(id)") == 1
        }
        return id
    }

    func workerPID(_ index: Int) -> Int32? { processes.withLock { $0.workers[index]?.pid } }
    func workerID(_ index: Int) -> String? { processes.withLock { $0.workerIDs[index] } }

    /// Whether the API and every worker still run (none exited or was restarted behind our back).
    var processesAlive: Bool {
        processes.withLock { ($0.api?.isRunning ?? true) && $0.workers.values.allSatisfy(\.isRunning) }
    }

    /// SIGKILLs worker `index`: no drain, no goodbye, its stages left running in the database.
    func kill(worker index: Int) async throws {
        guard let worker = processes.withLock({ $0.workers[index] }) else { return }
        worker.signal(SIGKILL)
        _ = try await worker.waitForExit(timeout: .seconds(10))
    }

    /// Resident memory of the API and each worker, in MiB.
    func residentMiB() -> [String: Double] {
        processes.withLock { processes in
            var sizes: [String: Double] = [:]
            if let api = processes.api { sizes["api"] = Self.resident(api.pid) }
            for (index, worker) in processes.workers { sizes["worker-\(index)"] = Self.resident(worker.pid) }
            return sizes.compactMapValues { $0 }
        }
    }

    private static func resident(_ pid: Int32) -> Double? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kib = Double(line.split(separator: " ").dropFirst().first ?? "")
        else { return nil }
        return kib / 1024
    }

    /// Where things stand, for a scenario that went wrong: jobs per state, and the last lines each
    /// process logged.
    func diagnostics() async -> String {
        var lines: [String] = []
        if let rows = try? await pool.execute(
            "SELECT state::text, count(*)::int FROM \(unescaped: Self.schema).jobs GROUP BY 1 ORDER BY 1",
            logger: logger)
        {
            let states = rows.compactMap { try? $0.decode((String, Int).self) }.map { "\($0.0) \($0.1)" }
            lines.append("jobs: " + states.joined(separator: ", "))
        }
        // The unfinished jobs themselves, with what their holder (if any) last said of them.
        if let rows = try? await pool.execute(
            """
            SELECT format('job %s: %s at stage %s attempt %s, lane %s, worker %s (alive: %s, holds it: %s), \
            attempted %s, run_at %s, errors %s', j.id, j.state, j.stage, j.attempt, coalesce(j.lane, '-'),
                coalesce(j.worker_id, '-'), w.heartbeat_at > now() - interval '5 seconds', j.id = ANY (w.holds),
                to_char(j.attempted_at, 'HH24:MI:SS.MS'), to_char(j.run_at, 'HH24:MI:SS.MS'), j.errors::text)
            FROM \(unescaped: Self.schema).jobs j LEFT JOIN \(unescaped: Self.schema).workers w ON w.id = j.worker_id
            WHERE j.state NOT IN ('completed', 'discarded', 'cancelled') ORDER BY j.id LIMIT 10
            """, logger: logger)
        {
            lines += rows.compactMap { try? $0.decode(String.self) }.map { "  " + $0.prefix(600) }
        }
        for (name, process) in namedProcesses {
            let log = process.standardError.split(separator: "\n").suffix(15)
            lines.append("\(name) (pid \(process.pid), \(process.isRunning ? "running" : "exited")), last lines:")
            lines += log.map { "    " + $0.prefix(300) }
        }
        return lines.joined(separator: "\n")
    }

    /// The API (first) and the workers, by the names the diagnostics give them.
    private var namedProcesses: [(String, ChildProcess)] {
        let (api, workers) = processes.withLock { ($0.api, $0.workers) }
        let named = workers.sorted { $0.key < $1.key }.map { ("worker-\($0.key)", $0.value) }
        return (api.map { [("api", $0)] } ?? []) + named
    }

    /// The lines of every process's log that mention one of `jobs` (as `job=ID` or in a list).
    func logLines(mentioning jobs: [Int64]) -> [String] {
        let needles = jobs.flatMap { ["job=\($0)", "job: \($0)", "\($0),", "\($0)]"] }
        return namedProcesses.flatMap { name, process in
            process.standardError.split(separator: "\n")
                .filter { line in needles.contains { line.contains($0) } }
                .map { "    \(name): \($0.prefix(400))" }
        }
    }

    /// Stops the workers with SIGTERM (they drain), then the API; a process still running 30 s
    /// later is killed.
    func stopProcesses() async {
        let (api, workers) = processes.withLock { ($0.api, Array($0.workers.values)) }
        for worker in workers { worker.signal(SIGTERM) }
        for worker in workers { _ = try? await worker.waitForExit(timeout: .seconds(30)) }
        api?.signal(SIGTERM)
        _ = try? await api?.waitForExit(timeout: .seconds(30))
    }

    // MARK: the database

    /// The first column of the first row, as an integer.
    func count(_ query: PostgresQuery) async throws -> Int {
        try await pool.execute(query, logger: logger).first.map { try $0.decode(Int?.self) ?? 0 } ?? 0
    }

    func count(sql: String) async throws -> Int { try await count(PostgresQuery(unsafeSQL: sql)) }

    /// The first column of the first row, as a number (0 for NULL).
    func value(_ query: PostgresQuery) async throws -> Double {
        try await pool.execute(query, logger: logger).first.map { try $0.decode(Double?.self) ?? 0 } ?? 0
    }

    /// Stage runs the workers recorded as succeeded so far.
    func completedRuns() async throws -> Int {
        try await count(sql: "SELECT count(*)::int FROM \(Self.schema).reliability_runs WHERE NOT failed")
    }

    /// The stages a worker is running, as (job, stage).
    func runningStages(of worker: String) async throws -> [(Int64, Int)] {
        try await pool.execute(
            "SELECT id, stage FROM \(unescaped: Self.schema).jobs WHERE state = 'running' AND worker_id = \(worker)",
            logger: logger
        ).map { try $0.decode((Int64, Int).self) }
    }

    /// How many of these stages have not yet been done (their job still at them, unfinished).
    func unfinished(_ stages: [(Int64, Int)]) async throws -> Int {
        guard !stages.isEmpty else { return 0 }
        return try await count(
            """
            SELECT count(*)::int FROM \(unescaped: Self.schema).jobs j
            JOIN unnest(\(stages.map(\.0)), \(stages.map(\.1))) AS h(id, stage) ON j.id = h.id
            WHERE j.stage = h.stage AND j.state NOT IN ('completed', 'discarded', 'cancelled')
            """)
    }

    /// Seconds from a job's creation to its first stage's first run, p50 and p99, for jobs created
    /// between `from` and `to`.
    func pickup(from: Date, to: Date) async throws -> (p50: Double, p99: Double) {
        let rows = try await pool.execute(
            """
            SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY s), percentile_cont(0.99) WITHIN GROUP (ORDER BY s)
            FROM (SELECT extract(epoch FROM min(r.started_at) - j.created_at)::float8 AS s
                  FROM \(unescaped: Self.schema).jobs j JOIN \(unescaped: Self.schema).reliability_runs r
                    ON r.job = j.id AND r.stage = 0
                  WHERE j.created_at BETWEEN \(from) AND \(to) GROUP BY j.id, j.created_at) p
            """, logger: logger)
        guard let (p50, p99) = try rows.first?.decode((Double?, Double?).self) else { return (0, 0) }
        return (p50 ?? 0, p99 ?? 0)
    }
}

struct ReliabilityError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Polls `condition` every 50 ms until it holds, up to `timeout`. A `ReliabilityError` ends the
/// wait at once; other errors (the database restarting) count as "not yet".
func eventually(
    _ what: String, timeout: Duration, _ condition: @Sendable () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        do {
            if try await condition() { return }
        } catch let error as ReliabilityError {
            throw error
        } catch {}
        try await Task.sleep(for: .milliseconds(50))
    }
    throw ReliabilityError("timed out after \(timeout) waiting for \(what)")
}
