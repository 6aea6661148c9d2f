import AsyncHTTPClient
import NIOCore
import NIOPosix
import NIOSSL

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Why a connection to a server failed, as a sentence an operator can act on: "connection
/// refused: nothing listens at 127.0.0.1:9" rather than SwiftNIO's `connection reset (error set):
/// Connection refused (errno: 111)`. Used where such errors are shown: the `http` task's job
/// errors and the CLI's "cannot reach". An error it does not know is described as Swift does.
public enum NetworkFailure {
    /// `address` (`host:port`) is named where the error itself does not say where it was going.
    public static func sentence(_ error: any Error, at address: String? = nil) -> String {
        switch error {
        case let error as HTTPClientError:
            switch error {
            case .connectTimeout: return "timed out connecting"
            case .readTimeout: return "timed out waiting for the answer"
            case .deadlineExceeded: return "timed out: no answer before the deadline"
            case .remoteConnectionClosed: return "the server closed the connection before it answered"
            case .invalidURL: return "not a valid URL"
            default: return "\(error)"
            }
        case let error as NIOConnectionError:
            if error.connectionErrors.isEmpty, error.dnsAError ?? error.dnsAAAAError != nil {
                // The resolver's own words (`SocketAddressError.UnknownHost: Name or service not
                // known (error -2) for host …, port 80`) say nothing more.
                return "the host name \(error.host) does not resolve"
            }
            let reasons = Set(
                error.connectionErrors.map { failure in
                    let address = failure.target.ipAddress.map { $0.contains(":") ? "[\($0)]" : $0 } ?? error.host
                    return reason(failure.error, at: "\(address):\(failure.target.port ?? error.port)")
                })
            return reasons.isEmpty
                ? "cannot connect to \(error.host):\(error.port)" : reasons.sorted().joined(separator: "; ")
        default:
            return reason(error, at: address)
        }
    }

    private static func reason(_ error: any Error, at address: String?) -> String {
        let place = address.map { " at \($0)" } ?? ""
        switch error {
        case let error as IOError:
            switch error.errnoCode {
            case ECONNREFUSED: return "connection refused: nothing listens\(place)"
            case ECONNRESET: return "the connection was reset\(place)"
            case ETIMEDOUT: return "timed out connecting\(place)"
            case EHOSTUNREACH, ENETUNREACH: return "no route to the host\(place)"
            default: return "\(String(cString: strerror(error.errnoCode)).lowercased())\(place)"
            }
        case ChannelError.connectTimeout(let after):
            return "timed out connecting\(place) (after \(after))"
        case let error as SocketAddressError:
            if case .unknown(let host, _) = error { return "the host name \(host) does not resolve" }
            return "\(error)"
        case let error as NIOSSLError:
            return "TLS failed\(place): \(tlsReason(error))"
        case let error as BoringSSLError:
            return "TLS failed\(place): \(error)"
        case let error as NIOSSLExtraError:
            return "TLS failed\(place): \(error)"
        default:
            return "\(error)"
        }
    }

    private static func tlsReason(_ error: NIOSSLError) -> String {
        switch error {
        case .handshakeFailed(let underlying):
            let text = "\(underlying)"
            if text.contains("CERTIFICATE_VERIFY_FAILED") {
                return "the server's certificate is not trusted or does not name this host"
            }
            return "the handshake failed (\(text))"
        default:
            return "\(error)"
        }
    }
}
