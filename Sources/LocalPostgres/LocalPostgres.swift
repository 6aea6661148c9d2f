import Foundation
import Logging

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A private PostgreSQL server for `baton dev` and the tests: initdb into a directory, start it on
/// a free loopback port with its own socket directory, stop it and clean up.
///
/// PostgreSQL refuses to run as root: when this process is root, the server runs as the
/// `postgres` user (via `runuser`, else `su`), which then owns the data directory.
public final class LocalPostgres: Sendable {
    public struct Options: Sendable {
        /// Where the cluster lives. nil: a fresh temporary directory, deleted on `stop()`.
        public var dataDirectory: URL?
        /// Extra server settings (`-c name=value`).
        public var settings: [String: String]
        /// Trade durability for speed (fsync off): for throwaway test clusters only.
        public var fast: Bool
        /// Files the server reads, by the setting that names them (`ssl_cert_file`, `ssl_key_file`,
        /// `ssl_ca_file`): each is copied where the server's user can read it and nobody else can
        /// (PostgreSQL refuses a key others can read), and the setting points at the copy.
        public var files: [String: URL]
        /// The lines of `pg_hba.conf`; nil keeps initdb's (trust, for every connection).
        public var hba: [String]?
        /// When this process is root and the server's user cannot enter `dataDirectory` (a clone
        /// under root's home, mode 0700): true puts the cluster in a temporary directory instead,
        /// deleted on `stop()` (``LocalPostgres/unreachableDataDirectory`` says so); false refuses.
        public var temporaryIfUnreachable: Bool

        public init(
            dataDirectory: URL? = nil, settings: [String: String] = [:], fast: Bool = false, files: [String: URL] = [:],
            hba: [String]? = nil, temporaryIfUnreachable: Bool = false
        ) {
            self.dataDirectory = dataDirectory
            self.settings = settings
            self.fast = fast
            self.files = files
            self.hba = hba
            self.temporaryIfUnreachable = temporaryIfUnreachable
        }
    }

    public let port: Int
    public let dataDirectory: URL
    /// The data directory asked for, when the server's user could not enter it and a temporary
    /// one was used instead (``Options/temporaryIfUnreachable``).
    public let unreachableDataDirectory: URL?
    public let socketDirectory: URL
    /// The `-o` options the server was started with (port, socket directory, settings).
    let serverOptions: String
    let binaries: URL
    let runAs: String?
    let logger: Logger

    /// The superuser's URL over loopback TCP (trust authentication, loopback only).
    public var url: String { "postgres://postgres@127.0.0.1:\(port)/postgres?sslmode=disable" }

    private init(
        port: Int, dataDirectory: URL, unreachableDataDirectory: URL?, socketDirectory: URL, serverOptions: String,
        binaries: URL, runAs: String?, logger: Logger
    ) {
        self.port = port
        self.serverOptions = serverOptions
        self.dataDirectory = dataDirectory
        self.unreachableDataDirectory = unreachableDataDirectory
        self.socketDirectory = socketDirectory
        self.binaries = binaries
        self.runAs = runAs
        self.logger = logger
    }

    /// Creates the cluster if needed and starts it; throws with the server's own words if it cannot.
    public static func start(_ options: Options = Options(), logger: Logger = Logger(label: "baton.postgres"))
        async throws -> LocalPostgres
    {
        let binaries = try await findBinaries()
        let runAs = try serverUser()
        let base = try makeTemporaryDirectory(prefix: "baton-pg-")
        do {
            return try await start(options, in: base, binaries: binaries, runAs: runAs, logger: logger)
        } catch {
            // Nothing left behind: the socket directory and copies live here; a temporary cluster too.
            try? FileManager.default.removeItem(at: base)
            throw error
        }
    }

