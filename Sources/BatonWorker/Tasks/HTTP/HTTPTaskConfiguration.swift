import Foundation

/// How the `http` task is set up on a worker: where it may connect, and the secrets its templates
/// may name.
public struct HTTPTaskConfiguration: Sendable, Hashable {
    public var policy: OutboundPolicy
    /// `{{secrets.NAME}}` in a template; never written to the job, its outputs or errors, or logs.
    public var secrets: [String: String]
    /// `HTTP_PROXY`, `HTTPS_PROXY`, `NO_PROXY`.
    public var proxies: OutboundProxies
    /// `http.tls`: private CAs and client certificates by host.
    public var tls: OutboundTLS

    public init(
        policy: OutboundPolicy = OutboundPolicy(), secrets: [String: String] = [:],
        proxies: OutboundProxies = OutboundProxies(), tls: OutboundTLS = OutboundTLS()
    ) {
        self.policy = policy
        self.secrets = secrets
        self.proxies = proxies
        self.tls = tls
    }

    /// `BATON_HTTP_ALLOW`, `BATON_HTTP_DENY`, every `BATON_SECRET_<NAME>`, and the proxies.
    public static func fromEnvironment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(OutboundPolicyError) -> HTTPTaskConfiguration {
        HTTPTaskConfiguration(
            policy: try OutboundPolicy(allow: environment["BATON_HTTP_ALLOW"], deny: environment["BATON_HTTP_DENY"]),
            secrets: secrets(in: environment), proxies: try OutboundProxies(environment: environment))
    }

    /// Every `BATON_SECRET_<NAME>`, by name.
    public static func secrets(in environment: [String: String]) -> [String: String] {
        var secrets: [String: String] = [:]
        for (name, value) in environment where name.hasPrefix("BATON_SECRET_") && !value.isEmpty {
            secrets[String(name.dropFirst("BATON_SECRET_".count))] = value
        }
        return secrets
    }
}
