import BatonPostgres
import Foundation
import Logging
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A server that takes the connection and never answers: the refusal names the whole
/// `connect_timeout`, not what the opening of the channel left of it ("no answer within 0 s").
struct ConnectTimeoutTests {
    @Test func aSilentServerIsNamedWithTheWholeTimeout() async throws {
        let silent = try SilentListener()
        defer { silent.close() }
        let started = ContinuousClock.now
        let error = await #expect(throws: ConfigurationError.self) {
            _ = try await DatabaseConfiguration(
                url: "postgres://baton@127.0.0.1:\(silent.port)/jobs?sslmode=disable&connect_timeout=2",
                environment: [:]
            ).checkConnection(logger: Logger(label: "baton.test"))
        }
        #expect(error?.description.hasSuffix("no answer within 2 s") == true, "\(String(describing: error))")
        #expect(ContinuousClock.now - started >= .seconds(2))
    }
}

/// A listening TCP socket on loopback that never accepts: the kernel completes each handshake and
/// queues what the client sends, and nothing ever answers.
private struct SilentListener {
    let descriptor: Int32
    let port: Int

    init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.descriptor = descriptor
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(descriptor, pointer, length) == 0 && listen(descriptor, 8) == 0
                    && getsockname(descriptor, pointer, &length) == 0
            }
        }
        guard bound else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    func close() { _ = Glibc.close(descriptor) }
}
