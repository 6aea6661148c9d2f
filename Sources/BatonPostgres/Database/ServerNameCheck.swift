import Foundation
import NIOSSL
import X509

/// libpq's check of a server certificate's name under `sslmode=verify-full`
/// (`fe-secure-openssl.c`, PostgreSQL 14 and later), which ``PostgresTLSChannel`` applies in
/// place of swift-nio-ssl's.
///
/// The host the connection string names is compared with the certificate's subjectAltNames of its
/// own kind: DNS names for a host name (`*.example.com` matching one label), IP addresses for an IP
/// literal. The common name is read only when the certificate has no subjectAltName of that kind.
/// A certificate for `DNS:elsewhere.test, IP:127.0.0.1` is therefore refused for `localhost`,
/// even though `localhost` is 127.0.0.1.
package struct ServerNameCheck: Sendable {
    /// The host as the connection string names it.
    package var host: String

    package init(host: String) { self.host = host }

    /// The address bytes of `host` if it is an IPv4 or IPv6 literal.
    package var hostAddress: [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, host, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }

    /// Whether a certificate with these names is the host's.
    package func matches(dnsNames: [String], ipAddresses: [[UInt8]], commonName: String?) -> Bool {
        let address = hostAddress
        if dnsNames.contains(where: matchesName) { return true }
        if let address, ipAddresses.contains(address) { return true }
        // The common name only when no subjectAltName is of the host's kind.
        let ofItsKind = address == nil ? !dnsNames.isEmpty : !ipAddresses.isEmpty
        guard !ofItsKind, let commonName else { return false }
        return matchesName(commonName)
    }

    /// Whether the leaf certificate `certificate` is the host's; throws if it cannot be read.
    package func matches(_ certificate: NIOSSLCertificate) throws -> Bool {
        let parsed = try Certificate(derEncoded: try certificate.toDERBytes())
        var dnsNames: [String] = []
        var ipAddresses: [[UInt8]] = []
        for name in try parsed.extensions.subjectAlternativeNames ?? SubjectAlternativeNames() {
            switch name {
            case .dnsName(let dns): dnsNames.append(dns)
            case .ipAddress(let bytes): ipAddresses.append(Array(bytes.bytes))
            default: continue
            }
        }
        let commonName = parsed.subject.lazy.flatMap { $0 }
            .first { $0.type == .RDNAttributeType.commonName }
            .flatMap { String($0.value) }
        return matches(dnsNames: dnsNames, ipAddresses: ipAddresses, commonName: commonName)
    }

    /// A name of the certificate against the host: equal ignoring case, or a wildcard `*.rest`
    /// standing for exactly one label before `rest`. A name holding a NUL is no name.
    private func matchesName(_ name: String) -> Bool {
        guard !name.contains("\0") else { return false }
        let name = name.lowercased()
        let host = host.lowercased()
        if name == host { return true }
        guard name.hasPrefix("*."), name.count >= 3, let dot = host.firstIndex(of: ".") else { return false }
        return host.startIndex < dot && host[dot...] == name.dropFirst()
    }
}
