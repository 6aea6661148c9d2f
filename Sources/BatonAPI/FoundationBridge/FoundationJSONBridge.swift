import Baton
import Foundation
import HTTPTypes
import OpenAPIRuntime

// MARK: - Why this file exists
//
// swift-openapi-runtime (1.13) encodes and decodes every JSON body with Foundation's `JSONEncoder`
// and `JSONDecoder`, and offers no way to plug in another coder (a custom JSON coder was proposed
// and withdrawn: apple/swift-openapi-runtime#111). Foundation reads a number into `Double`,
// `Int64` or `Decimal` and writes it back from there, so `12345678901234567890123` or `1e-400` in a
// job's input would come back rounded, or not at all; Baton promises payloads back exactly as they
// were given. The generated code itself is fine; only the coder in the middle is not.
//
// So, on both sides of the wire, a middleware carries Baton's exact JSON past Foundation
// (the mechanism is `ForeignJSON`, in Baton, which `JSONValue`'s `Codable` conformance consults):
//
// - A body received is read by Baton's reader first (also refusing repeated keys, which would make a
//   request ambiguous). While Foundation decodes it, every `JSONValue` (input, args, metadata,
//   outputs) takes its value from that reading, at its coding path.
// - A body sent is written by Foundation; a number it cannot write exactly goes out as a
//   placeholder string that the middleware then replaces with the number's text.
//
// `FoundationJSONBridgeTests` reproduces the rounding without the bridge and shows it gone with
// it. Should the runtime gain a pluggable JSON coder, this folder and `ForeignJSON` go.
//
// This folder (`FoundationBridge/`) holds everything Baton does around swift-openapi-runtime's
// handling of bodies and headers, and `Tests/BatonAPITests/FoundationBridge/` its tests:
// - this file: the middlewares above;
// - `RequestBody.swift`: decoding a body Baton has read into a generated type (settings files,
//   schedules), with a refusal that names the field's path;
// - `ExactJobRequest.swift`, `ExactBatchRequest.swift`, `ExactBatchResponse.swift`: a job, or a
//   batch of up to 10,000, read (and a batch answered) by Baton's reader and writer, past
//   Foundation altogether (the common path's cost): the body is parsed once;
// - `RawHeaderValues.swift`: declared headers as they were on the wire (the runtime
//   percent-decodes them).
// What the bridge costs an enqueue is measured in docs/benchmarks.md#batons-json-against-foundations
// and docs/benchmarks.md#http-batch-enqueue-without-codable-on-the-common-path-issue-14-2026-11-25-night.

/// The server's half: reads the request body (at most `maxBodySize` bytes, else
/// ``RequestBodyError/tooLarge(limit:)``) with Baton's reader, and restores exact numbers in the
/// response.
package struct ExactJSONServerMiddleware: ServerMiddleware {
    let maxBodySize: Int

    package init(maxBodySize: Int) { self.maxBodySize = maxBodySize }

    package func intercept(
        _ request: HTTPRequest, body: HTTPBody?, metadata: ServerRequestMetadata, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, ServerRequestMetadata) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        var document: JSONValue?
        var received = body
        if let body {
            let bytes = try await Self.collect(body, limit: maxBodySize)
            if !bytes.isEmpty {
                do {
                    document = try JSONValue(parsing: bytes, duplicateKeys: .refuse)
                } catch {
                    throw RequestBodyError.notJSON(error)
                }
            }
            // Foundation would parse the body again for a type that does not look at its reading.
            received = document != nil && Self.readByBaton.contains(operationID) ? HTTPBody("null") : HTTPBody(bytes)
        }
        let bridge = ForeignJSON(document: document)
        var (response, responseBody) = try await ForeignJSON.$current.withValue(bridge) {
            try await next(request, received, metadata)
        }
        responseBody = try await ExactJSON.restoringNumbers(in: responseBody, &response.headerFields, bridge)
        return (response, responseBody)
    }

    /// The operations whose body type takes its value from Baton's reading alone
    /// (``ExactJobRequest``, ``ExactBatchRequest``): Foundation is handed `null` instead of the body.
    static let readByBaton: Set<String> = ["enqueueJob", "enqueueJobs"]

    static func collect(_ body: HTTPBody, limit: Int) async throws -> [UInt8] {
        if case .known(let length) = body.length, length > limit { throw RequestBodyError.tooLarge(limit: limit) }
        var bytes: [UInt8] = []
        for try await chunk in body {
            guard bytes.count + chunk.count <= limit else { throw RequestBodyError.tooLarge(limit: limit) }
            bytes += chunk
        }
        return bytes
    }
}

/// Why a request body was refused before it was decoded.
package enum RequestBodyError: Error {
    /// Longer than the server takes.
    case tooLarge(limit: Int)
    /// Not JSON (or a key repeated in an object).
    case notJSON(JSONParseError)
}

/// The client's half. The generated client decodes a response after its middlewares have run, so
/// the bridge must already be set up around the whole call: ``ExactJSON/call(_:)``.
package struct ExactJSONClientMiddleware: ClientMiddleware {
    package init() {}

    package func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        guard let bridge = ForeignJSON.current else { return try await next(request, body, baseURL) }
        var request = request
        let sent = try await ExactJSON.restoringNumbers(in: body, &request.headerFields, bridge)
        let (response, responseBody) = try await next(request, sent, baseURL)
        guard let responseBody else { return (response, nil) }
        let bytes = try await [UInt8](collecting: responseBody, upTo: ExactJSON.maxResponseSize)
        if !bytes.isEmpty, let document = try? JSONValue(parsing: bytes) {
            bridge.document.withLock { $0 = document }
        }
        return (response, HTTPBody(bytes))
    }
}

package enum ExactJSON {
    /// The largest answer a client reads (a page of 1,000 jobs with their payloads).
    package static let maxResponseSize = 256 << 20

    /// Runs one generated client call with the bridge set up (see ``ExactJSONClientMiddleware``).
    package static func call<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        try await ForeignJSON.$current.withValue(ForeignJSON()) { try await body() }
    }

    /// `body` with its placeholders replaced by their numbers, and `headers` with its new length
    /// (the runtime states the length of what Foundation wrote).
    static func restoringNumbers(in body: HTTPBody?, _ headers: inout HTTPFields, _ bridge: ForeignJSON)
        async throws -> HTTPBody?
    {
        guard bridge.wrotePlaceholders, let body else { return body }
        let bytes = bridge.restoringNumbers(in: try await [UInt8](collecting: body, upTo: .max))
        if headers[.contentLength] != nil { headers[.contentLength] = String(bytes.count) }
        return HTTPBody(bytes)
    }
}

// MARK: - Shared configuration

extension Configuration {
    /// How Baton's server and clients write and read JSON: fields in the document's order (the
    /// generated code writes them so; sorting every object's keys was a large part of encoding an
    /// answer, docs/benchmarks.md#http-enqueue-before-and-after), unescaped slashes, times as
    /// RFC 3339 with milliseconds (read with or without them, and with any offset).
    package static let baton = Configuration(
        dateTranscoder: RFC3339Transcoder(), jsonEncodingOptions: [.withoutEscapingSlashes])
}

struct RFC3339Transcoder: DateTranscoder {
    func encode(_ date: Date) throws -> String { RFC3339.format(date) }

    func decode(_ text: String) throws -> Date {
        guard let date = RFC3339.parse(text) else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: [], debugDescription: "\"\(text)\" is not an RFC 3339 time"))
        }
        return date
    }
}
