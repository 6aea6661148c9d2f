import Foundation
import Logging

#if canImport(Glibc)
    import Glibc
#endif

/// A pg_auto_failover formation on loopback (Debian's `pg-auto-failover-cli` and
/// `postgresql-15-auto-failover`): a monitor and two PostgreSQL nodes, each under its keeper
/// (`pg_autoctl run`), for the reliability suite's failover scenarios. The monitor promotes the
/// standby when the primary stops answering its health checks, which are set to take about two
/// seconds here (its defaults take about 25). As root, everything runs as the server's user.
public final class LocalAutoFailover: Sendable {
    public let monitorPort: Int
    public let nodePorts: [Int]
    let directory: URL
    let runAs: String?
    let binaries: URL
    let autoctl: URL
    let logger: Logger

    private init(
        monitorPort: Int, nodePorts: [Int], directory: URL, runAs: String?, binaries: URL, autoctl: URL, logger: Logger
    ) {
        self.monitorPort = monitorPort
        self.nodePorts = nodePorts
        self.directory = directory
        self.runAs = runAs
        self.binaries = binaries
        self.autoctl = autoctl
        self.logger = logger
    }

    /// Creates and runs the monitor, then a primary and its standby; returns once the monitor
    /// reports them `primary` and `secondary`. `synchronous` false makes the standby asynchronous
    /// (`replication-quorum false`): commits no longer wait for it.
    public static func start(synchronous: Bool = true, logger: Logger) async throws -> LocalAutoFailover {
        guard
            let autoctl = ["/usr/bin/pg_autoctl", "/usr/local/bin/pg_autoctl"].first(where: {
                FileManager.default.isExecutableFile(atPath: $0)
            })
        else {
            throw LocalPostgresError(
                "pg_autoctl not found (Debian: apt-get install pg-auto-failover-cli postgresql-15-auto-failover)")
        }
        let runAs = try LocalPostgres.serverUser()
        let directory = try LocalPostgres.makeTemporaryDirectory(prefix: "baton-paf-")
        if let runAs { try LocalPostgres.chown(directory, to: runAs) }
        let formation = LocalAutoFailover(
            monitorPort: try LocalPostgres.freePort(),
            nodePorts: [try LocalPostgres.freePort(), try LocalPostgres.freePort()],
            directory: directory, runAs: runAs, binaries: try await LocalPostgres.findBinaries(),
            autoctl: URL(fileURLWithPath: autoctl), logger: logger)
        do {
            try await formation.startMonitor()
            for node in formation.nodePorts.indices {
                try await formation.startNode(node)
                try await formation.waitFor(
                    node == 0 ? ["single"] : ["primary", "secondary"], what: "node \(node + 1)")
            }
            if !synchronous {
                try await formation.autoctl([
                    "set", "node", "replication-quorum", "false", "--pgdata", formation.data(1),
                ])
                try await formation.eventually("the primary to stop waiting for its standby") {
                    try await formation.psql("SHOW synchronous_standby_names", port: formation.nodePorts[0]) == ""
                }
            }
            return formation
        } catch {
            await formation.shutdown()
            throw error
        }
    }

    /// The formation's connection string as `pg_autoctl show uri` gives it (every node, with
    /// `target_session_attrs=read-write`), with the user named and TLS off.
    public func url() async throws -> String {
        let text = try await LocalPostgres.output(
            of: autoctl.path, ["show", "uri", "--formation", "default", "--monitor", monitorURL])
        guard let uri = text.split(whereSeparator: \.isWhitespace).first(where: { $0.hasPrefix("postgres://") }) else {
            throw LocalPostgresError("pg_autoctl show uri printed no URI: \(text)")
        }
        return uri.replacingOccurrences(of: "postgres://", with: "postgres://postgres@")
            .replacingOccurrences(of: "sslmode=prefer", with: "sslmode=disable")
    }

    /// The index of the node the monitor has as primary (or promoting), if any.
    public func primary() async throws -> Int? {
        let text = try await psql(
            "SELECT nodeport FROM pgautofailover.node WHERE reportedstate IN ('primary', 'wait_primary', 'single')",
            port: monitorPort, database: "pg_auto_failover")
        return Int(text).flatMap { nodePorts.firstIndex(of: $0) }
    }

