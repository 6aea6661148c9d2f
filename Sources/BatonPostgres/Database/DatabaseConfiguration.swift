import Foundation
import NIOSSL
import PostgresNIO

/// Where Baton's database is and which schema holds its tables.
///
/// Built from a URL: `postgres://user:password@host:5432/database?sslmode=verify-full&schema=baton`.
/// `host` may also be a socket directory (`?host=/run/postgresql`). TLS follows libpq
/// (``DatabaseTLS``): `sslmode`, `sslrootcert`, `sslcert` and `sslkey` in the URL's query, else
/// from `PGSSLMODE`, `PGSSLROOTCERT`, `PGSSLCERT` and `PGSSLKEY`.
public struct DatabaseConfiguration: Sendable {
    public var host: String
    public var port: Int
    public var unixSocketPath: String?
    public var username: String
    public var password: String?
    public var database: String?
    /// Used for TCP connections; a Unix socket is never encrypted.
    public var tls: DatabaseTLS
    /// The PostgreSQL schema of Baton's tables; an identifier (`[a-z_][a-z0-9_]*`).
    public var schema: String
    /// Connections in a ``DatabasePool``.
    public var maximumConnections: Int = 20
    /// Where the dedicated LISTEN connection goes, when not where the pool goes: PostgreSQL
    /// itself when the pool goes through PgBouncer in transaction mode, which would hand a
    /// LISTEN's server connection to someone else after the statement (`database.listen-url`).
    /// Same user, password, database and TLS settings. nil: the pool's address.
    public var listenAddress: ListenAddress?

    public struct ListenAddress: Sendable, Equatable {
        public var host: String
        public var port: Int
        public var unixSocketPath: String?
    }

    /// `tls` nil is libpq's default: `prefer`, with the files under `~/.postgresql` if there are any.
    public init(
        host: String = "127.0.0.1", port: Int = 5432, unixSocketPath: String? = nil, username: String,
        password: String? = nil, database: String? = nil, tls: DatabaseTLS? = nil, schema: String = "baton"
    ) throws {
        guard Self.isIdentifier(schema) else {
            throw ConfigurationError("schema \"\(schema)\" is not a plain identifier")
        }
        self.host = host
        self.port = port
        self.unixSocketPath = unixSocketPath
        self.username = username
        self.password = password
        self.database = database
        self.tls = try tls ?? DatabaseTLS()
        self.schema = schema
    }

    /// Parses a `postgres://` or `postgresql://` URL. A TLS parameter is taken from `tlsSettings`
    /// (Baton's own settings, keyed like the query: `sslmode`…), else from the URL's query, else
    /// from libpq's environment variable (`PGSSLMODE`…).
    public init(
        url string: String, environment: [String: String] = ProcessInfo.processInfo.environment,
        tlsSettings: [String: String] = [:]
    ) throws {
        guard let components = URLComponents(string: string),
            components.scheme == "postgres" || components.scheme == "postgresql"
        else {
            throw ConfigurationError("database URL must look like postgres://user:password@host:port/database")
        }
        let query = Dictionary(
            (components.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { _, last in last })
        let socket = query["host"].flatMap { $0.hasPrefix("/") ? $0 : nil }
        let database = components.path.split(separator: "/").first.map(String.init)
        func parameter(_ name: String) -> String? {
            tlsSettings[name] ?? query[name] ?? environment["PG" + name.uppercased()]
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
            host: components.host.flatMap { $0.isEmpty ? nil : $0 } ?? "127.0.0.1",
            port: components.port ?? 5432,
            unixSocketPath: socket.map { "\($0)/.s.PGSQL.\(components.port ?? 5432)" },
            username: components.user ?? environment["USER"] ?? "postgres",
            password: components.password,
            database: database ?? components.user,
            tls: tls,
            schema: query["schema"] ?? "baton"
        )
    }

    /// Reads the URL from `BATON_DATABASE_URL`, then `DATABASE_URL`.
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment)
        throws -> DatabaseConfiguration?
    {
        guard let url = environment["BATON_DATABASE_URL"] ?? environment["DATABASE_URL"] else { return nil }
        return try DatabaseConfiguration(url: url, environment: environment)
    }

