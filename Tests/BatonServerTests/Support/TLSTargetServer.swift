import Baton
import BatonTestSupport
import Foundation
import Hummingbird
import HummingbirdHTTP2
import Logging
import NIOSSL
import ServiceLifecycle

/// A private CA, a server certificate for `localhost` and a client certificate it signed, made
/// with openssl.
struct PrivateCertificates: Sendable {
    let directory: URL

    func path(_ name: String) -> String { directory.appending(path: name).path }

    static func make() async throws -> PrivateCertificates {
        let directory = FileManager.default.temporaryDirectory.appending(path: "baton-http-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let script = #"""
            set -e
            cd "$1"
            openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
                -subj "/CN=Baton test CA" -keyout ca.key -out ca.crt \
                -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
            leaf() {
                openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=$2" \
                    -keyout "$1.key" -out "$1.csr"
                printf 'basicConstraints=CA:FALSE\nsubjectAltName=%s\n' "$3" > "$1.ext"
                openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
                    -out "$1.crt" -extfile "$1.ext"
            }
            leaf server localhost DNS:localhost,IP:127.0.0.1
            leaf client baton-worker DNS:baton-worker
            chmod 600 ./*.key
            """#
        let run = try await ChildProcess(URL(fileURLWithPath: "/bin/sh"), ["-c", script, "sh", directory.path])
        guard try await run.waitForExit(timeout: .seconds(60)) == 0 else {
            throw TestFailure("openssl: \((try? String(contentsOf: run.errors, encoding: .utf8)) ?? "")")
        }
        return PrivateCertificates(directory: directory)
    }
}

/// An HTTPS server on loopback (`https://localhost:PORT`) offering HTTP/2 and HTTP/1.1, whose
/// certificate the private CA signed and which takes only clients with a certificate that CA
/// signed.
func withMutualTLSServer<T: Sendable>(
    _ certificates: PrivateCertificates, _ body: @Sendable (String) async throws -> T
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