    /// A lost host: node `index`'s keeper and everything under it killed at once (SIGKILL): its
    /// supervisors, which would start PostgreSQL again, and PostgreSQL, as a power cut leaves it.
    public func crash(node index: Int) async throws {
        let keepers = Self.processes(mentioning: data(index))
        let tree = Self.descendants(of: Set(keepers))
        for pid in tree { kill(pid, SIGKILL) }
        for pid in tree {
            for _ in 0..<500 where !LocalPostgres.hasExited(pid) { try await Task.sleep(for: .milliseconds(10)) }
        }
    }

    /// Waits until node `index` is out of recovery: promoted.
    public func waitUntilPromoted(node index: Int, timeout: Duration = .seconds(60)) async throws {
        try await eventually("node \(index + 1) to be promoted", timeout: timeout) {
            (try? await psql("SELECT pg_is_in_recovery()", port: nodePorts[index])) == "f"
        }
    }

    /// What `sql` prints, run by psql on node `index` itself (whatever its role), in `database`.
    public func psql(_ sql: String, node index: Int, database: String) async throws -> String {
        try await psql(sql, port: nodePorts[index], database: database)
    }

    /// Waits until the monitor has node `index` take writes (`wait_primary` or `primary`): after
    /// its promotion, pg_auto_failover holds its commits back for `primary_demote_timeout`.
    public func waitUntilWritable(node index: Int, timeout: Duration = .seconds(60)) async throws {
        try await eventually("node \(index + 1) to take writes", timeout: timeout) {
            let state = try? await psql(
                "SELECT reportedstate FROM pgautofailover.node WHERE nodeport = \(nodePorts[index])",
                port: monitorPort, database: "pg_auto_failover")
            return state == "wait_primary" || state == "primary"
        }
    }

    /// Stops every keeper and server and removes the files.
    public func shutdown() async {
        for pid in Self.descendants(of: Set(Self.processes(mentioning: directory.path))) { kill(pid, SIGKILL) }
        for data in [monitorData] + nodePorts.indices.map(data) {
            try? await LocalPostgres.run(
                binaries.appending(path: "pg_ctl"), ["stop", "-D", data, "-m", "immediate", "-w", "-t", "10"],
                as: runAs, what: "pg_ctl stop")
        }
        try? FileManager.default.removeItem(at: directory)
    }

    // MARK: setting up

    private var monitorData: String { directory.appending(path: "monitor").path }
    private func data(_ node: Int) -> String { directory.appending(path: "node\(node + 1)").path }
    private var monitorURL: String {
        "postgres://autoctl_node@127.0.0.1:\(monitorPort)/pg_auto_failover?sslmode=disable"
    }

    private func startMonitor() async throws {
        try await autoctl([
            "create", "monitor", "--pgdata", monitorData, "--pgport", "\(monitorPort)", "--hostname", "127.0.0.1",
            "--auth", "trust", "--no-ssl",
        ])
        try await keep(monitorData, log: "monitor.log")
        try await eventually("the monitor to answer") {
            (try? await psql("SELECT 1", port: monitorPort, database: "pg_auto_failover")) == "1"
        }
        // Health checks every second, one retry, a node unhealthy after two seconds; and a
        // standby promoted in place of an unreachable primary takes writes two seconds later
        // (`primary_demote_timeout`, 30 s by default: until then its commits wait, in case the
        // old primary still takes writes somewhere).
        for (name, value) in [
            ("health_check_period", "1000"), ("health_check_timeout", "1000"), ("health_check_max_retries", "1"),
            ("health_check_retry_delay", "500"), ("node_considered_unhealthy_timeout", "2000"),
            ("primary_demote_timeout", "2000"),
        ] {
            _ = try await psql("ALTER SYSTEM SET pgautofailover.\(name) = \(value)", port: monitorPort)
        }
        _ = try await psql("SELECT pg_reload_conf()", port: monitorPort)
    }

    private func startNode(_ node: Int) async throws {
        try await keep(
            data(node), log: "node\(node + 1).log",
            create: [
                "create", "postgres", "--pgdata", data(node), "--pgport", "\(nodePorts[node])", "--hostname",
                "127.0.0.1", "--auth", "trust", "--no-ssl", "--monitor", monitorURL, "--name", "node_\(node + 1)",
                "--run",
            ])
    }