    /// This configuration with its LISTEN connection going to `url`'s address, which must name
    /// the same user and database (or none).
    public func listening(at url: String) throws -> DatabaseConfiguration {
        let other = try DatabaseConfiguration(url: url, environment: ["HOME": "/nonexistent", "USER": username])
        guard other.username == username, other.database == database || URLComponents(string: url)?.path ?? "" == ""
        else {
            throw ConfigurationError(
                "database.listen-url must name the same user and database as database.url (\(username), \(database ?? "-"))"
            )
        }
        var copy = self
        copy.listenAddress = ListenAddress(host: other.host, port: other.port, unixSocketPath: other.unixSocketPath)
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

    /// A PostgresNIO pool for this database (``DatabasePool`` runs and replaces them).
    package func makePostgresClient(logger: Logger) -> PostgresClient {
        var configuration: PostgresClient.Configuration
        if let unixSocketPath {
            configuration = .init(
                unixSocketPath: unixSocketPath, username: username, password: password, database: database)
        } else {
            let tls: PostgresClient.Configuration.TLS =
                switch self.tls.first {
                case .plain: .disable
                case .prefer(let configuration): .prefer(configuration)
                case .require(let configuration): .require(configuration)
                }
            configuration = .init(
                host: host, port: port, username: username, password: password, database: database, tls: tls)
        }
        configuration.options.maximumConnections = maximumConnections
        configuration.options.connectTimeout = DatabasePool.connectTimeout
        return PostgresClient(configuration: configuration, backgroundLogger: logger)
    }

    /// The configuration of a single connection to where the pool goes.
    public var connectionConfiguration: PostgresConnection.Configuration {
        get throws { try connectionConfiguration(host: host, port: port, unixSocketPath: unixSocketPath) }
    }

    /// The configuration of the dedicated LISTEN connection: to `listenAddress` if set.
    public var listenConnectionConfiguration: PostgresConnection.Configuration {
        get throws {
            guard let listenAddress else { return try connectionConfiguration }
            return try connectionConfiguration(
                host: listenAddress.host, port: listenAddress.port, unixSocketPath: listenAddress.unixSocketPath)
        }
    }

    private func connectionConfiguration(host: String, port: Int, unixSocketPath: String?) throws
        -> PostgresConnection.Configuration
    {
        var configuration: PostgresConnection.Configuration
        if let unixSocketPath {
            configuration = .init(
                unixSocketPath: unixSocketPath, username: username, password: password, database: database)
        } else {
            let tls: PostgresConnection.Configuration.TLS =
                switch self.tls.first {
                case .plain: .disable
                case .prefer(let configuration): .prefer(try NIOSSLContext(configuration: configuration))
                case .require(let configuration): .require(try NIOSSLContext(configuration: configuration))
                }
            configuration = .init(
                host: host, port: port, username: username, password: password, database: database, tls: tls)
        }
        configuration.options.connectTimeout = TimeAmount(DatabasePool.connectTimeout)
        return configuration
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
            guard unixSocketPath == nil, let fallback = tls.fallingBack(), Self.warrantsFallback(error, from: tls.mode)
            else {
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
        let connection = try await PostgresConnection.connect(
            configuration: try connectionConfiguration, id: 0, logger: logger)
        try? await connection.close()
        guard let listenAddress else { return }
        do {
            let listening = try await PostgresConnection.connect(
                configuration: try listenConnectionConfiguration, id: 0, logger: logger)
            try? await listening.close()
        } catch {
            throw ConfigurationError(
                "cannot open the LISTEN connection (database.listen-url) at "
                    + "\(listenAddress.unixSocketPath ?? "\(listenAddress.host):\(listenAddress.port)"): \(Self.describe(error))"
            )
        }
    }

    /// libpq's reasons to try the other way: the server refusing the connection (its
    /// `pg_hba.conf` has no line for it: with `allow`, for plain; with `prefer`, for TLS), or, with
    /// `prefer`, the TLS handshake failing.
    static func warrantsFallback(_ error: any Error, from mode: DatabaseTLS.Mode) -> Bool {
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
        guard let listenAddress else { return displayAddress }
        return "\(listenAddress.unixSocketPath ?? "\(listenAddress.host):\(listenAddress.port)")/\(database ?? "")"
    }

    public var displayAddress: String {
        "\(unixSocketPath ?? "\(host):\(port)")/\(database ?? "")"
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
