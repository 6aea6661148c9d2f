import NIOSSL

/// How the `http` task makes TLS connections to some hosts: a private CA to trust instead of the
/// system's, a client certificate to present (mutual TLS), or both. `http.tls` on the worker, one
/// rule per entry, `PATTERN [ca=FILE] [cert=FILE key=FILE]`:
///
///     *.corp.example ca=/etc/baton/corp-ca.pem cert=/etc/baton/client.pem key=/etc/baton/client.key
///
/// The first rule whose pattern (as in `http.allow`: `api.example.com`, `*.example.com`) matches a
/// request's host applies; other hosts use the system's trust store and no client certificate.
/// Files are PEM and are read once, when the worker starts: a file that cannot be read refuses the
/// start, naming it.
public struct OutboundTLS: Sendable, Hashable {
    public struct Rule: Sendable {
        public var hosts: HostPattern
        /// The entry as written: which rule a pooled client was made for.
        public var text: String
        var configuration: TLSConfiguration
    }

    public private(set) var rules: [Rule] = []

    public init() {}

    public init(_ entries: [String]) throws(OutboundPolicyError) {
        for entry in entries {
            let words = entry.split(separator: " ").map(String.init)
            guard let first = words.first, let hosts = HostPattern(first) else {
                throw OutboundPolicyError("http.tls: \"\(entry)\" does not start with a host pattern (*.corp.example)")
            }
            var files: [String: String] = [:]
            for word in words.dropFirst() {
                let pair = word.split(separator: "=", maxSplits: 1).map(String.init)
                guard pair.count == 2, ["ca", "cert", "key"].contains(pair[0]), files[pair[0]] == nil else {
                    throw OutboundPolicyError(
                        "http.tls: \"\(word)\" in \"\(entry)\" is not ca=FILE, cert=FILE or key=FILE (each once)")
                }
                files[pair[0]] = pair[1]
            }
            guard !files.isEmpty else { throw OutboundPolicyError("http.tls: \"\(entry)\" names no file") }
            guard (files["cert"] == nil) == (files["key"] == nil) else {
                throw OutboundPolicyError("http.tls: \"\(entry)\" needs cert= and key= together")
            }
            var configuration = TLSConfiguration.makeClientConfiguration()
            do {
                if let ca = files["ca"] {
                    configuration.trustRoots = .certificates(
                        try Self.read(ca, "CA bundle", NIOSSLCertificate.fromPEMFile))
                }
                if let cert = files["cert"], let key = files["key"] {
                    configuration.certificateChain = try Self.read(cert, "certificate", NIOSSLCertificate.fromPEMFile)
                        .map { .certificate($0) }
                    configuration.privateKey = .privateKey(
                        try Self.read(key, "key") { try NIOSSLPrivateKey(file: $0, format: .pem) })
                }
            } catch let error as OutboundPolicyError {
                throw error
            } catch {
                throw OutboundPolicyError("http.tls: \(error)")
            }
            rules.append(Rule(hosts: hosts, text: entry, configuration: configuration))
        }
    }

    /// The rule for requests to `host`, if one matches.
    public func rule(for host: String) -> Rule? {
        let host = host.lowercased()
        return rules.first { $0.hosts.matches(host) }
    }

    private static func read<T>(_ path: String, _ what: String, _ load: (String) throws -> T) throws -> T {
        do {
            return try load(path)
        } catch {
            throw OutboundPolicyError("http.tls: cannot read the \(what) \(path) as PEM (\(error))")
        }
    }

    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.rules.map(\.text) == rhs.rules.map(\.text) }
    public func hash(into hasher: inout Hasher) { hasher.combine(rules.map(\.text)) }
}