    /// Waits until the monitor reports the nodes so far in `states`, in order.
    private func waitFor(_ states: [String], what: String) async throws {
        try await eventually("\(what) to join", timeout: .seconds(120)) {
            let reported = try? await psql(
                "SELECT string_agg(reportedstate::text, ',' ORDER BY nodeid) FROM pgautofailover.node",
                port: monitorPort, database: "pg_auto_failover")
            return reported == states.joined(separator: ",")
        }
    }

    /// Runs `pg_autoctl` to its end, with the server binaries' `pg_ctl` and its own files here.
    private func autoctl(_ arguments: [String]) async throws {
        try await LocalPostgres.run(
            URL(fileURLWithPath: "/usr/bin/env"), environment + [autoctl.path] + arguments + pgctl(arguments),
            as: runAs, what: "pg_autoctl \(arguments.prefix(2).joined(separator: " "))",
            log: directory.appending(path: "pg_autoctl.log"))
    }

    /// Starts a keeper in the background (`pg_autoctl run`, or `create`'s `--run`), logging to `log`.
    private func keep(_ data: String, log: String, create: [String]? = nil) async throws {
        let arguments = create ?? ["run", "--pgdata", data]
        let command =
            (environment + [autoctl.path] + arguments + pgctl(arguments)).map { "'\($0)'" }.joined(separator: " ")
        try await LocalPostgres.run(
            URL(fileURLWithPath: "/bin/sh"),
            ["-c", "nohup /usr/bin/env \(command) > '\(directory.appending(path: log).path)' 2>&1 &"], as: runAs,
            what: "pg_autoctl")
    }

    /// `--pgctl` for the commands that take it.
    private func pgctl(_ arguments: [String]) -> [String] {
        ["create"].contains(arguments.first) ? ["--pgctl", binaries.appending(path: "pg_ctl").path] : []
    }

    /// Where pg_autoctl keeps its configuration and state: here, not in the user's home.
    private var environment: [String] {
        [
            "XDG_CONFIG_HOME=\(directory.path)/config", "XDG_DATA_HOME=\(directory.path)/data",
            "XDG_RUNTIME_DIR=\(directory.path)/run", "PATH=\(binaries.path):/usr/bin:/bin",
        ]
    }

    private func psql(_ sql: String, port: Int, database: String = "postgres") async throws -> String {
        try await LocalPostgres.output(
            of: binaries.appending(path: "psql").path,
            ["-X", "-A", "-t", "-q", "-h", "127.0.0.1", "-p", "\(port)", "-U", "postgres", "-d", database, "-c", sql])
    }

    private func eventually(
        _ what: String, timeout: Duration = .seconds(60), _ condition: () async throws -> Bool
    ) async throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        let logs = ["monitor.log", "node1.log", "node2.log"].map {
            "\($0): " + ((try? String(contentsOf: directory.appending(path: $0), encoding: .utf8)) ?? "").suffix(1500)
        }
        throw LocalPostgresError("timed out waiting for \(what)\n" + logs.joined(separator: "\n"))
    }

    /// `roots` and every process below them.
    private static func descendants(of roots: Set<pid_t>) -> Set<pid_t> {
        var parents: [pid_t: pid_t] = [:]
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = pid_t(entry), let stat = LocalPostgres.processStat(pid), stat.count > 1,
                let parent = pid_t(stat[1])
            else { continue }
            parents[pid] = parent
        }
        var tree = roots
        var grew = true
        while grew {
            grew = false
            for (pid, parent) in parents where tree.contains(parent) && !tree.contains(pid) {
                tree.insert(pid)
                grew = true
            }
        }
        return tree
    }

    /// Processes whose command line mentions `text`.
    private static func processes(mentioning text: String) -> [pid_t] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { entry in
            guard let pid = pid_t(entry), pid != getpid(),
                let data = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline")
            else { return nil }
            let command = String(decoding: data.map { $0 == 0 ? 32 : $0 }, as: UTF8.self)
            return command.contains(text) ? pid : nil
        }
    }
}