    static func start(
        _ options: Options, in base: URL, binaries: URL, runAs: String?, logger: Logger
    ) async throws -> LocalPostgres {
        let fileManager = FileManager.default
        let temporary = options.dataDirectory == nil
        var dataDirectory = options.dataDirectory ?? base.appending(path: "data")
        var unreachable: URL?
        let socketDirectory = base.appending(path: "socket")
        try fileManager.createDirectory(at: socketDirectory, withIntermediateDirectories: true)
        if let runAs { try chown(base, to: runAs) }
        if let runAs { try chown(socketDirectory, to: runAs) }

        // As root the server runs as `runAs`, which must be able to get to the directory.
        if let runAs, !temporary {
            let created = !fileManager.fileExists(atPath: dataDirectory.path)
            try fileManager.createDirectory(at: dataDirectory, withIntermediateDirectories: true)
            if created { try chown(dataDirectory, to: runAs) }
            if (try? await run(
                URL(fileURLWithPath: "/bin/sh"), ["-c", "cd \"$0\"", dataDirectory.path], as: runAs, what: "cd"))
                == nil
            {
                guard options.temporaryIfUnreachable else {
                    if created { try? fileManager.removeItem(at: dataDirectory) }
                    throw LocalPostgresError(
                        "PostgreSQL refuses to run as root, so it runs as \(runAs), which cannot enter "
                            + "\(dataDirectory.path): choose a data directory \(runAs) can reach (such as one under "
                            + "/tmp), or let it through the directories above (chmod o+x)")
                }
                if created { try? fileManager.removeItem(at: dataDirectory) }
                unreachable = dataDirectory
                dataDirectory = base.appending(path: "data")
            }
        }

        if !fileManager.fileExists(atPath: dataDirectory.appending(path: "PG_VERSION").path) {
            try fileManager.createDirectory(at: dataDirectory, withIntermediateDirectories: true)
            if let runAs { try chown(dataDirectory, to: runAs) }
            try await run(
                binaries.appending(path: "initdb"),
                [
                    "-D", dataDirectory.path, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync",
                    "--no-instructions",
                ],
                as: runAs, what: "initdb")
        }

        if fileManager.fileExists(atPath: dataDirectory.appending(path: "postmaster.pid").path) {
            // A server left running by an earlier process that was killed: stop it, it is ours.
            try? await run(
                binaries.appending(path: "pg_ctl"), ["stop", "-D", dataDirectory.path, "-m", "fast", "-w", "-t", "30"],
                as: runAs, what: "pg_ctl stop")
        }

        var fileSettings: [String: String] = [:]
        for (setting, source) in options.files.sorted(by: { $0.key < $1.key }) {
            let copy = base.appending(path: setting)
            try? fileManager.removeItem(at: copy)
            try fileManager.copyItem(at: source, to: copy)
            _ = Glibc.chmod(copy.path, 0o600)
            if let runAs { try chown(copy, to: runAs) }
            fileSettings[setting] = copy.path
        }
        if let hba = options.hba {
            let file = base.appending(path: "pg_hba.conf")
            try Data((hba.joined(separator: "\n") + "\n").utf8).write(to: file)
            if let runAs { try chown(file, to: runAs) }
            fileSettings["hba_file"] = file.path
        }

        var lastError: (any Error)?
        for _ in 0..<3 {
            let port = try freePort()
            var settings = [
                "listen_addresses": "127.0.0.1", "port": "\(port)", "unix_socket_directories": socketDirectory.path,
                "max_connections": "200", "shared_buffers": "128MB",
            ]
            if options.fast {
                settings["fsync"] = "off"
                settings["synchronous_commit"] = "off"
                settings["full_page_writes"] = "off"
            }
            settings.merge(options.settings) { _, new in new }
            settings.merge(fileSettings) { _, new in new }
            let serverOptions = settings.sorted(by: { $0.key < $1.key }).map { "-c \($0.key)=\($0.value)" }
                .joined(separator: " ")
            let log = base.appending(path: "server.log")
            do {
                try await run(
                    binaries.appending(path: "pg_ctl"),
                    ["start", "-D", dataDirectory.path, "-l", log.path, "-o", serverOptions, "-w", "-t", "30"],
                    as: runAs, what: "pg_ctl start", log: log)
                let server = LocalPostgres(
                    port: port, dataDirectory: dataDirectory, unreachableDataDirectory: unreachable,
                    socketDirectory: socketDirectory, serverOptions: serverOptions, binaries: binaries,
                    runAs: runAs, logger: logger)
                logger.info("postgres started", metadata: ["port": "\(port)", "data": "\(dataDirectory.path)"])
                return server
            } catch {
                lastError = error
            }
        }
        try? fileManager.removeItem(at: base)
        throw lastError ?? LocalPostgresError("the server did not start")
    }

