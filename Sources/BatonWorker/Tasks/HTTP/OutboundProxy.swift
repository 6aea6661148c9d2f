import Foundation

/// The forward proxies the `http` task goes through, as curl and most HTTP clients read them from
/// the environment: `HTTPS_PROXY` for `https://` URLs (through `CONNECT`), `HTTP_PROXY` for
/// `http://` ones (the lower-case names win over the upper-case ones), and `NO_PROXY`, hosts
/// reached directly: `*`, names (`example.com` or `.example.com`: that domain and every name under
/// it), addresses and networks (`10.0.0.0/8`).
///
/// A proxy is the operator's: its address is not checked against `http.deny`, and names are
/// resolved by the proxy, so an egress proxy is where address rules for proxied requests live.
/// Host names (and literal addresses in URLs) are still checked by the worker.
public struct OutboundProxies: Sendable, Hashable {
    public struct Proxy: Sendable, Hashable {
        public var host: String
        public var port: Int
        /// `user:password` from the proxy URL, sent as `Proxy-Authorization: Basic`.
        public var credentials: (user: String, password: String)? {
            guard let user else { return nil }
            return (user, password ?? "")
        }
        var user: String?
        var password: String?
    }

    public var http: Proxy?
    public var https: Proxy?
    public var bypassHosts: [String] = []
    public var bypassNetworks: [IPNetwork] = []
    public var bypassAll = false

    public init() {}

    /// Reads `HTTP_PROXY`, `HTTPS_PROXY` and `NO_PROXY` (either case); a malformed value is an
    /// error naming it.
    public init(environment: [String: String]) throws(OutboundPolicyError) {
        func value(_ name: String) -> String? {
            [environment[name.lowercased()], environment[name]].compactMap { $0 }.first { !$0.isEmpty }
        }
        http = try value("HTTP_PROXY").map { text throws(OutboundPolicyError) in try Self.proxy(text, "HTTP_PROXY") }
        https = try value("HTTPS_PROXY").map { text throws(OutboundPolicyError) in
            try Self.proxy(text, "HTTPS_PROXY")
        }
        for entry in (value("NO_PROXY") ?? "").split(separator: ",") {
            let entry = entry.trimmingCharacters(in: .whitespaces).lowercased()
            if entry.isEmpty { continue }
            if entry == "*" {
                bypassAll = true
            } else if let network = IPNetwork(entry) {
                bypassNetworks.append(network)
            } else {
                // A port is ignored, as curl does; a leading dot means the same as none.
                let host = entry.split(separator: ":").first.map(String.init) ?? entry
                bypassHosts.append(host.hasPrefix(".") ? String(host.dropFirst()) : host)
            }
        }
    }

    /// The proxy for a request to `host` over `scheme`, or nil to connect directly.
    public func proxy(scheme: String, host: String) -> Proxy? {
        guard let proxy = scheme.lowercased() == "https" ? https : http else { return nil }
        let host = host.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        if bypassAll { return nil }
        if let address = IPAddress(host), bypassNetworks.contains(where: { $0.contains(address) }) { return nil }
        if bypassHosts.contains(where: { host == $0 || host.hasSuffix("." + $0) }) { return nil }
        return proxy
    }

    private static func proxy(_ text: String, _ name: String) throws(OutboundPolicyError) -> Proxy {
        let url = text.contains("://") ? text : "http://" + text
        guard let components = URLComponents(string: url), components.scheme?.lowercased() == "http",
            let host = components.host, !host.isEmpty
        else {
            throw OutboundPolicyError(
                "\(name): \"\(text)\" is not a proxy URL such as http://proxy.example:3128 (only http:// proxies)")
        }
        return Proxy(
            host: host, port: components.port ?? 80, user: components.percentEncodedUser?.removingPercentEncoding,
            password: components.percentEncodedPassword?.removingPercentEncoding)
    }
}
