import Foundation
import Logging

#if canImport(Glibc)
    import Glibc
#endif

/// A throwaway PgBouncer in front of a ``LocalPostgres``, for the tests that prove Baton through
/// one. Like PostgreSQL, PgBouncer refuses to run as root: as root it runs as the server's user.
public final class LocalPgBouncer: Sendable {
    public enum PoolMode: String, Sendable { case session, transaction }

    public let port: Int
    let directory: URL
    let runAs: String?

    /// `postgres://USER@127.0.0.1:PORT/DATABASE?sslmode=disable` through the bouncer.
    public func url(user: String = "postgres", database: String = "postgres") -> String {
        "postgres://\(user)@127.0.0.1:\(port)/\(database)?sslmode=disable"
    }

    private init(port: Int, directory: URL, runAs: String?) {
        self.port = port
        self.directory = directory
        self.runAs = runAs
    }

    /// Starts PgBouncer (`pgbouncer` on the PATH or in `/usr/sbin`) in `mode`, every database of
    /// `server` reachable under its own name, trusting every user, and waits until it accepts.
    public static func start(in server: LocalPostgres, mode: PoolMode, poolSize: Int = 20) async throws
        -> LocalPgBouncer
    {
        let binary = try findBinary()
        let runAs = try LocalPostgres.serverUser()
        let directory = try LocalPostgres.makeTemporaryDirectory(prefix: "baton-pgbouncer-")
        let port = try LocalPostgres.freePort()
        let configuration = """
            [databases]
            * = host=127.0.0.1 port=\(server.port)

            [pgbouncer]
            listen_addr = 127.0.0.1
            listen_port = \(port)
            unix_socket_dir =
            auth_type = trust
            auth_file = \(directory.path)/users.txt
            pool_mode = \(mode.rawValue)
            default_pool_size = \(poolSize)
            max_client_conn = 1000
            logfile = \(directory.path)/pgbouncer.log
            pidfile = \(directory.path)/pgbouncer.pid
            ignore_startup_parameters = extra_float_digits
            """
        let file = directory.appending(path: "pgbouncer.ini")
        try Data(configuration.utf8).write(to: file)
        try Data("\"postgres\" \"\"\n".utf8).write(to: directory.appending(path: "users.txt"))
        if let runAs {
            for name in ["", "pgbouncer.ini", "users.txt"] {
                try LocalPostgres.chown(directory.appending(path: name), to: runAs)
            }
        }
        // `-d`: it forks and the parent exits once the configuration is read.
        try await LocalPostgres.run(binary, ["-d", file.path], as: runAs, what: "pgbouncer")
        let bouncer = LocalPgBouncer(port: port, directory: directory, runAs: runAs)
        let deadline = Date().addingTimeInterval(10)
        while !bouncer.accepts() {
            guard Date() < deadline else {
                await bouncer.shutdown()
                throw LocalPostgresError("pgbouncer did not listen on \(port): \(bouncer.log)")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        return bouncer
    }

    /// The bouncer's log, for failure messages.
    public var log: String {
        (try? String(contentsOf: directory.appending(path: "pgbouncer.log"), encoding: .utf8)) ?? ""
    }

    private func accepts() -> Bool {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { return false }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    /// Stops PgBouncer and removes its files. SIGTERM is an immediate shutdown up to PgBouncer
    /// 1.22 and waits for clients to leave from 1.23 on: so SIGTERM, and SIGKILL should it still be
    /// there after 2 s.
    public func shutdown() async {
        if let pid = bouncer() {
            kill(pid, SIGTERM)
            for _ in 0..<200 where !LocalPostgres.hasExited(pid) { try? await Task.sleep(for: .milliseconds(10)) }
            if !LocalPostgres.hasExited(pid) {
                kill(pid, SIGKILL)
                for _ in 0..<200 where !LocalPostgres.hasExited(pid) { try? await Task.sleep(for: .milliseconds(10)) }
            }
        }
        try? FileManager.default.removeItem(at: directory)
    }

    private func bouncer() -> pid_t? {
        guard let text = try? String(contentsOf: directory.appending(path: "pgbouncer.pid"), encoding: .utf8) else {
            return nil
        }
        return pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    static func findBinary() throws -> URL {
        let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
        for directory in directories + ["/usr/sbin", "/usr/local/sbin"] {
            let candidate = URL(fileURLWithPath: directory).appending(path: "pgbouncer")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        throw LocalPostgresError("pgbouncer not found (Debian: apt-get install pgbouncer)")
    }
}