    /// Stops the server (fast shutdown) and, for a temporary cluster, deletes its files. Blocks
    /// the calling thread until the server has gone: for an exit handler, where nothing can be
    /// awaited; a task calls ``shutdown()`` instead (on a machine of two cores, Swift's cooperative
    /// pool has two threads, and a test blocking one of them for a standby's shutdown slowed every
    /// other test's requests by seconds). It signals the server as `pg_ctl stop` would, rather
    /// than running a program.
    @available(*, noasync, message: "blocks a thread that runs tasks: await shutdown()")
    public func stop() {
        if let server = signalPostmaster() {
            let deadline = ContinuousClock.now + .seconds(30)
            while !Self.hasExited(server), ContinuousClock.now < deadline { usleep(10_000) }
        }
        removeFiles()
    }

    /// `stop()`, awaited: the server's shutdown checkpoint (a second or two with fsync on) does
    /// not hold up a thread that runs Swift tasks.
    public func shutdown() async {
        if let server = signalPostmaster() {
            let deadline = ContinuousClock.now + .seconds(30)
            while !Self.hasExited(server), ContinuousClock.now < deadline {
                try? await Task.sleep(for: .milliseconds(10))
            }
        }
        removeFiles()
    }

    /// Whether process `pid` has ended. A zombie has: the server is not this process's child (pg_ctl
    /// started it and exited), so it is reaped by PID 1, and in a container whose PID 1 reaps nothing
    /// it stays a zombie, which `kill(pid, 0)` still finds.
    package static func hasExited(_ pid: pid_t) -> Bool {
        guard kill(pid, 0) == 0, let stat = processStat(pid) else { return true }
        return stat.first == "Z"
    }

