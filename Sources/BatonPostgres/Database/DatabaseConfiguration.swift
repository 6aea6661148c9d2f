import Foundation
import NIOSSL
import PostgresNIO

/// Where Baton's database is and which schema holds its tables.
///
/// Built from a connection string as libpq reads one (``ConnectionString``): a URL,
/// `postgres://user:password@host:5432/database?sslmode=verify-full&schema=baton`, or keywords,
/// `host=… dbname=…`. Several hosts (`h1:5432,h2:5433`) are tried in order, and
/// `target_session_attrs` says which will do (``TargetSessionAttributes``; Baton's default is
/// `read-write`, since it writes). A host may be a socket directory (`?host=/run/postgresql`).
/// TLS follows libpq (``DatabaseTLS``): `sslmode`, `sslrootcert`, `sslcert` and `sslkey` in the
/// connection string, else from `PGSSLMODE`, `PGSSLROOTCERT`, `PGSSLCERT` and `PGSSLKEY`;
/// `PGTARGETSESSIONATTRS` and `PGCONNECT_TIMEOUT` are read likewise.
public struct DatabaseConfiguration: Sendable {
    /// The servers, in the order they are tried: a primary and its standbys, say.
    package var endpoints: [ConnectionString.Endpoint]
    public var username: String
    public var password: String?
    public var database: String?
    /// Used for TCP connections; a Unix socket is never encrypted.
    public var tls: DatabaseTLS
    /// The PostgreSQL schema of Baton's tables; an identifier (`[a-z_][a-z0-9_]*`).
    public var schema: String
    /// Connections in a ``DatabasePool``.
    public var maximumConnections: Int = 20
    /// Which of the servers will do (`target_session_attrs`).
    package var targetSessionAttributes: TargetSessionAttributes = .readWrite
    /// How long one server may take to accept a connection, TLS and authentication included
    /// (`connect_timeout`). A server busy starting a hundred backends at once on two cores was slow
    /// to accept one (docs/benchmarks.md#the-test-suites-start): a busy database is not an absent
    /// one.
    public var connectTimeout: Duration = .seconds(5)
    /// What `pg_stat_activity` shows for Baton's sessions (`application_name`).
    public var applicationName = "baton"
    /// Where the dedicated LISTEN connection goes, when not where the pool goes: PostgreSQL
    /// itself when the pool goes through PgBouncer in transaction mode, which would hand a
    /// LISTEN's server connection to someone else after the statement (`database.listen-url`).
    /// Same user, password, database and TLS settings. nil: the pool's servers.
    package var listenEndpoints: [ConnectionString.Endpoint]?

    /// One server. `tls` nil is libpq's default: `prefer`, with the files under `~/.postgresql` if
    /// there are any.
    public init(
        host: String = "127.0.0.1", port: Int = 5432, unixSocketPath: String? = nil, username: String,
        password: String? = nil, database: String? = nil, tls: DatabaseTLS? = nil, schema: String = "baton"
    ) throws {
        var endpoint = ConnectionString.Endpoint.tcp(host: host, port: port)
        if let unixSocketPath {
            let directory = (unixSocketPath as NSString).deletingLastPathComponent
            endpoint = .socket(directory: directory, port: Int(unixSocketPath.split(separator: ".").last ?? "") ?? port)
        }
        try self.init(
            endpoints: [endpoint], username: username, password: password, database: database, tls: tls,
            schema: schema)
    }

    private init(
        endpoints: [ConnectionString.Endpoint], username: String, password: String?, database: String?,
        tls: DatabaseTLS?, schema: String
    ) throws {
        guard Self.isIdentifier(schema) else {
            throw ConfigurationError("schema \"\(schema)\" is not a plain identifier")
        }
        self.endpoints = endpoints
        self.username = username
        self.password = password
        self.database = database
        self.tls = try tls ?? DatabaseTLS()
        self.schema = schema
    }

