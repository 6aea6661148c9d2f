import AsyncHTTPClient
import Baton
import BatonHTTPTask
import NIOCore
import Synchronization

/// The HTTP clients of the `http` task: one per outbound policy and route, kept for the life of the
/// process (as `HTTPClient.shared` is), so connections are pooled across stages.
///
/// Every new connection's peer address is checked against the policy before it is used; a denied
/// one fails the request with `OutboundDenied`. Connection attempts are not retried by the client
/// (a denied address would only be tried again): a failed request is retried by the stage's policy.
enum OutboundClients {
    private struct Key: Hashable {
        var policy: OutboundPolicy
        var route: OutboundPolicy.Route
        var proxy: OutboundProxies.Proxy?
        var tls: String?
    }

    private static let clients = Mutex<[Key: HTTPClient]>([:])

    /// The client for requests let through by `route`, through `proxy` if there is one, with the
    /// `tls` rule's CA and client certificate if one applies.
    static func client(
        _ policy: OutboundPolicy, _ route: OutboundPolicy.Route, proxy: OutboundProxies.Proxy? = nil,
        tls: OutboundTLS.Rule? = nil
    ) -> HTTPClient {
        clients.withLock { clients in
            let key = Key(policy: policy, route: route, proxy: proxy, tls: tls?.text)
            if let client = clients[key] { return client }
            var configuration = HTTPClient.Configuration()
            if let tls { configuration.tlsConfiguration = tls.configuration }
            if let proxy {
                configuration.proxy = .server(
                    host: proxy.host, port: proxy.port,
                    authorization: proxy.credentials.map { .basic(username: $0.user, password: $0.password) })
            }
            configuration.redirectConfiguration = .disallow  // followed by the task, each hop checked
            configuration.decompression = .enabled(limit: .size(HTTPRequestArgs.maxResponseBytesLimit))
            configuration.timeout.connect = .seconds(10)
            configuration.connectionPool.retryConnectionEstablishment = false
            // HTTP/2 where the server offers it (TLS with ALPN), else HTTP/1.1: either connection is
            // checked before its first request.
            configuration.httpVersion = .automatic
            let check: @Sendable (any Channel) -> EventLoopFuture<Void> = { channel in
                // The peer is the operator's proxy, which resolves and connects (see OutboundProxies).
                if proxy != nil { return channel.eventLoop.makeSucceededVoidFuture() }
                // A refused connection is closed here: the client only fails the request.
                guard let peer = channel.remoteAddress, let address = IPAddress(peer) else {
                    channel.close(promise: nil)
                    return channel.eventLoop.makeFailedFuture(
                        OutboundDenied(address: "\(channel.remoteAddress as Any)"))
                }
                guard policy.permits(address, route: route) else {
                    channel.close(promise: nil)
                    return channel.eventLoop.makeFailedFuture(OutboundDenied(address: address.description))
                }
                return channel.eventLoop.makeSucceededVoidFuture()
            }
            configuration.http1_1ConnectionDebugInitializer = check
            configuration.http2ConnectionDebugInitializer = check
            let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
            clients[key] = client
            return client
        }
    }
}

/// A connection refused because the address it reached is denied (or not allowed).
struct OutboundDenied: Error, CustomStringConvertible {
    var address: String

    var description: String {
        "the address \(address) is not allowed (BATON_HTTP_ALLOW / BATON_HTTP_DENY; link-local and cloud "
            + "metadata addresses are always denied)"
    }
}
