import BatonPostgres
import BatonTestSupport
import Foundation
import LocalPostgres
import Logging
import PostgresNIO
import Testing

/// Baton's TLS settings mean what libpq's mean: against real PostgreSQL servers with certificates
/// made here, every `sslmode` with every root certificate, user and server gives the same result
/// with Baton as with `psql`: refused, connected in plain, or connected with TLS.
@Suite(.serialized)
struct DatabaseTLSTests {
    /// How a connection attempt ended.
    enum Outcome: Equatable, CustomStringConvertible {
        case refused(String)
        case plain
        case encrypted

        static func == (lhs: Outcome, rhs: Outcome) -> Bool {
            switch (lhs, rhs) {
            case (.refused, .refused), (.plain, .plain), (.encrypted, .encrypted): true
            default: false
            }
        }

        var description: String {
            switch self {
            case .refused(let reason): "refused (\(reason))"
            case .plain: "plain"
            case .encrypted: "encrypted"
            }
        }
    }

    struct Case: CustomStringConvertible {
        var server: String
        var port: Int
        var host = "localhost"
        var user: String
        var mode: String
        var rootCertificate: String?
        var clientCertificate: (certificate: String, key: String)?

        var description: String {
            "server \(server), host \(host), user \(user), sslmode=\(mode), sslrootcert=\(rootCertificate.map { URL(fileURLWithPath: $0).lastPathComponent } ?? "none"), client certificate \(clientCertificate == nil ? "none" : "yes")"
        }
    }

    @Test func everyModeConnectsOrIsRefusedAsWithPsql() async throws {
        let certificates = try await Certificates.make()
        defer { try? FileManager.default.removeItem(at: certificates.directory) }
        let hba = [
            "local all all trust",
            "hostssl all certuser 127.0.0.1/32 trust clientcert=verify-full",
            "hostssl all tlsonly 127.0.0.1/32 trust",
            "hostnossl all plainonly 127.0.0.1/32 trust",
            "host all postgres 127.0.0.1/32 trust",
        ]
        func tls(_ certificate: String) -> LocalPostgres.Options {
            LocalPostgres.Options(
                settings: ["ssl": "on"], fast: true,
                files: [
                    "ssl_cert_file": certificates.file("\(certificate).crt"),
                    "ssl_key_file": certificates.file("\(certificate).key"),
                    "ssl_ca_file": certificates.file("ca.crt"),
                ], hba: hba)
        }
        try await withLocalPostgres(tls("server-localhost")) { localhost in
            try await withLocalPostgres(tls("server-other")) { other in
                try await withLocalPostgres(LocalPostgres.Options(fast: true, hba: hba)) { plain in
                    try await compareWithPsql(
                        [
                            ("TLS for localhost", localhost), ("TLS for db.other.example", other),
                            ("without TLS", plain),
                        ],
                        certificates: certificates)
                }
            }
        }
    }

    /// A certificate for another name that also holds the server's address (`DNS:elsewhere.test,
    /// IP:127.0.0.1`): `verify-full` refuses it for `localhost`, as psql does, however the name
    /// resolves, and takes it for `127.0.0.1`; `verify-ca` takes it for both. swift-nio-ssl's own
    /// check took it for `localhost` (the IP SAN matched the socket's address): the reason Baton
    /// negotiates TLS itself (`PostgresTLSChannel`).
    @Test func verifyFullRefusesACertificateForAnotherNameHoldingTheAddress() async throws {
        let certificates = try await Certificates.make()
        defer { try? FileManager.default.removeItem(at: certificates.directory) }
        let options = LocalPostgres.Options(
            settings: ["ssl": "on"], fast: true,
            files: [
                "ssl_cert_file": certificates.file("server-elsewhere.crt"),
                "ssl_key_file": certificates.file("server-elsewhere.key"),
            ])
        try await withLocalPostgres(options) { server in
            var outcomes: [String: Outcome] = [:]
            for mode in ["verify-ca", "verify-full"] {
                for host in ["localhost", "127.0.0.1"] {
                    let testCase = Case(
                        server: "elsewhere", port: server.port, host: host, user: "postgres", mode: mode,
                        rootCertificate: certificates.file("ca.crt").path)
                    let (psql, baton) = (
                        try await certificates.psqlOutcome(testCase), await certificates.batonOutcome(testCase)
                    )
                    #expect(psql == baton, "\(testCase): psql \(psql), Baton \(baton)")
                    outcomes["\(mode) \(host)"] = baton
                }
            }
            #expect(outcomes["verify-full localhost"] == .refused(""))
            #expect(outcomes["verify-full 127.0.0.1"] == .encrypted)
            #expect(outcomes["verify-ca localhost"] == .encrypted)
        }
    }

