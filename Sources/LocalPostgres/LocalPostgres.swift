import Dispatch
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
        try await offloaded { try startBlocking(options, logger: logger) }
    }

    /// Runs blocking work (spawning and waiting for PostgreSQL's programs) on a thread of its own,
    /// not on one of the few threads that run Swift tasks.
    static func offloaded<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global(qos: .utility).async {
                continuation.resume(with: Result { try body() })
            }
        }
    }

    static func startBlocking(_ options: Options, logger: Logger) throws -> LocalPostgres {
        let binaries = try findBinaries()
        let runAs = try serverUser()
        let base = try makeTemporaryDirectory(prefix: "baton-pg-")
        do {
            return try startBlocking(options, in: base, binaries: binaries, runAs: runAs, logger: logger)
        } catch {
            // Nothing left behind: the socket directory and copies live here; a temporary cluster too.
            try? FileManager.default.removeItem(at: base)
            throw error
        }
    }

    private static func startBlocking(
        _ options: Options, in base: URL, binaries: URL, runAs: String?, logger: Logger
    ) throws -> LocalPostgres {
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
            if (try? run(
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
            try run(
                binaries.appending(path: "initdb"),
                [
                    "-D", dataDirectory.path, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync",
                    "--no-instructions",
                ],
                as: runAs, what: "initdb")
        }

        if fileManager.fileExists(atPath: dataDirectory.appending(path: "postmaster.pid").path) {
            // A server left running by an earlier process that was killed: stop it, it is ours.
            try? run(
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
                try run(
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

    /// Stops the server (fast shutdown) and, for a temporary cluster, deletes its files.
    public func stop() {
        do {
            try Self.run(
                binaries.appending(path: "pg_ctl"), ["stop", "-D", dataDirectory.path, "-m", "fast", "-w", "-t", "30"],
                as: runAs, what: "pg_ctl stop")
        } catch {
            logger.warning("postgres did not stop cleanly", metadata: ["error": "\(error)"])
        }
        // The socket directory, the log and the copies live here; a temporary cluster's data too.
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
        try await Self.offloaded {
            try Self.run(
                self.binaries.appending(path: "pg_ctl"),
                ["stop", "-D", self.dataDirectory.path, "-m", mode, "-w", "-t", "30"], as: self.runAs,
                what: "pg_ctl stop")
        }
    }

    /// Starts a server stopped by ``stopServer(mode:)``, with the options it first started with;
    /// returns once it accepts connections.
    public func startServer() async throws {
        try await Self.offloaded { try self.startAgain() }
    }

    /// `stop()`, off the threads that run Swift tasks.
    public func shutdown() async {
        _ = try? await Self.offloaded { self.stop() }
    }

    /// Starts the server again, with the options it first started with.
    private func startAgain() throws {
        let log = socketDirectory.deletingLastPathComponent().appending(path: "server.log")
        try Self.run(
            binaries.appending(path: "pg_ctl"),
            ["start", "-D", dataDirectory.path, "-l", log.path, "-o", serverOptions, "-w", "-t", "30"],
            as: runAs, what: "pg_ctl start", log: log)
    }

    // MARK: finding and running PostgreSQL

    /// PATH, then `pg_config --bindir`, then the newest `/usr/lib/postgresql/*/bin`.
    /// The `psql` of the PostgreSQL installation the launcher uses.
    public static func findPsql() throws -> URL { try findBinaries().appending(path: "psql") }

    static func findBinaries() throws -> URL {
        var candidates: [URL] = []
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
            candidates.append(URL(fileURLWithPath: String(directory)))
        }
        if let bindir = try? output(of: "pg_config", ["--bindir"]) {
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

    /// A TCP port on loopback that nothing listens on right now.
    public static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw LocalPostgresError("cannot open a socket") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else { throw LocalPostgresError("cannot find a free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Runs a PostgreSQL program (as `user` if given) and throws with its output if it fails.
    static func run(_ executable: URL, _ arguments: [String], as user: String?, what: String, log: URL? = nil) throws {
        var command = executable.path
        var commandArguments = arguments
        if let user {
            if let runuser = ["/usr/sbin/runuser", "/sbin/runuser", "/usr/bin/runuser"].first(where: {
                FileManager.default.isExecutableFile(atPath: $0)
            }) {
                command = runuser
                commandArguments = ["-u", user, "--", executable.path] + arguments
            } else {
                command = "/bin/su"
                let quoted = ([executable.path] + arguments).map {
                    "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'"
                }
                commandArguments = ["-s", "/bin/sh", user, "-c", quoted.joined(separator: " ")]
            }
        }
        // Output goes to a file, not a pipe: the server that pg_ctl starts would inherit the pipe
        // and keep it open, and reading it to the end would never return.
        let outputFile = FileManager.default.temporaryDirectory.appending(path: "baton-pg-\(UUID().uuidString).out")
        defer { try? FileManager.default.removeItem(at: outputFile) }
        let status = try spawnAndWait(command, commandArguments, output: outputFile.path, what: what)
        let output = (try? String(contentsOf: outputFile, encoding: .utf8)) ?? ""
        guard status == 0 else {
            var message = "\(what) failed (exit \(status)): \(output.trimmingCharacters(in: .whitespacesAndNewlines))"
            if let log, let text = try? String(contentsOf: log, encoding: .utf8) {
                message += "\nserver log:\n" + text.split(separator: "\n").suffix(15).joined(separator: "\n")
            }
            throw LocalPostgresError(message)
        }
    }

    /// posix_spawn and waitpid: Foundation's `Process` here could miss the exit of a child whose
    /// own child (the server) lives on.
    static func spawnAndWait(_ command: String, _ arguments: [String], output: String, what: String) throws -> Int32 {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // Nothing else of this process goes along: the server outlives this call, and a socket it
        // inherited (an HTTP listener, a client connection) would stay open in it, so the peers
        // of this process would never see those closed.
        try closeInheritedDescriptors(&actions)
        // `env -C /`: run from /, which the server user can always enter (unlike, say, /root).
        let argv = (["/usr/bin/env", "-C", "/", command] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid = pid_t()
        let spawned = withCleanSignals { posix_spawn(&pid, "/usr/bin/env", &actions, $0, argv, environ) }
        guard spawned == 0 else {
            throw LocalPostgresError("\(what): cannot run \(command): \(String(cString: strerror(spawned)))")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 {
            guard errno == EINTR else { throw LocalPostgresError("\(what): waitpid failed") }
        }
        // WIFEXITED / WEXITSTATUS, spelled out: the C macros are not imported.
        return (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }

    /// What `command` prints, through a temporary file: no Foundation `Process` or `Pipe` in
    /// this process (concurrent uses of them were seen to close a descriptor twice and take
    /// Dispatch's timers with it, stalling every `Task.sleep` in a test run).
    static func output(of command: String, _ arguments: [String]) throws -> String {
        let file = FileManager.default.temporaryDirectory.appending(path: "baton-output-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        guard try spawnAndWait(command, arguments, output: file.path, what: command) == 0 else {
            throw LocalPostgresError("\(command) failed")
        }
        return try String(contentsOf: file, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// Makes a `posix_spawn` close every descriptor from 3 up in the child (glibc's
/// `posix_spawn_file_actions_addclosefrom_np`, looked up at run time: Swift's Glibc module does
/// not declare it). Without it a child inherits this process's sockets that lack close-on-exec.
package func closeInheritedDescriptors(_ actions: inout posix_spawn_file_actions_t) throws {
    typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    guard let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else {
        throw LocalPostgresError("this C library has no posix_spawn_file_actions_addclosefrom_np (glibc 2.34 or later)")
    }
    let closeFrom = unsafeBitCast(symbol, to: CloseFrom.self)
    guard closeFrom(&actions, 3) == 0 else {
        throw LocalPostgresError("posix_spawn_file_actions_addclosefrom_np failed")
    }
}

/// Runs `body` with `posix_spawn` attributes that start the child with no signal blocked and
/// the usual signals at their default action. The spawning thread is often one of Dispatch's or
/// NIO's, which block most signals, and a blocked mask is inherited through exec: a PgBouncer
/// started so never saw SIGTERM or SIGINT (and SIGPIPE, ignored by NIO, would stay ignored).
package func withCleanSignals<T>(_ body: (UnsafePointer<posix_spawnattr_t>) throws -> T) rethrows -> T {
    var attributes = posix_spawnattr_t()
    posix_spawnattr_init(&attributes)
    defer { posix_spawnattr_destroy(&attributes) }
    var none = sigset_t()
    sigemptyset(&none)
    posix_spawnattr_setsigmask(&attributes, &none)
    var usual = sigset_t()
    sigemptyset(&usual)
    for signal in [SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGPIPE, SIGUSR1, SIGUSR2, SIGCHLD, SIGALRM] {
        sigaddset(&usual, signal)
    }
    posix_spawnattr_setsigdefault(&attributes, &usual)
    posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
    return try body(&attributes)
}

/// The local server could not be set up; the message says why and what to do.
public struct LocalPostgresError: Error, CustomStringConvertible, Sendable {
    public var description: String
    init(_ description: String) { self.description = description }
}