    /// Reads a connection string (``ConnectionString``). A TLS parameter is taken from
    /// `tlsSettings` (Baton's own settings, keyed like the query: `sslmode`…), else from the
    /// connection string, else from libpq's environment variable (`PGSSLMODE`…).
    public init(
        url string: String, environment: [String: String] = ProcessInfo.processInfo.environment,
        tlsSettings: [String: String] = [:]
    ) throws {
        let parsed = try ConnectionString(string)
        // libpq's environment variables for these parameters.
        let variables = [
            "sslmode": "PGSSLMODE", "sslrootcert": "PGSSLROOTCERT", "sslcert": "PGSSLCERT", "sslkey": "PGSSLKEY",
            "target_session_attrs": "PGTARGETSESSIONATTRS", "connect_timeout": "PGCONNECT_TIMEOUT",
        ]
        func parameter(_ name: String) -> String? {
            tlsSettings[name] ?? parsed.parameters[name] ?? variables[name].flatMap { environment[$0] }
        }
        var mode: DatabaseTLS.Mode?
        if let text = parameter("sslmode") {
            guard let known = DatabaseTLS.Mode(rawValue: text) else {
                throw ConfigurationError(
                    "sslmode \"\(text)\" is not one of "
                        + DatabaseTLS.Mode.allCases.map(\.rawValue).joined(separator: ", "))
            }
            mode = known
        }
        let tls = try DatabaseTLS(
            mode: mode, rootCertificate: parameter("sslrootcert"), certificate: parameter("sslcert"),
            key: parameter("sslkey"), home: environment["HOME"])
        try self.init(
            endpoints: parsed.endpoints,
            username: parsed.user ?? environment["USER"] ?? "postgres",
            password: parsed.password,
            database: parsed.database ?? parsed.user,
            tls: tls,
            schema: parsed.parameters["schema"] ?? "baton"
        )
        if let text = parameter("target_session_attrs") {
            targetSessionAttributes = try TargetSessionAttributes(parameter: text)
        }
        if let text = parameter("connect_timeout"), let timeout = try ConnectionString.connectTimeout(text) {
            connectTimeout = timeout
        }
        if let name = parsed.parameters["application_name"] { applicationName = name }
    }