    /// Every mode, root certificate and user against each server, through psql and through Baton.
    func compareWithPsql(_ servers: [(String, LocalPostgres)], certificates: Certificates) async throws {
        for (_, server) in servers {
            _ = try await certificates.psql(
                "host=127.0.0.1 port=\(server.port) user=postgres dbname=postgres sslmode=disable",
                "CREATE ROLE tlsonly LOGIN; CREATE ROLE plainonly LOGIN; CREATE ROLE certuser LOGIN")
        }

        let client = (certificates.file("client.crt").path, certificates.file("client.key").path)
        var cases: [Case] = []
        for (name, server) in servers {
            for mode in DatabaseTLS.Mode.allCases.map(\.rawValue) {
                for root in [nil, "ca.crt", "wrong-ca.crt"] {
                    let rootCertificate = root.map { certificates.file($0).path }
                    for user in ["postgres", "tlsonly", "plainonly"] {
                        cases.append(
                            Case(
                                server: name, port: server.port, user: user, mode: mode,
                                rootCertificate: rootCertificate))
                    }
                    cases.append(
                        Case(
                            server: name, port: server.port, user: "certuser", mode: mode,
                            rootCertificate: rootCertificate, clientCertificate: client))
                }
            }
        }
        // The name in the certificate is checked against the host as written: an address is not
        // `localhost`.
        for mode in ["verify-ca", "verify-full"] {
            cases.append(
                Case(
                    server: servers[0].0, port: servers[0].1.port, host: "127.0.0.1", user: "postgres", mode: mode,
                    rootCertificate: certificates.file("ca.crt").path))
        }

        var disagreements: [String] = []
        var seen: Set<String> = []
        for testCase in cases {
            let expected = try await certificates.psqlOutcome(testCase)
            let actual = await certificates.batonOutcome(testCase)
            seen.insert("\(expected)".prefix(7).description)
            if expected != actual { disagreements.append("\(testCase): psql \(expected), Baton \(actual)") }
        }
        #expect(
            disagreements.isEmpty, "\(disagreements.count) of \(cases.count):\n\(disagreements.joined(separator: "\n"))"
        )
        // The matrix reaches all three outcomes (else it would prove little).
        #expect(seen == ["refused", "plain", "encrypt"], "\(seen)")
    }

    // MARK: Bad settings: refused at once, naming the setting and the file

    @Test func badSettingsAreRefusedNamingTheSettingAndTheFile() async throws {
        let certificates = try await Certificates.make()
        defer { try? FileManager.default.removeItem(at: certificates.directory) }
        let home = certificates.home.path
        func refusal(_ query: String, environment: [String: String] = [:]) -> String {
            do {
                _ = try DatabaseConfiguration(
                    url: "postgres://u@localhost/db?\(query)",
                    environment: environment.merging(["HOME": home]) { a, _ in a })
                return "accepted"
            } catch {
                return "\(error)"
            }
        }
        let ca = certificates.file("ca.crt").path
        let key = certificates.file("client.key").path
        let certificate = certificates.file("client.crt").path
        #expect(
            refusal("sslmode=verify")
                == "sslmode \"verify\" is not one of disable, allow, prefer, require, verify-ca, verify-full")
        #expect(
            refusal("sslmode=require&sslrootcert=/nonexistent/ca.pem").hasPrefix(
                "sslrootcert /nonexistent/ca.pem: cannot read it"))
        #expect(refusal("sslrootcert=\(key)") == "sslrootcert \(key): not a PEM certificate file")
        #expect(refusal("sslmode=verify-ca").hasPrefix("sslmode=verify-ca needs the CA to check the server against"))
        #expect(
            refusal("sslmode=require&sslrootcert=system")
                == "sslmode=require may not be used with sslrootcert=system: use sslmode=verify-full")
        #expect(refusal("sslkey=\(key)") == "sslkey \(key) is set but sslcert is not: set both, or neither")
        #expect(
            refusal("sslcert=\(certificate)&sslkey=\(certificates.file("server-other.key").path)").hasPrefix(
                "sslcert/sslkey cannot be used together"))
        let open = certificates.home.appending(path: "open.key")
        try FileManager.default.copyItem(at: certificates.file("client.key"), to: open)
        chmod(open.path, 0o644)
        #expect(
            refusal("sslcert=\(certificate)&sslkey=\(open.path)")
                == "sslkey \(open.path): readable by others (mode 644): chmod 600 it")
        #expect(refusal("sslmode=require&sslrootcert=\(ca)") == "accepted")
        // Through the binary: `migrate` stops at once, with that line.
        let run = try await ChildProcess(
            try ChildProcess.builtBinary("baton"),
            [
                "migrate", "--database-url", "postgres://u@127.0.0.1:1/db", "--sslrootcert", "/nonexistent/ca.pem",
                "--sslmode", "verify-full",
            ],
            environment: ["BATON_DATABASE_URL": nil, "DATABASE_URL": nil, "HOME": home])
        let status = try await run.waitForExit(timeout: .seconds(20))
        let errors = try String(contentsOf: run.errors, encoding: .utf8)
        #expect(status != 0)
        #expect(errors.contains("sslrootcert /nonexistent/ca.pem: cannot read it"), "\(errors)")
    }

    /// Where each parameter comes from: Baton's settings, else the URL, else libpq's variables.
    @Test func settingsThenTheURLThenLibpqsEnvironment() throws {
        let environment = ["PGSSLMODE": "require", "HOME": "/nonexistent"]
        #expect(try DatabaseConfiguration(url: "postgres://u@h/db", environment: environment).tls.mode == .require)
        #expect(
            try DatabaseConfiguration(url: "postgres://u@h/db?sslmode=disable", environment: environment).tls.mode
                == .disable)
        #expect(
            try DatabaseConfiguration(
                url: "postgres://u@h/db?sslmode=disable", environment: environment, tlsSettings: ["sslmode": "allow"]
            ).tls.mode == .allow)
        #expect(
            try DatabaseConfiguration(url: "postgres://u@h/db", environment: ["HOME": "/nonexistent"]).tls.mode
                == .prefer)
        // `sslrootcert=system` makes verify-full the default, as in libpq 16.
        #expect(
            try DatabaseConfiguration(
                url: "postgres://u@h/db?sslrootcert=system", environment: ["HOME": "/nonexistent"]
            )
            .tls.mode == .verifyFull)
    }
}

