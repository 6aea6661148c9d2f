import Baton
import Synchronization
import Testing

@testable import BatonWorker

/// Where the `http` task may connect: pure decisions on names and addresses.
struct OutboundPolicyTests {
    func address(_ text: String) throws -> IPAddress { try #require(IPAddress(text)) }

    @Test func metadataAndLinkLocalAddressesAreAlwaysDenied() throws {
        let open = OutboundPolicy()
        for denied in [
            "169.254.169.254", "169.254.0.1", "fd00:ec2::254", "fe80::1", "100.100.100.200",
            "::ffff:169.254.169.254",
        ] {
            #expect(!open.permits(try address(denied), route: .anyAddress), "\(denied)")
            #expect(open.route(host: denied) == nil, "a literal \(denied) is refused before connecting")
        }
        #expect(open.route(host: "[fd00:ec2::254]") == nil)
        for allowed in ["127.0.0.1", "10.1.2.3", "93.184.216.34", "::1", "2001:db8::1"] {
            #expect(open.permits(try address(allowed), route: .anyAddress), "\(allowed)")
        }
        #expect(open.route(host: "api.example.com") == .anyAddress)
    }

    @Test func denyListsRefuseHostsAndNetworks() throws {
        let policy = try OutboundPolicy(allow: nil, deny: "internal.example.com, *.corp.example, 10.0.0.0/8,::1")
        #expect(policy.route(host: "internal.example.com") == nil)
        #expect(policy.route(host: "INTERNAL.example.com") == nil)
        #expect(policy.route(host: "db.corp.example") == nil)
        #expect(policy.route(host: "corp.example") == .anyAddress, "*. matches names under the domain only")
        #expect(policy.route(host: "10.9.9.9") == nil)
        #expect(!policy.permits(try address("10.200.0.1"), route: .anyAddress))
        #expect(!policy.permits(try address("::1"), route: .anyAddress))
        #expect(policy.permits(try address("11.0.0.1"), route: .anyAddress))
    }

    @Test func allowListsLetThroughMatchingHostsOrAddressesOnly() throws {
        let policy = try OutboundPolicy(allow: "*.partner.example api.example.com 203.0.113.0/24", deny: "203.0.113.9")
        #expect(policy.route(host: "hooks.partner.example") == .anyAddress)
        #expect(policy.route(host: "api.example.com") == .anyAddress)
        #expect(policy.route(host: "elsewhere.example") == .allowedAddress, "decided by the address it reaches")
        #expect(policy.permits(try address("203.0.113.5"), route: .allowedAddress))
        #expect(!policy.permits(try address("198.51.100.1"), route: .allowedAddress))
        #expect(!policy.permits(try address("203.0.113.9"), route: .allowedAddress), "deny wins")
        #expect(
            !policy.permits(try address("169.254.169.254"), route: .anyAddress), "an allowed name cannot reach metadata"
        )
        let namesOnly = try OutboundPolicy(allow: "api.example.com", deny: nil)
        #expect(namesOnly.route(host: "other.example") == nil)
    }

    @Test func malformedEntriesAreRefusedByName() {
        #expect(throws: OutboundPolicyError.self) { try OutboundPolicy(allow: "10.0.0.0/33", deny: nil) }
        #expect(throws: OutboundPolicyError.self) { try OutboundPolicy(allow: nil, deny: "http://x") }
        #expect(throws: OutboundPolicyError.self) { try OutboundPolicy(allow: "*.", deny: nil) }
    }

