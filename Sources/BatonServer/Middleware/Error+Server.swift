import BatonPostgres
import Foundation
import NIOCore
import NIOHTTP1
import OpenAPIRuntime

extension Error {
    /// The error for a log line: ``logDescription`` of what the generated code wrapped, with the
    /// operation it happened in. Never `String(describing:)` of a `ServerError`, which holds the
    /// whole request: its `Authorization` header, its cookies and its decoded body.
    var serverLogDescription: String {
        guard let error = self as? ServerError else { return logDescription }
        return "\(error.operationID): \(error.underlyingError.serverLogDescription)"
    }

    /// Whether the client went away before its request was complete: a body cut short
    /// (`Content-Length` not reached, the connection closed or reset), or one that did not
    /// arrive in time (``ServerConfiguration/bodyTimeout``). Not a failure of the server's.
    var isClientGone: Bool {
        switch self {
        case let error as ServerError: return error.underlyingError.isClientGone
        case let error as HTTPParserError: return error == .invalidEOFState
        case let error as ChannelError:
            return [.eof, .ioOnClosedChannel, .alreadyClosed, .inputClosed, .outputClosed].contains(error)
        case let error as IOError: return [ECONNRESET, EPIPE].contains(error.errnoCode)
        case is RequestTimeout: return true
        default: return false
        }
    }
}