/// A CA, a second CA that signed nothing here, server certificates for `localhost`, for
/// `db.other.example` and for `elsewhere.test` with the IP address 127.0.0.1, and a client certificate for the role `certuser`, made with openssl.
struct Certificates: Sendable {
    let directory: URL
    /// An empty home, so that neither psql nor Baton finds files of its own under `~/.postgresql`.
    let home: URL

    func file(_ name: String) -> URL { directory.appending(path: name) }

    static func make() async throws -> Certificates {
        let made = try await TestCertificates.make(
            leaves: [
                .init("server-localhost", commonName: "localhost", subjectAltName: "DNS:localhost"),
                .init("server-other", commonName: "db.other.example", subjectAltName: "DNS:db.other.example"),
                .init("client", commonName: "certuser", subjectAltName: "DNS:certuser"),
                .init(
                    "server-elsewhere", commonName: "elsewhere.test", subjectAltName: "DNS:elsewhere.test,IP:127.0.0.1"),
            ],
            otherCAs: ["wrong-ca"])
        let home = made.directory.appending(path: "home")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        return Certificates(directory: made.directory, home: home)
    }

    /// Runs `sql` through psql with `connection` (a libpq connection string), in the empty home
    /// and with no libpq variable of the caller's.
    func psql(_ connection: String, _ sql: String) async throws -> (status: Int32, output: String, errors: String) {
        let psql = try await LocalPostgres.findPsql()
        var environment: [String: String?] = ["HOME": home.path, "PGCONNECT_TIMEOUT": "5"]
        for name in ["PGSSLMODE", "PGSSLROOTCERT", "PGSSLCERT", "PGSSLKEY", "PGHOST", "PGPORT", "PGUSER", "PGDATABASE"]
        {
            environment[name] = .some(nil)
        }
        let run = try await ChildProcess(psql, ["-XAtq", "-d", connection, "-c", sql], environment: environment)
        let status = try await run.waitForExit(timeout: .seconds(30))
        return (
            status, try String(contentsOf: run.output, encoding: .utf8),
            try String(contentsOf: run.errors, encoding: .utf8)
        )
    }

