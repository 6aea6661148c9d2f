import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Standbys, for tests of what a failover does: a base backup of a running server, streaming
/// from it, promoted when asked.
extension LocalPostgres {
    /// A hot standby of this server (`pg_basebackup -R`, streaming from it over loopback), started
    /// on a port of its own. `name` is the standby's `application_name` towards this server: name
    /// it in this server's `synchronous_standby_names` (an option it was started with) to make
    /// commits wait for it.
    public func startStandby(name: String = "standby", options: Options = Options()) async throws -> LocalPostgres {
        let base = try Self.makeTemporaryDirectory(prefix: "baton-pg-")
        do {
            let data = base.appending(path: "data")
            try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
            _ = Glibc.chmod(data.path, 0o700)
            if let runAs {
                try Self.chown(base, to: runAs)
                try Self.chown(data, to: runAs)
            }
            try await Self.run(
                binaries.appending(path: "pg_basebackup"),
                [
                    "-D", data.path, "-R", "-X", "stream", "-c", "fast", "--no-sync",
                    "-d", "host=127.0.0.1 port=\(port) user=postgres application_name=\(name)",
                ],
                as: runAs, what: "pg_basebackup")
            var options = options
            options.dataDirectory = data
            // Its own name, for the primary's synchronous_standby_names (the WAL receiver
            // connects as `cluster_name`); the primary's `-c` settings are not in the copy.
            options.settings["cluster_name"] = name
            return try await Self.start(options, in: base, binaries: binaries, runAs: runAs, logger: logger)
        } catch {
            try? FileManager.default.removeItem(at: base)
            throw error
        }
    }

    /// Promotes this standby to a primary (`pg_ctl promote`), returning once it takes writes.
    public func promote() async throws {
        try await Self.run(
            binaries.appending(path: "pg_ctl"), ["promote", "-D", dataDirectory.path, "-w", "-t", "30"], as: runAs,
            what: "pg_ctl promote")
    }
}

extension LocalPostgres {
    /// Sets server settings as `ALTER SYSTEM` would (in `postgresql.auto.conf`, the last line for a
    /// name winning) and reloads the server: for a standby too, which takes no `ALTER SYSTEM`.
    /// Settings the server was started with (`-c`) cannot be changed so.
    public func configure(_ settings: [String: String]) async throws {
        let file = dataDirectory.appending(path: "postgresql.auto.conf")
        let handle = try FileHandle(forWritingTo: file)
        try handle.seekToEnd()
        for (name, value) in settings.sorted(by: { $0.key < $1.key }) {
            try handle.write(contentsOf: Data("\(name) = '\(value.replacingOccurrences(of: "'", with: "''"))'\n".utf8))
        }
        try handle.close()
        try await Self.run(
            binaries.appending(path: "pg_ctl"), ["reload", "-D", dataDirectory.path], as: runAs, what: "pg_ctl reload")
    }

    /// The output of `sql` run by `psql` as the superuser (unaligned, tuples only): for a test to
    /// ask a server what it holds, a standby included.
    public func psql(_ sql: String, database: String = "postgres") async throws -> String {
        try await Self.output(
            of: binaries.appending(path: "psql").path,
            [
                "-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", "\(port)", "-U", "postgres",
                "-d", database, "-c", sql,
            ])
    }
}
