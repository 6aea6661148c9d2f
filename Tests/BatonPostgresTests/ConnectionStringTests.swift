import Testing

@testable import BatonPostgres

/// Connection strings read as libpq reads them, without a server: both forms, several hosts, and
/// the refusals in libpq's words.
@Suite struct ConnectionStringTests {
    typealias Endpoint = ConnectionString.Endpoint

    @Test func aURLWithSeveralHostsAndTheirPorts() throws {
        let parsed = try ConnectionString(
            "postgres://baton:s%40cret@db1.example:5433,[::1]:5434,db3/jobs?target_session_attrs=read-write&schema=q")
        #expect(
            parsed.endpoints == [
                .tcp(host: "db1.example", port: 5433), .tcp(host: "::1", port: 5434), .tcp(host: "db3", port: 5432),
            ])
        #expect(parsed.user == "baton" && parsed.password == "s@cret" && parsed.database == "jobs")
        #expect(parsed.parameters == ["target_session_attrs": "read-write", "schema": "q"])
    }

    @Test func queryParametersOverrideTheURLsParts() throws {
        let parsed = try ConnectionString("postgresql://u@ignored/db?host=h1,h2&port=6000&dbname=other&user=v")
        #expect(parsed.endpoints == [.tcp(host: "h1", port: 6000), .tcp(host: "h2", port: 6000)])
        #expect(parsed.user == "v" && parsed.database == "other")
    }

    @Test func aSocketDirectoryIsAHostStartingWithASlash() throws {
        let parsed = try ConnectionString("postgres://u@/db?host=/run/postgresql&port=5433")
        #expect(parsed.endpoints == [.socket(directory: "/run/postgresql", port: 5433)])
        #expect(parsed.endpoints[0].socketPath == "/run/postgresql/.s.PGSQL.5433")
    }

    @Test func noHostIsLoopback() throws {
        #expect(try ConnectionString("postgres:///db").endpoints == [.tcp(host: "127.0.0.1", port: 5432)])
    }

    @Test func theKeywordForm() throws {
        let parsed = try ConnectionString(
            #"host=h1,h2 port=5432,5433 dbname=jobs user=baton password='it\'s \'quoted\' a b' connect_timeout = 3"#)
        #expect(parsed.endpoints == [.tcp(host: "h1", port: 5432), .tcp(host: "h2", port: 5433)])
        #expect(parsed.password == "it's 'quoted' a b")
        #expect(parsed.user == "baton" && parsed.database == "jobs")
        #expect(parsed.parameters == ["connect_timeout": "3"])
    }

    @Test(arguments: [
        ("postgres://h1:x,h2/db", #"invalid port number: "x""#),
        ("host=h1,h2,h3 port=1,2", "could not match 2 port numbers to 3 hosts"),
        ("postgres://h/db?target_session_attrs=primary-ish", #"invalid target_session_attrs value: "primary-ish""#),
        ("postgres://h/db?connect_timeout=soon", "connect_timeout"),
        ("postgres://h/db?sslmdoe=require", #"invalid URI query parameter: "sslmdoe""#),
        ("host=h colour=blue", #"invalid connection option "colour""#),
        ("host=h dbname", #"missing "=" after "dbname""#),
        ("host=h password='open", "unterminated quoted string"),
        ("postgres://[::1/db", #"missing "]""#),
        ("mysql://h/db", "postgres:// URL"),
        ("postgres://h:99999/db", #"invalid port number: "99999""#),
    ])
    func badStringsAreRefusedInLibpqsWords(text: String, message: String) {
        #expect {
            _ = try ConnectionString(text)
        } throws: { error in
            "\(error)".contains(message)
        }
    }

    @Test func theTargetAndTheTimeoutReachTheConfiguration() throws {
        var configuration = try DatabaseConfiguration(url: "postgres://u@h1,h2/db", environment: [:])
        #expect(configuration.targetSessionAttributes == .readWrite, "Baton's default: it writes")
        #expect(configuration.connectTimeout == .seconds(5))
        configuration = try DatabaseConfiguration(
            url: "postgres://u@h1,h2/db?target_session_attrs=any&connect_timeout=1", environment: [:])
        #expect(configuration.targetSessionAttributes == .any)
        #expect(configuration.connectTimeout == .seconds(2), "libpq's floor")
        configuration = try DatabaseConfiguration(
            url: "postgres://u@h/db", environment: ["PGTARGETSESSIONATTRS": "prefer-standby", "PGCONNECT_TIMEOUT": "9"])
        #expect(configuration.targetSessionAttributes == .preferStandby)
        #expect(configuration.connectTimeout == .seconds(9))
        #expect(configuration.displayAddress == "h:5432/db")
        #expect(
            try DatabaseConfiguration(url: "postgres://u:secret@h1:1,h2:2/db", environment: [:]).displayAddress
                == "h1:1,h2:2/db")
    }
}

/// Which servers `target_session_attrs` takes, as libpq decides.
@Suite struct TargetSessionAttributesTests {
    static let primary = TargetSessionAttributes.ServerState(inRecovery: false, readOnly: false)
    static let fencedPrimary = TargetSessionAttributes.ServerState(inRecovery: false, readOnly: true)
    static let standby = TargetSessionAttributes.ServerState(inRecovery: true, readOnly: true)

    @Test func eachTargetTakesItsServers() {
        let cases: [(TargetSessionAttributes, [Bool])] = [
            (.any, [true, true, true]), (.readWrite, [true, false, false]), (.readOnly, [false, true, true]),
            (.primary, [true, true, false]), (.standby, [false, false, true]), (.preferStandby, [false, false, true]),
        ]
        for (target, expected) in cases {
            #expect([Self.primary, Self.fencedPrimary, Self.standby].map(target.accepts) == expected, "\(target)")
        }
        #expect(TargetSessionAttributes.allCases.filter(\.hasSecondPass) == [.preferStandby])
        #expect(!TargetSessionAttributes.any.needsCheck)
    }
}

/// The host name check libpq makes under `verify-full`.
@Suite struct ServerNameCheckTests {
    @Test func aHostNameIsCheckedAgainstDNSNamesOnly() {
        let localhost = ServerNameCheck(host: "localhost")
        let loopback: [UInt8] = [127, 0, 0, 1]
        #expect(!localhost.matches(dnsNames: ["elsewhere.test"], ipAddresses: [loopback], commonName: "localhost"))
        #expect(localhost.matches(dnsNames: ["LOCALHOST"], ipAddresses: [], commonName: nil))
        // The common name only when no DNS name is given.
        #expect(localhost.matches(dnsNames: [], ipAddresses: [loopback], commonName: "localhost"))
        #expect(!localhost.matches(dnsNames: ["other"], ipAddresses: [], commonName: "localhost"))
    }

    @Test func anIPLiteralIsCheckedAgainstIPAddresses() {
        let address = ServerNameCheck(host: "127.0.0.1")
        #expect(address.matches(dnsNames: ["elsewhere.test"], ipAddresses: [[127, 0, 0, 1]], commonName: nil))
        #expect(!address.matches(dnsNames: ["elsewhere.test"], ipAddresses: [[127, 0, 0, 2]], commonName: nil))
        #expect(!address.matches(dnsNames: [], ipAddresses: [[10, 0, 0, 1]], commonName: "127.0.0.1"))
        #expect(address.matches(dnsNames: [], ipAddresses: [], commonName: "127.0.0.1"))
        let six = ServerNameCheck(host: "::1")
        #expect(six.matches(dnsNames: [], ipAddresses: [Array(repeating: 0, count: 15) + [1]], commonName: nil))
    }

    @Test func aWildcardStandsForOneLabel() {
        let check = { ServerNameCheck(host: $0).matches(dnsNames: ["*.db.example"], ipAddresses: [], commonName: nil) }
        #expect(check("primary.db.example"))
        #expect(!check("db.example"))
        #expect(!check("a.primary.db.example"))
        #expect(!check(".db.example"))
    }
}
