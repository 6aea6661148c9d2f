import Foundation

/// A PostgreSQL connection string read as libpq reads one, in either of its two forms:
///
/// - a URL: `postgres://user:password@h1:5432,h2:5433/db?target_session_attrs=read-write`
///   (`postgresql://` too; `[::1]` for an IPv6 host; percent-encoding anywhere);
/// - keywords and values: `host=h1,h2 port=5432,5433 dbname=db user=baton password='a b'`.
///
/// Several hosts are tried in order (``DatabaseConnector``). The ports are one for every host, or
/// one each; a host that starts with `/` is a directory holding the server's Unix socket.
/// Parameters are those of libpq's that Baton reads (``knownParameters``), plus `schema`, where
/// Baton's tables live; any other is refused, naming it, as libpq refuses an option it does not
/// know. Values are checked here where they can be without the rest of the configuration
/// (ports, `connect_timeout`, `target_session_attrs`); the TLS files by ``DatabaseTLS``.
package struct ConnectionString: Sendable, Equatable {
    /// One place to connect to.
    package enum Endpoint: Sendable, Hashable, CustomStringConvertible {
        case tcp(host: String, port: Int)
        /// A Unix socket: the directory holding `.s.PGSQL.<port>`.
        case socket(directory: String, port: Int)

        /// The socket file of a `.socket` endpoint.
        package var socketPath: String? {
            guard case .socket(let directory, let port) = self else { return nil }
            return "\(directory)/.s.PGSQL.\(port)"
        }

        package var description: String {
            switch self {
            case .tcp(let host, let port): host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
            case .socket: socketPath ?? ""
            }
        }
    }

    package var endpoints: [Endpoint]
    package var user: String?
    package var password: String?
    package var database: String?
    /// Every other parameter, by its libpq keyword (`sslmode`, `target_session_attrs` …).
    package var parameters: [String: String]

    /// libpq's keywords Baton reads, and `schema`, its own.
    package static let knownParameters: Set<String> = [
        "host", "port", "user", "password", "dbname", "sslmode", "sslrootcert", "sslcert", "sslkey",
        "target_session_attrs", "connect_timeout", "application_name", "schema",
    ]

    /// The default host when none is named: loopback over TCP, where libpq would use its socket
    /// directory (which differs between distributions; a server on loopback is what a newcomer has).
    package static let defaultHost = "127.0.0.1"
    package static let defaultPort = 5432

    /// Reads `text` in whichever form it is written.
    package init(_ text: String) throws(ConfigurationError) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.hasPrefix("postgres://") || trimmed.hasPrefix("postgresql://") {
            try self.init(url: trimmed)
        } else if trimmed.contains("=") {
            try self.init(keywords: trimmed)
        } else {
            throw ConfigurationError(
                "the database URL must be a postgres:// URL (postgres://user:password@host:5432/database) "
                    + "or libpq's keyword=value form (host=… dbname=…)")
        }
    }

    // MARK: URL

    private init(url text: String) throws(ConfigurationError) {
        var rest = Substring(text)
        rest = rest[rest.index(after: rest.firstIndex(of: "/")!)...].dropFirst()  // past "//"
        // The query, then the path, then the authority, as libpq splits them.
        var query: Substring = ""
        if let mark = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: mark)...]
            rest = rest[..<mark]
        }
        var path: Substring?
        if let slash = rest.firstIndex(of: "/") {
            path = rest[rest.index(after: slash)...]
            rest = rest[..<slash]
        }
        var user: String?
        var password: String?
        if let at = rest.lastIndex(of: "@") {
            let userInfo = rest[..<at]
            rest = rest[rest.index(after: at)...]
            if let colon = userInfo.firstIndex(of: ":") {
                user = try Self.decode(userInfo[..<colon], "the user name")
                password = try Self.decode(userInfo[userInfo.index(after: colon)...], "the password")
            } else {
                user = try Self.decode(userInfo, "the user name")
            }
        }
        var hosts: [String] = []
        var ports: [String] = []
        if !rest.isEmpty {
            for spec in rest.split(separator: ",", omittingEmptySubsequences: false) {
                let (host, port) = try Self.splitHostPort(spec, in: text)
                hosts.append(try Self.decode(host, "a host name"))
                ports.append(port)
            }
        }
        var parameters: [String: String] = [:]
        for pair in query.split(separator: "&") where !pair.isEmpty {
            guard let equals = pair.firstIndex(of: "=") else {
                throw ConfigurationError("missing \"=\" after \"\(pair)\" in the query of the database URL")
            }
            let key = try Self.decode(pair[..<equals], "a query parameter")
            let value = try Self.decode(pair[pair.index(after: equals)...], "the value of \(key)")
            guard Self.knownParameters.contains(key) else { throw Self.unknown(key, uri: true) }
            parameters[key] = value
        }
        // Query parameters override the URL's parts, as in libpq.
        if let host = parameters.removeValue(forKey: "host") { hosts = Self.list(host) }
        if let port = parameters.removeValue(forKey: "port") { ports = Self.list(port) }
        if let name = parameters.removeValue(forKey: "user") { user = name }
        if let secret = parameters.removeValue(forKey: "password") { password = secret }
        var database: String?
        if let path { database = try Self.decode(path, "the database name") }
        if let name = parameters.removeValue(forKey: "dbname") { database = name }
        self.endpoints = try Self.endpoints(hosts: hosts, ports: ports)
        self.user = user.flatMap { $0.isEmpty ? nil : $0 }
        self.password = password
        self.database = database.flatMap { $0.isEmpty ? nil : $0 }
        self.parameters = parameters
        try Self.check(parameters)
    }

    /// `host[:port]`, the host possibly a bracketed IPv6 address.
    private static func splitHostPort(_ spec: Substring, in text: String) throws(ConfigurationError) -> (
        Substring, String
    ) {
        if spec.hasPrefix("[") {
            guard let close = spec.firstIndex(of: "]") else {
                throw ConfigurationError("missing \"]\" in an IPv6 host address in the database URL")
            }
            let host = spec[spec.index(after: spec.startIndex)..<close]
            let after = spec[spec.index(after: close)...]
            guard after.isEmpty || after.hasPrefix(":") else {
                throw ConfigurationError(
                    "unexpected \"\(after.first!)\" after an IPv6 host address in the database URL")
            }
            return (host, String(after.dropFirst()))
        }
        if let colon = spec.lastIndex(of: ":") {
            return (spec[..<colon], String(spec[spec.index(after: colon)...]))
        }
        return (spec, "")
    }

    private static func decode(_ text: Substring, _ what: String) throws(ConfigurationError) -> String {
        guard let decoded = String(text).removingPercentEncoding else {
            throw ConfigurationError("invalid percent-encoding in \(what) of the database URL")
        }
        return decoded
    }

    // MARK: keyword=value

    private init(keywords text: String) throws(ConfigurationError) {
        var parameters: [String: String] = [:]
        var characters = Array(text)[...]
        func skipSpace() { while let first = characters.first, first.isWhitespace { characters.removeFirst() } }
        while true {
            skipSpace()
            guard !characters.isEmpty else { break }
            var key = ""
            while let first = characters.first, first != "=", !first.isWhitespace {
                key.append(characters.removeFirst())
            }
            skipSpace()
            guard characters.first == "=" else {
                throw ConfigurationError("missing \"=\" after \"\(key)\" in the connection string")
            }
            characters.removeFirst()
            skipSpace()
            var value = ""
            if characters.first == "'" {
                characters.removeFirst()
                var closed = false
                while let next = characters.popFirst() {
                    if next == "\\", let escaped = characters.popFirst() {
                        value.append(escaped)
                    } else if next == "'" {
                        closed = true
                        break
                    } else {
                        value.append(next)
                    }
                }
                guard closed else { throw ConfigurationError("unterminated quoted string in the connection string") }
            } else {
                while let first = characters.first, !first.isWhitespace {
                    characters.removeFirst()
                    if first == "\\", let escaped = characters.popFirst() {
                        value.append(escaped)
                    } else {
                        value.append(first)
                    }
                }
            }
            guard Self.knownParameters.contains(key) else { throw Self.unknown(key, uri: false) }
            parameters[key] = value
        }
        let hosts = parameters.removeValue(forKey: "host").map(Self.list) ?? []
        let ports = parameters.removeValue(forKey: "port").map(Self.list) ?? []
        self.endpoints = try Self.endpoints(hosts: hosts, ports: ports)
        self.user = parameters.removeValue(forKey: "user").flatMap { $0.isEmpty ? nil : $0 }
        self.password = parameters.removeValue(forKey: "password")
        self.database = parameters.removeValue(forKey: "dbname").flatMap { $0.isEmpty ? nil : $0 }
        self.parameters = parameters
        try Self.check(parameters)
    }

    // MARK: shared rules

    private static func list(_ text: String) -> [String] {
        text.split(separator: ",", omittingEmptySubsequences: false).map { String($0) }
    }

    /// Pairs hosts with ports as libpq does: one port for all, or one each; an empty entry is the
    /// default.
    private static func endpoints(hosts given: [String], ports: [String]) throws(ConfigurationError) -> [Endpoint] {
        let hosts = given.isEmpty ? [""] : given
        guard ports.count <= 1 || ports.count == hosts.count else {
            throw ConfigurationError(
                "could not match \(ports.count) port numbers to \(hosts.count) hosts: "
                    + "give one port for every host, or one port each")
        }
        var endpoints: [Endpoint] = []
        for (index, host) in hosts.enumerated() {
            let text = ports.isEmpty ? "" : ports[ports.count == 1 ? 0 : index]
            var port = defaultPort
            if !text.isEmpty {
                guard let number = Int(text), (1...65535).contains(number) else {
                    throw ConfigurationError("invalid port number: \"\(text)\"")
                }
                port = number
            }
            if host.hasPrefix("/") {
                endpoints.append(.socket(directory: host, port: port))
            } else {
                endpoints.append(.tcp(host: host.isEmpty ? defaultHost : host, port: port))
            }
        }
        return endpoints
    }

    private static func check(_ parameters: [String: String]) throws(ConfigurationError) {
        if let text = parameters["target_session_attrs"] {
            _ = try TargetSessionAttributes(parameter: text)
        }
        if let text = parameters["connect_timeout"] {
            _ = try connectTimeout(text)
        }
    }

    /// `connect_timeout` in seconds, as libpq reads it: 0 or absent is Baton's default (libpq's is
    /// none: a pool needs one to tell an absent server from a slow one), and anything under 2 is 2.
    package static func connectTimeout(_ text: String) throws(ConfigurationError) -> Duration? {
        guard let seconds = Int(text.trimmingCharacters(in: .whitespaces)), seconds >= 0 else {
            throw ConfigurationError(
                "invalid integer value \"\(text)\" for connection option \"connect_timeout\" (whole seconds)")
        }
        return seconds == 0 ? nil : .seconds(max(seconds, 2))
    }

    private static func unknown(_ key: String, uri: Bool) -> ConfigurationError {
        ConfigurationError(
            (uri ? "invalid URI query parameter: \"\(key)\"" : "invalid connection option \"\(key)\"")
                + " (Baton reads \(knownParameters.sorted().joined(separator: ", ")))")
    }
}
