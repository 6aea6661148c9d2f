import Baton
import BatonTestSupport
import Foundation
import Hummingbird
import HummingbirdHTTP2
import Logging
import NIOSSL
import ServiceLifecycle

/// A private CA, a server certificate for `localhost` and a client certificate it signed.
extension TestCertificates {
    static func forMutualTLS() async throws -> TestCertificates {
        try await make(leaves: [
            .init("server", commonName: "localhost", subjectAltName: "DNS:localhost,IP:127.0.0.1"),
            .init("client", commonName: "baton-worker", subjectAltName: "DNS:baton-worker"),
        ])
    }
}

/// An HTTPS server on loopback (`https://localhost:PORT`) offering HTTP/2 and HTTP/1.1, whose
/// certificate the private CA signed and which takes only clients with a certificate that CA
/// signed.
func withMutualTLSServer<T: Sendable>(
    _ certificates: TestCertificates, _ body: @Sendable (String) async throws -> T
) async throws -> T {
    var tls = TLSConfiguration.makeServerConfiguration(
        certificateChain: try NIOSSLCertificate.fromPEMFile(certificates.path("server.crt")).map { .certificate($0) },
        privateKey: .privateKey(try NIOSSLPrivateKey(file: certificates.path("server.key"), format: .pem)))
    tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(certificates.path("ca.crt")))
    tls.certificateVerification = .noHostnameVerification
    let router = Router()
    router.get("/secure") { _, _ in TargetServer.json(["ok": true]) }
    let (ports, portSink) = AsyncStream.makeStream(of: Int.self)
    var logger = Logger(label: "tls-target")
    logger.logLevel = .warning
    let application = Application(
        router: router, server: try .http2Upgrade(tlsConfiguration: tls),
        configuration: .init(address: .hostname("127.0.0.1", port: 0)),
        onServerRunning: { channel in portSink.yield(channel.localAddress?.port ?? 0) }, logger: logger)
    return try await withRunningServices([application], logger: logger) {
        var iterator = ports.makeAsyncIterator()
        return try await body("https://localhost:\(await iterator.next() ?? 0)")
    }
}
