import Foundation
import NIOSSL
import PostgresNIO

/// Where Baton's database is and which schema holds its tables.
///
/// Built from a URL: `postgres://user:password@host:5432/database?sslmode=disable&schema=baton`.
/// `host` may also be a socket directory (`?host=/run/postgresql`). `sslmode` is `disable`,
/// `prefer` (the default) or `require`.
public struct DatabaseConfiguration: Sendable {
    public enum TLSMode: String, Sendable { case disable, prefer, require }

    public var host: String
    public var port: Int
    public var unixSocketPath: String?
    public var username: String
    public var password: String?
    public var database: String?
    public var tls: TLSMode
    /// The PostgreSQL schema of Baton's tables; an identifier (`[a-z_][a-z0-9_]*`).
    public var schema: String
    /// Pool size of the `PostgresClient` made by `makeClient()`.
    public var maximumConnections: Int = 20

    public init(
        host: String = "127.0.0.1", port: Int = 5432, unixSocketPath: String? = nil, username: String,
        password: String? = nil, database: String? = nil, tls: TLSMode = .prefer, schema: String = "baton"
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
        self.tls = tls
        self.schema = schema
    }

    /// Parses a `postgres://` or `postgresql://` URL.
    public init(url string: String) throws {
        guard let components = URLComponents(string: string),
            components.scheme == "postgres" || components.scheme == "postgresql"
        else {
            throw ConfigurationError("database URL must look like postgres://user:password@host:port/database")
        }
        let query = Dictionary(
            (components.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { _, last in last })
        let socket = query["host"].flatMap { $0.hasPrefix("/") ? $0 : nil }
        let database = components.path.split(separator: "/").first.map(String.init)
        guard let tls = TLSMode(rawValue: query["sslmode"] ?? "prefer") else {
            throw ConfigurationError("sslmode must be disable, prefer or require")
        }
        try self.init(
            host: components.host.flatMap { $0.isEmpty ? nil : $0 } ?? "127.0.0.1",
            port: components.port ?? 5432,
            unixSocketPath: socket.map { "\($0)/.s.PGSQL.\(components.port ?? 5432)" },
            username: components.user ?? ProcessInfo.processInfo.environment["USER"] ?? "postgres",
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
        return try DatabaseConfiguration(url: url)
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

    /// A connection pool for this database.
    public func makeClient(logger: Logger? = nil) -> PostgresClient {
        var configuration: PostgresClient.Configuration
        if let unixSocketPath {
            configuration = .init(
                unixSocketPath: unixSocketPath, username: username, password: password, database: database)
        } else {
            configuration = .init(
                host: host, port: port, username: username, password: password, database: database,
                tls: clientTLS)
        }
        configuration.options.maximumConnections = maximumConnections
        configuration.options.connectTimeout = .seconds(5)
        if let logger { return PostgresClient(configuration: configuration, backgroundLogger: logger) }
        return PostgresClient(configuration: configuration)
    }

    /// The configuration of a single connection (LISTEN needs one of its own).
    public var connectionConfiguration: PostgresConnection.Configuration {
        get throws {
            var configuration: PostgresConnection.Configuration
            if let unixSocketPath {
                configuration = .init(
                    unixSocketPath: unixSocketPath, username: username, password: password, database: database)
            } else {
                configuration = .init(
                    host: host, port: port, username: username, password: password, database: database,
                    tls: try connectionTLS)
            }
            configuration.options.connectTimeout = .seconds(5)
            return configuration
        }
    }

    private var clientTLS: PostgresClient.Configuration.TLS {
        switch tls {
        case .disable: .disable
        case .prefer: .prefer(.makeClientConfiguration())
        case .require: .require(.makeClientConfiguration())
        }
    }

    private var connectionTLS: PostgresConnection.Configuration.TLS {
        get throws {
            switch tls {
            case .disable: .disable
            case .prefer: .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
            case .require: .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
            }
        }
    }

    /// Connects once, so that a wrong address or password is reported at once with PostgreSQL's
    /// own words (the pool only reports a tripped circuit breaker after about a minute).
    public func checkConnection(logger: Logger) async throws {
        let connection: PostgresConnection
        do {
            connection = try await PostgresConnection.connect(
                configuration: try connectionConfiguration, id: 0, logger: logger)
        } catch {
            throw ConfigurationError("cannot connect to PostgreSQL at \(displayAddress): \(String(reflecting: error))")
        }
        try? await connection.close()
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