    /// Reads the URL from `BATON_DATABASE_URL`, then `DATABASE_URL`.
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment)
        throws -> DatabaseConfiguration?
    {
        guard let url = environment["BATON_DATABASE_URL"] ?? environment["DATABASE_URL"] else { return nil }
        return try DatabaseConfiguration(url: url, environment: environment)
    }

    /// This configuration with its LISTEN connection going to `url`'s servers, which must name
    /// the same user and database (or none).
    public func listening(at url: String) throws -> DatabaseConfiguration {
        let other = try ConnectionString(url)
        guard other.user == nil || other.user == username, other.database == nil || other.database == database else {
            throw ConfigurationError(
                "database.listen-url must name the same user and database as database.url (\(username), \(database ?? "-"))"
            )
        }
        var copy = self
        copy.listenEndpoints = other.endpoints
        return copy
    }

    /// The same database, with Baton's tables in `schema`.
    public func inSchema(_ schema: String) throws -> DatabaseConfiguration {
        guard Self.isIdentifier(schema) else {
            throw ConfigurationError("schema \"\(schema)\" is not a plain identifier")
        }
        var copy = self
        copy.schema = schema
        return copy
    }

    /// The same database at one TCP address (a proxy's, say) instead of its servers.
    package func at(host: String, port: Int) -> DatabaseConfiguration {
        var copy = self
        copy.endpoints = [.tcp(host: host, port: port)]
        return copy
    }

    /// A connection to the first of the servers that will do (``DatabaseConnector``), for a
    /// statement or two outside the pool; close it when done.
    public func connect(id: Int = 0, logger: Logger) async throws -> PostgresConnection {
        try await DatabaseConnector(configuration: self).connect(id: id, logger: logger)
    }

    /// Connects once, so that a wrong address, password or certificate is reported at once in one
    /// line (the pool only reports a tripped circuit breaker after about a minute), and settles
    /// libpq's fallbacks for this process: with `sslmode=allow` a plain connection the server
    /// refuses is tried again with TLS; with `prefer`, a failed TLS handshake again without.
    /// Returns this configuration with the way that worked; use it for everything after.
    @discardableResult
    public func checkConnection(logger: Logger) async throws -> DatabaseConfiguration {
        do {
            try await connectOnce(logger: logger)
            return self
        } catch let error as ConfigurationError {
            throw error
        } catch {
            let hasTCP = endpoints.contains { $0.socketPath == nil }
            guard hasTCP, let fallback = tls.fallingBack(), Self.warrantsFallback(error, from: tls.mode) else {
                throw ConfigurationError("cannot connect to PostgreSQL at \(displayAddress): \(Self.describe(error))")
            }
            var retried = self
            retried.tls = fallback
            let tried = tls.mode == .allow ? "plain, then TLS" : "TLS, then plain"
            do {
                try await retried.connectOnce(logger: logger)
            } catch let second {
                throw ConfigurationError(
                    "cannot connect to PostgreSQL at \(displayAddress) (sslmode=\(tls.mode.rawValue) tried \(tried)): "
                        + "\(Self.describe(error)); then \(Self.describe(second))")
            }
            logger.notice(
                "sslmode=\(tls.mode.rawValue): connected the second way (\(tried))",
                metadata: ["first": "\(Self.describe(error))"])
            return retried
        }
    }

    private func connectOnce(logger: Logger) async throws {
        let connection = try await connect(logger: logger)
        try? await connection.close()
        guard listenEndpoints != nil else { return }
        do {
            let listening = try await DatabaseConnector(configuration: self, listening: true).connect(
                id: 0, logger: logger)
            try? await listening.close()
        } catch {
            throw ConfigurationError(
                "cannot open the LISTEN connection (database.listen-url) at \(listenDisplayAddress): \(Self.describe(error))"
            )
        }
    }

    /// libpq's reasons to try the other way: the server refusing the connection (its
    /// `pg_hba.conf` has no line for it: with `allow`, for plain; with `prefer`, for TLS), or, with
    /// `prefer`, the TLS handshake failing.
    static func warrantsFallback(_ error: any Error, from mode: DatabaseTLS.Mode) -> Bool {
        if let error = error as? DatabaseConnector.NoServer {
            return error.errors.contains { warrantsFallback($0, from: mode) }
        }
        let refusedByServer = (error as? PSQLError)?.code == .server
        let tlsFailed = [error, (error as? PSQLError)?.underlying].contains {
            $0 is NIOSSLError || $0 is BoringSSLError
        }
        return switch mode {
        case .allow: refusedByServer
        case .prefer: refusedByServer || tlsFailed
        default: false
        }
    }

    /// A connection failure in one line: what the server said, or why TLS or the network failed.
    package static func describe(_ error: any Error) -> String {
        if let error = error as? StoreError { return error.description }
        guard let error = error as? PSQLError else {
            if error is NIOSSLError || error is BoringSSLError { return "TLS: \(error)" }
            return describeNetwork(error) ?? "\(error)"
        }
        if let message = error.serverInfo?[.message] {
            return "\(message) (SQLSTATE \(error.serverInfo?[.sqlState] ?? "?"))"
        }
        if error.code == .sslUnsupported { return "the server does not accept TLS connections" }
        if let underlying = error.underlying { return describe(underlying) }
        return "\(error.code)"
    }

    /// NIO's connection errors in the words of `psql` ("connection refused"), not their dumps.
    private static func describeNetwork(_ error: any Error) -> String? {
        switch error {
        case let error as NIOConnectionError:
            if let failure = error.connectionErrors.first {
                return describeNetwork(failure.error) ?? "\(failure.error)"
            }
            if error.dnsAError != nil || error.dnsAAAAError != nil { return "cannot resolve host \(error.host)" }
            return "cannot connect"
        case let error as IOError:
            return String(cString: strerror(error.errnoCode)).lowercased()
        case ChannelError.connectTimeout(let timeout):
            return "no answer within \(timeout.nanoseconds / 1_000_000_000) s"
        default:
            return nil
        }
    }

    /// Where the LISTEN connection goes, for messages.
    var listenDisplayAddress: String {
        "\((listenEndpoints ?? endpoints).map(\.description).joined(separator: ","))/\(database ?? "")"
    }

    /// The servers and the database, for messages: never the user's password.
    public var displayAddress: String {
        "\(endpoints.map(\.description).joined(separator: ","))/\(database ?? "")"
    }

    static func isIdentifier(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, name.utf8.count <= 63 else { return false }
        let lower = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyz_")
        let rest = lower.union(CharacterSet(charactersIn: "0123456789"))
        return lower.contains(first) && name.unicodeScalars.allSatisfy { rest.contains($0) }
    }
}

/// A configuration value that cannot be used.
public struct ConfigurationError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
}
