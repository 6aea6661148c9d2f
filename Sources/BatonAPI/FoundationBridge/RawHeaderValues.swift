import Foundation
import HTTPTypes
import OpenAPIRuntime

// MARK: - Why this file exists
//
// swift-openapi-runtime (1.13) writes a typed header's value percent-encoded and reads one
// percent-decoded, as if it were a URI component (apple/swift-openapi-generator#857, #827; newer
// OpenAPI versions say header values are not percent-encoded). So `Location: /v1/jobs/7` went out
// as `%2Fv1%2Fjobs%2F7`, an `Idempotency-Key: 50%off` sent by curl would be read as something
// else, and one with a comma would not be read at all. The headers Baton's document declares are
// put back as they are on the wire: the inverse transform, applied on each side of the generated
// code. `RawHeaderValuesTests` shows the mangling without these middlewares and its absence with
// them. Should the runtime stop percent-encoding headers, this file goes.

/// The headers the generated code reads or writes (those the OpenAPI document declares for
/// requests and for successful answers; problems are written by hand).
enum DeclaredHeaders {
    static let request: [HTTPField.Name] = [HTTPField.Name("Idempotency-Key")!]
    static let response: [HTTPField.Name] = [.location]
}

/// The server's half: a request header reaches the generated code encoded, so that its decoding
/// yields the value sent; an answer's header leaves decoded, as the handler gave it.
package struct RawHeaderValuesServerMiddleware: ServerMiddleware {
    package init() {}

    package func intercept(
        _ request: HTTPRequest, body: HTTPBody?, metadata: ServerRequestMetadata, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, ServerRequestMetadata) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        var request = request
        request.headerFields.transform(DeclaredHeaders.request, RawHeaderValues.encode)
        var (response, responseBody) = try await next(request, body, metadata)
        response.headerFields.transform(DeclaredHeaders.response, RawHeaderValues.decode)
        return (response, responseBody)
    }
}

/// The client's half: the reverse of the server's.
package struct RawHeaderValuesClientMiddleware: ClientMiddleware {
    package init() {}

    package func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        var request = request
        request.headerFields.transform(DeclaredHeaders.request, RawHeaderValues.decode)
        var (response, responseBody) = try await next(request, body, baseURL)
        response.headerFields.transform(DeclaredHeaders.response, RawHeaderValues.encode)
        return (response, responseBody)
    }
}

/// Percent-encoding at the byte level (Foundation's `CharacterSet` path cost a measurable part of a
/// request: docs/benchmarks.md#http-enqueue-before-and-after).
enum RawHeaderValues {
    /// Everything but RFC 3986's unreserved characters, as the runtime's decoder expects.
    static func encode(_ value: String) -> String {
        guard !value.utf8.allSatisfy(isUnreserved) else { return value }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(value.utf8.count * 3)
        for byte in value.utf8 {
            if isUnreserved(byte) {
                bytes.append(byte)
            } else {
                bytes += [UInt8(ascii: "%"), hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 0x0f)]]
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `value` with its `%XX` sequences decoded; `value` itself if one is malformed or the result
    /// is not UTF-8 (as Foundation's `removingPercentEncoding` would refuse it).
    static func decode(_ value: String) -> String {
        guard value.utf8.contains(UInt8(ascii: "%")) else { return value }
        let source = Array(value.utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(source.count)
        var index = 0
        while index < source.count {
            guard source[index] == UInt8(ascii: "%") else {
                bytes.append(source[index])
                index += 1
                continue
            }
            guard index + 2 < source.count, let high = hexValue(source[index + 1]),
                let low = hexValue(source[index + 2])
            else { return value }
            bytes.append(high << 4 | low)
            index += 3
        }
        return String(validating: bytes, as: UTF8.self) ?? value
    }

    private static let hexDigits = Array("0123456789ABCDEF".utf8)

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
            UInt8(ascii: "~"):
            true
        default: false
        }
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

extension HTTPFields {
    fileprivate mutating func transform(_ names: [HTTPField.Name], _ change: (String) -> String) {
        for name in names {
            guard let value = self[name] else { continue }
            self[name] = change(value)
        }
    }
}
