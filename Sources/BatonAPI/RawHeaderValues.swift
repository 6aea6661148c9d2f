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

enum RawHeaderValues {
    /// Everything but RFC 3986's unreserved characters, as the runtime's decoder expects.
    static func encode(_ value: String) -> String {
        value.addingPercentEncoding(withAllowedCharacters: unreserved) ?? value
    }

    static func decode(_ value: String) -> String { value.removingPercentEncoding ?? value }

    private static let unreserved = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
}

extension HTTPFields {
    fileprivate mutating func transform(_ names: [HTTPField.Name], _ change: (String) -> String) {
        for name in names {
            guard let value = self[name] else { continue }
            self[name] = change(value)
        }
    }
}
