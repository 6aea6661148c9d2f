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
    }

    private static let clients = Mutex<[Key: HTTPClient]>([:])

    /// The client for requests let through by `route`, through `proxy` if there is one.
    static func client(
        _ policy: OutboundPolicy, _ route: OutboundPolicy.Route, proxy: OutboundProxies.Proxy? = nil
    ) -> HTTPClient {
        clients.withLock { clients in
            let key = Key(policy: policy, route: route, proxy: proxy)
            if let client = clients[key] { return client }
            var configuration = HTTPClient.Configuration()
            if let proxy {
                configuration.proxy = .server(
                    host: proxy.host, port: proxy.port,
                    authorization: proxy.credentials.map { .basic(username: $0.user, password: $0.password) })
            }
            configuration.redirectConfiguration = .disallow  // followed by the task, each hop checked
            configuration.decompression = .enabled(limit: .size(HTTPRequestArgs.maxResponseBytesLimit))
            configuration.timeout.connect = .seconds(10)
            configuration.connectionPool.retryConnectionEstablishment = false
            // HTTP/1.1 only: the peer check below is the HTTP/1.1 connection's initializer.
            configuration.httpVersion = .http1Only
            configuration.http1_1ConnectionDebugInitializer = { channel in
                // The peer is the operator's proxy, which resolves and connects (see OutboundProxies).
                if proxy != nil { return channel.eventLoop.makeSucceededVoidFuture() }
                guard let peer = channel.remoteAddress, let address = IPAddress(peer) else {
                    return channel.eventLoop.makeFailedFuture(
                        OutboundDenied(address: "\(channel.remoteAddress as Any)"))
                }
                guard policy.permits(address, route: route) else {
                    return channel.eventLoop.makeFailedFuture(OutboundDenied(address: address.description))
                }
                return channel.eventLoop.makeSucceededVoidFuture()
            }
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