    static let sslQuery = "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()"

    func psqlOutcome(_ testCase: DatabaseTLSTests.Case) async throws -> DatabaseTLSTests.Outcome {
        var connection =
            "host=\(testCase.host) port=\(testCase.port) user=\(testCase.user) dbname=postgres sslmode=\(testCase.mode)"
        if let root = testCase.rootCertificate { connection += " sslrootcert=\(root)" }
        if let client = testCase.clientCertificate {
            connection += " sslcert=\(client.certificate) sslkey=\(client.key)"
        }
        let result = try await psql(connection, Self.sslQuery)
        guard result.status == 0 else {
            return .refused(result.errors.split(separator: "\n").first.map(String.init) ?? "exit \(result.status)")
        }
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines) == "t" ? .encrypted : .plain
    }

    /// As a Baton process does it: the settings read, the connection checked (which settles the
    /// fallbacks), then a query through the pool the process would use.
    func batonOutcome(_ testCase: DatabaseTLSTests.Case) async -> DatabaseTLSTests.Outcome {
        var url = "postgres://\(testCase.user)@\(testCase.host):\(testCase.port)/postgres?sslmode=\(testCase.mode)"
        if let root = testCase.rootCertificate { url += "&sslrootcert=\(root)" }
        if let client = testCase.clientCertificate { url += "&sslcert=\(client.certificate)&sslkey=\(client.key)" }
        var logger = Logger(label: "baton.test.tls")
        logger.logLevel = .critical
        do {
            let configuration = try await DatabaseConfiguration(url: url, environment: ["HOME": home.path])
                .checkConnection(logger: logger)
            let pool = DatabasePool(configuration: configuration, logger: logger)
            return try await withThrowingTaskGroup(of: DatabaseTLSTests.Outcome?.self) { group in
                group.addImmediateTask {
                    await pool.run()
                    return nil
                }
                defer { group.cancelAll() }
                let rows = try await pool.execute(PostgresQuery(unsafeSQL: Self.sslQuery), logger: logger)
                guard let encrypted = try rows.first?.decode(Bool.self) else { return .refused("no row") }
                return encrypted ? .encrypted : .plain
            }
        } catch {
            return .refused("\(error)")
        }
    }
}
