import NIOCore

/// Where the `http` task may send requests: `BATON_HTTP_ALLOW` and `BATON_HTTP_DENY` on the worker,
/// each a comma-separated list of host patterns (`api.example.com`, `*.example.com`) and networks
/// (`10.0.0.0/8`, `fd00::/8`, a single address).
///
/// - A request is refused if its host matches a denied pattern, or the address it connects to
///   is in a denied network. Link-local and cloud metadata addresses are always denied
///   (`defaultDenied`).
/// - If an allow list is set, the host must match one of its patterns or the address must be in
///   one of its networks.
///
/// Addresses are checked on the connection itself, after DNS and for every redirect, so a name
/// that resolves (or is rebound) to a denied address gets nowhere.
public struct OutboundPolicy: Sendable, Hashable {
    public var allowedHosts: [HostPattern] = []
    public var allowedNetworks: [IPNetwork] = []
    public var deniedHosts: [HostPattern] = []
    public var deniedNetworks: [IPNetwork] = []

    /// Link-local addresses (where cloud metadata services answer: 169.254.169.254) and the
    /// metadata addresses outside that range (AWS over IPv6, Alibaba Cloud).
    public static let defaultDenied: [IPNetwork] = [
        "169.254.0.0/16", "fe80::/10", "fd00:ec2::254/128", "100.100.100.200/32",
    ].map { IPNetwork($0)! }

    public init() {}

    /// Reads the two lists; a malformed entry is an error naming it.
    public init(allow: String?, deny: String?) throws(OutboundPolicyError) {
        for (list, allowing) in [(allow, true), (deny, false)] {
            for entry in (list ?? "").split(whereSeparator: { $0 == "," || $0 == " " || $0 == "\n" }) {
                let entry = String(entry)
                if let network = IPNetwork(entry) {
                    if allowing { allowedNetworks.append(network) } else { deniedNetworks.append(network) }
                } else if let pattern = HostPattern(entry) {
                    if allowing { allowedHosts.append(pattern) } else { deniedHosts.append(pattern) }
                } else {
                    throw OutboundPolicyError(
                        "\(allowing ? "BATON_HTTP_ALLOW" : "BATON_HTTP_DENY"): \"\(entry)\" is neither a host "
                            + "(api.example.com, *.example.com) nor a network (10.0.0.0/8, fd00::/8)")
                }
            }
        }
    }

    /// How requests to a host are let through, or nil if they are refused by name alone.
    public func route(host: String) -> Route? {
        let host = host.lowercased()
        if deniedHosts.contains(where: { $0.matches(host) }) { return nil }
        // A literal address is judged now: no connection to a denied one is even attempted.
        if let address = IPAddress(host), !permits(address, route: .anyAddress) { return nil }
        guard !allowedHosts.isEmpty || !allowedNetworks.isEmpty else { return .anyAddress }
        if allowedHosts.contains(where: { $0.matches(host) }) { return .anyAddress }
        if let address = IPAddress(host) { return permits(address, route: .allowedAddress) ? .anyAddress : nil }
        return allowedNetworks.isEmpty ? nil : .allowedAddress
    }

    /// Whether a connection to `address` may be used.
    public func permits(_ address: IPAddress, route: Route) -> Bool {
        if (Self.defaultDenied + deniedNetworks).contains(where: { $0.contains(address) }) { return false }
        return route == .anyAddress || allowedNetworks.contains { $0.contains(address) }
    }

    /// What is still to be checked of a host that its name did not settle.
    public enum Route: Sendable, Hashable {
        /// Any address not denied.
        case anyAddress
        /// Only addresses in the allowed networks (the host matched no allowed pattern).
        case allowedAddress
    }
}

public struct OutboundPolicyError: Error, Sendable, Hashable, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}

/// A host name or `*.` and a domain (any name under it, not the domain itself); case-insensitive.
public struct HostPattern: Sendable, Hashable {
    public var domain: String
    public var subdomainsOnly: Bool

    public init?(_ text: String) {
        let lowered = text.lowercased()
        subdomainsOnly = lowered.hasPrefix("*.")
        domain = subdomainsOnly ? String(lowered.dropFirst(2)) : lowered
        let labels = domain.split(separator: ".", omittingEmptySubsequences: false)
        guard !domain.isEmpty,
            labels.allSatisfy({ label in
                !label.isEmpty && label.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }
            })
        else { return nil }
    }

    public func matches(_ host: String) -> Bool {
        subdomainsOnly ? host.hasSuffix("." + domain) : host == domain
    }
}

/// An IPv4 or IPv6 address as its bytes (4 or 16); an IPv4-mapped IPv6 address is its IPv4 one.
public struct IPAddress: Sendable, Hashable, CustomStringConvertible {
    public var bytes: [UInt8]

    public init?(_ text: String) {
        var host = Substring(text)
        if host.hasPrefix("["), host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        if let address = try? SocketAddress(ipAddress: String(host), port: 0) {
            self.init(address)
        } else {
            return nil
        }
    }

    public init?(_ address: SocketAddress) {
        switch address {
        case .v4(let v4):
            let value = UInt32(bigEndian: v4.address.sin_addr.s_addr)
            bytes = [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: value >> $0) }
        case .v6(let v6):
            var bytes = withUnsafeBytes(of: v6.address.sin6_addr) { Array($0) }
            if bytes.prefix(12) == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF] { bytes = Array(bytes.suffix(4)) }
            self.bytes = bytes
        default:
            return nil
        }
    }

    public var description: String {
        bytes.count == 4
            ? bytes.map(String.init).joined(separator: ".")
            : stride(from: 0, to: 16, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
                .joined(separator: ":")
    }
}

/// An address range: `10.0.0.0/8`, `fd00::/8`; a bare address is a range of one.
public struct IPNetwork: Sendable, Hashable, ExpressibleByStringLiteral {
    public var address: IPAddress
    public var prefixLength: Int

    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1).map(String.init)
        guard let address = IPAddress(parts[0]) else { return nil }
        let width = address.bytes.count * 8
        guard let length = parts.count == 2 ? Int(parts[1]) : width, (0...width).contains(length) else { return nil }
        self.address = address
        prefixLength = length
    }

    public init(stringLiteral text: String) { self = IPNetwork(text)! }

    public func contains(_ other: IPAddress) -> Bool {
        guard other.bytes.count == address.bytes.count else { return false }
        for bit in 0..<prefixLength {
            let mask = UInt8(0x80) >> (bit % 8)
            if other.bytes[bit / 8] & mask != address.bytes[bit / 8] & mask { return false }
        }
        return true
    }
}