    /// The fields of `/proc/PID/stat` from the third (the state) on (`man 5 proc`): they follow
    /// the command in parentheses, which may itself hold spaces and parentheses. Nil once the
    /// process is gone.
    package static func processStat(_ pid: pid_t) -> [Substring]? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let end = text.lastIndex(of: ")")
        else { return nil }
        return text[text.index(after: end)...].split(separator: " ")
    }

    /// The server's first process (its `postmaster.pid`), or nil if it does not run.
    package var postmaster: pid_t? {
        let file = dataDirectory.appending(path: "postmaster.pid")
        guard let text = try? String(contentsOf: file, encoding: .utf8) else { return nil }
        return text.split(separator: "\n").first.flatMap { pid_t($0) }
    }

    /// Asks the server for a fast shutdown (SIGINT, what `pg_ctl stop -m fast` sends); returns its
    /// process id, or nil if it does not run.
    private func signalPostmaster() -> pid_t? {
        guard let pid = postmaster, kill(pid, SIGINT) == 0 else { return nil }
        return pid
    }

    /// The socket directory, the log and the copies live here; a temporary cluster's data too.
    private func removeFiles() {
        try? FileManager.default.removeItem(at: socketDirectory.deletingLastPathComponent())
    }

    /// Restarts the server on the same port, `mode` being `fast` or `immediate` (a crash).
    public func restart(mode: String = "fast") async throws {
        try await stopServer(mode: mode)
        try await startServer()
    }

    /// Stops the server and keeps its files (``startServer()`` starts it again on the same port);
    /// `mode` is `smart`, `fast` or `immediate` (a crash).
    public func stopServer(mode: String = "fast") async throws {
        try await Self.run(
            binaries.appending(path: "pg_ctl"), ["stop", "-D", dataDirectory.path, "-m", mode, "-w", "-t", "30"],
            as: runAs, what: "pg_ctl stop")
    }

    /// Starts a server stopped by ``stopServer(mode:)``, with the options it first started with;
    /// returns once it accepts connections.
    public func startServer() async throws {
        let log = socketDirectory.deletingLastPathComponent().appending(path: "server.log")
        try await Self.run(
            binaries.appending(path: "pg_ctl"),
            ["start", "-D", dataDirectory.path, "-l", log.path, "-o", serverOptions, "-w", "-t", "30"],
            as: runAs, what: "pg_ctl start", log: log)
    }

    public static func findPsql() async throws -> URL { try await findBinaries().appending(path: "psql") }

    static func findBinaries() async throws -> URL {
        var candidates: [URL] = []
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
            candidates.append(URL(fileURLWithPath: String(directory)))
        }
        if let bindir = try? await output(of: "pg_config", ["--bindir"]) {
            candidates.append(URL(fileURLWithPath: bindir))
        }
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        for version in versions.sorted(by: { (Int($0) ?? 0) > (Int($1) ?? 0) }) {
            candidates.append(URL(fileURLWithPath: "/usr/lib/postgresql/\(version)/bin"))
        }
        for directory in candidates {
            // Resolve links: pg_ctl finds `postgres` beside its real path.
            let initdb = directory.appending(path: "initdb").resolvingSymlinksInPath()
            let bin = initdb.deletingLastPathComponent()
            if ["initdb", "pg_ctl", "postgres"].allSatisfy({
                FileManager.default.isExecutableFile(atPath: bin.appending(path: $0).path)
            }) {
                return bin
            }
        }
        throw LocalPostgresError(
            """
            PostgreSQL server binaries (initdb, pg_ctl, postgres) not found on PATH, in `pg_config --bindir` \
            or in /usr/lib/postgresql/*/bin. Install the server (Debian/Ubuntu: apt-get install postgresql), \
            or point BATON_DATABASE_URL at an existing database.
            """)
    }

    /// nil when not root; else the user to run the server as.
    static func serverUser() throws -> String? {
        guard geteuid() == 0 else { return nil }
        guard getpwnam("postgres") != nil else {
            throw LocalPostgresError(
                "running as root, but PostgreSQL refuses to run as root and there is no `postgres` user to run it as")
        }
        return "postgres"
    }

    static func chown(_ url: URL, to user: String) throws {
        guard let entry = getpwnam(user) else { throw LocalPostgresError("no user \(user)") }
        guard Glibc.chown(url.path, entry.pointee.pw_uid, entry.pointee.pw_gid) == 0 else {
            throw LocalPostgresError("cannot give \(url.path) to \(user): \(String(cString: strerror(errno)))")
        }
    }

    static func makeTemporaryDirectory(prefix: String) throws -> URL {
        var template = Array((FileManager.default.temporaryDirectory.path + "/\(prefix)XXXXXX").utf8CString)
        let path = template.withUnsafeMutableBufferPointer { buffer in
            mkdtemp(buffer.baseAddress!).map { String(cString: $0) }
        }
        guard let path else {
            throw LocalPostgresError("cannot create a temporary directory: \(String(cString: strerror(errno)))")
        }
        let url = URL(fileURLWithPath: path)
        // The server user must be able to reach its directories inside.
        _ = Glibc.chmod(url.path, 0o755)
        return url
    }

    /// A TCP port on loopback that nothing listens on right now, below the kernel's range of
    /// ephemeral ports. A port from that range (what binding port 0 gives) is also the source
    /// port of outgoing connections: while its server is stopped, a client connecting to it from
    /// that same source port connects to itself (TCP's simultaneous open) and waits for an answer
    /// until its connect timeout, instead of being refused. `OutageTests` saw exactly that, a
    /// 5.01 s answer during a minute's outage with hundreds of reconnection attempts.
    public static func freePort() throws -> Int {
        let ephemeral =
            (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8))
            .flatMap { $0.split(whereSeparator: \.isWhitespace).first.flatMap { Int($0) } } ?? 32768
        let below = max(2048, min(ephemeral, 65536))
        for _ in 0..<200 {
            let port = Int.random(in: 1024..<below)
            if try bindable(port) { return port }
        }
        throw LocalPostgresError("cannot find a free port below \(below)")
    }

    /// Whether `port` on loopback can be bound now.
    private static func bindable(_ port: Int) throws -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw LocalPostgresError("cannot open a socket") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let length = socklen_t(MemoryLayout<sockaddr_in>.size)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 }
        }
    }
}

/// The local server could not be set up; the message says why and what to do.
public struct LocalPostgresError: Error, CustomStringConvertible, Sendable {
    public var description: String
    init(_ description: String) { self.description = description }
}