    @Test func networksMatchByPrefix() throws {
        // Parsed from text, as settings give them (a bare literal would take the literal's init).
        func network(_ text: String) throws -> IPNetwork { try #require(IPNetwork(text)) }
        let network20 = try network("192.168.16.0/20")
        #expect(network20.contains(try address("192.168.31.255")))
        #expect(!network20.contains(try address("192.168.32.0")))
        #expect(!network20.contains(try address("::ffff:c0a8:2000")))
        #expect(try network("0.0.0.0/0").contains(try address("8.8.8.8")))
        #expect(!(try network("::/0").contains(try address("8.8.8.8"))), "families do not mix")
    }

    @Test func secretsAreRedactedAsSentAndAsPercentEncoded() {
        let redact = Redactor(["s3cr&t", "s3cr"])
        #expect(redact("a s3cr&t b s3cr%26t c") == "a [redacted] b [redacted] c")
        #expect(redact(["k": "s3cr", "s3cr": ["x s3cr"]]) == ["k": "[redacted]", "[redacted]": ["x [redacted]"]])
        #expect(Redactor([""])("unchanged") == "unchanged")
    }

    @Test func responseBodiesAreJSONTextOrBase64() {
        #expect(HTTPTask.body(Array(#"{"a":1}"#.utf8), contentType: "application/json; charset=utf-8") == ["a": 1])
        #expect(HTTPTask.body(Array(#"{"a":1}"#.utf8), contentType: "application/problem+json") == ["a": 1])
        #expect(HTTPTask.body(Array("not json".utf8), contentType: "application/json") == "not json")
        #expect(HTTPTask.body(Array("héllo".utf8), contentType: "text/plain") == "héllo")
        #expect(HTTPTask.body([0xFF, 0x00, 0x10], contentType: "application/octet-stream") == "/wAQ")
        #expect(HTTPTask.body(Array("a\u{0}b".utf8), contentType: "text/plain") == "YQBi", "NUL: jsonb cannot hold it")
        #expect(
            HTTPTask.body(Array(#"{"a":"\u0000"}"#.utf8), contentType: "application/json")
                == .string(#"{"a":"\u0000"}"#))
        #expect(HTTPTask.body([], contentType: "text/plain") == .null)
    }
}

/// Which requests go through a proxy: `HTTP_PROXY`, `HTTPS_PROXY`, `NO_PROXY` as curl reads them.
struct OutboundProxiesTests {
    @Test func eachSchemeHasItsProxyAndNoProxyNamesWhatGoesDirect() throws {
        let proxies = try OutboundProxies(environment: [
            "HTTP_PROXY": "http://user:p%40ss@proxy.corp:3128", "https_proxy": "secure.corp:8443",
            "HTTPS_PROXY": "ignored.corp:1",
            "no_proxy": "localhost, .internal.example,corp.example:8080, 10.0.0.0/8,::1",
        ])
        let http = try #require(proxies.proxy(scheme: "http", host: "api.example.com"))
        #expect(http.host == "proxy.corp" && http.port == 3128)
        #expect(http.credentials?.user == "user" && http.credentials?.password == "p@ss")
        #expect(proxies.proxy(scheme: "https", host: "api.example.com")?.host == "secure.corp", "lower case wins")
        for direct in [
            "localhost", "a.internal.example", "internal.example", "CORP.example", "x.corp.example", "10.1.2.3",
            "[::1]",
        ] {
            #expect(proxies.proxy(scheme: "http", host: direct) == nil, "\(direct)")
        }
        for proxied in ["notinternal.example", "example", "11.0.0.1", "localhost.evil.example"] {
            #expect(proxies.proxy(scheme: "http", host: proxied) != nil, "\(proxied)")
        }
        #expect(
            try OutboundProxies(environment: ["HTTPS_PROXY": "p:1", "NO_PROXY": "*"]).proxy(scheme: "https", host: "a")
                == nil)
        #expect(try OutboundProxies(environment: ["HTTPS_PROXY": "p:1"]).proxy(scheme: "http", host: "a") == nil)
    }

    @Test func aMalformedProxyIsRefusedByName() {
        for bad in ["socks5://p:1080", "https://p:443", "http://", "http://p:notaport"] {
            #expect(throws: OutboundPolicyError.self, "\(bad)") {
                try OutboundProxies(environment: ["HTTPS_PROXY": bad])
            }
        }
        #expect((try? OutboundProxies(environment: ["HTTP_PROXY": "ftp://p"])) == nil)
    }
}

/// `http.tls` entries: each mistake refused at start, naming the entry or the file.
struct OutboundTLSTests {
    @Test func aMalformedEntryOrAnUnreadableFileIsRefusedByName() throws {
        let cases: [(String, String)] = [
            ("ca=/x.pem", "does not start with a host pattern"),
            ("*.corp.example", "names no file"),
            ("*.corp.example cert=/c.pem", "cert= and key= together"),
            ("*.corp.example ca=/a ca=/b", "each once"),
            ("*.corp.example trust=/a", "is not ca=FILE"),
            ("*.corp.example ca=/nonexistent/ca.pem", "cannot read the CA bundle /nonexistent/ca.pem"),
            (
                "*.corp.example cert=/nonexistent/c.pem key=/nonexistent/k.pem",
                "cannot read the certificate /nonexistent/c.pem"
            ),
        ]
        for (entry, reason) in cases {
            #expect(throws: OutboundPolicyError.self, "\(entry)") { try OutboundTLS([entry]) }
            do {
                _ = try OutboundTLS([entry])
            } catch {
                #expect(error.description.contains(reason), "\(entry): \(error)")
            }
        }
        #expect(try OutboundTLS([]).rule(for: "a.corp.example") == nil)
    }
}

/// The OAuth2 token cache: one fetch per key however many ask, and a bound on what it keeps (the
/// keys come from jobs).
struct OAuth2TokensTests {
    @Test func oneFetchPerKeyAndABoundedCache() async throws {
        let tokens = OAuth2Tokens(capacity: 10)
        let fetches = Mutex(0)
        let key = OAuth2Tokens.Key(tokenURL: "https://auth.example/token", clientID: "c", secret: "s", scope: nil)
        let fetch: @Sendable () async throws -> OAuth2Tokens.Token = {
            fetches.withLock { $0 += 1 }
            try await Task.sleep(for: .milliseconds(50))
            return OAuth2Tokens.Token(value: "t", expires: nil)
        }
        try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<20 { group.addTask { try await tokens.token(for: key, fetch: fetch).value } }
            for try await value in group { #expect(value == "t") }
        }
        #expect(fetches.withLock { $0 } == 1)
        for client in 0..<25 {
            let other = OAuth2Tokens.Key(
                tokenURL: "https://auth.example/token", clientID: "\(client)", secret: "s", scope: nil)
            _ = try await tokens.token(for: other) { OAuth2Tokens.Token(value: "\(client)", expires: nil) }
            #expect(tokens.count <= 10)
        }
        // A kept token is handed out without a fetch; a refused one is forgotten, and the next ask
        // fetches anew.
        let kept = try await tokens.token(for: key, fetch: fetch)
        let before = fetches.withLock { $0 }
        _ = try await tokens.token(for: key, fetch: fetch)
        #expect(fetches.withLock { $0 } == before)
        tokens.refused(kept, for: key)
        _ = try await tokens.token(for: key, fetch: fetch)
        #expect(fetches.withLock { $0 } == before + 1)
    }
}
