import Baton
import BatonAPI
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// JSON in and out of HTTP bodies.
enum JSONBody {
    /// `value` as the body, written as the wire types say (explicit nulls, RFC 3339 times, numbers
    /// exactly as stored).
    static func response(
        _ value: some Encodable, status: HTTPResponse.Status = .ok, contentType: String = "application/json"
    ) -> Response {
        var bytes: [UInt8] = []
        do {
            try JSONValue(encoding: value).write(into: &bytes)
        } catch {
            // Only a non-finite Double could fail, and the wire types hold none.
            preconditionFailure("a response did not encode: \(error)")
        }
        let buffer = ByteBuffer(bytes: bytes)
        return Response(
            status: status, headers: [.contentType: contentType, .contentLength: String(buffer.readableBytes)],
            body: .init(byteBuffer: buffer))
    }

    /// The request body as JSON: 413 past `limit` bytes, 400 when it is not JSON.
    static func read(_ request: Request, limit: Int) async throws -> JSONValue {
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: limit)
        } catch is NIOTooManyBytesError {
            throw Problem(
                .contentTooLarge, type: "body-too-large", title: "The request body is too large",
                detail: "the limit is \(limit) bytes")
        }
        do {
            return try JSONValue(parsing: buffer.readableBytesView)
        } catch {
            throw Problem.invalid("", "the body is not valid JSON: \(error)")
        }
    }
}

/// Reading query parameters, each refusal naming the parameter.
struct Query {
    let parameters: [String: String]

    init(_ request: Request) {
        var parameters: [String: String] = [:]
        for (key, value) in request.uri.queryParameters { parameters[String(key)] = String(value) }
        self.parameters = parameters
    }

    func string(_ name: String) throws -> String? {
        guard let value = parameters[name], !value.isEmpty else { return nil }
        guard !value.unicodeScalars.contains("\u{0}") else {
            throw Problem.invalid(name, "\(name) contains a NUL character")
        }
        return value
    }

    func bool(_ name: String) throws -> Bool {
        switch parameters[name] {
        case nil, "false", "0": return false
        case "", "true", "1": return true
        default: throw Problem.invalid(name, "\(name) must be true or false")
        }
    }

    func int(_ name: String, default value: Int, range: ClosedRange<Int>) throws -> Int {
        guard let text = try string(name) else { return value }
        guard let int = Int(text), range.contains(int) else {
            throw Problem.invalid(name, "\(name) must be an integer within \(range.lowerBound)...\(range.upperBound)")
        }
        return int
    }

    /// A duration, cut to `max`.
    func duration(_ name: String, max: Duration) throws -> Duration? {
        guard let text = try string(name) else { return nil }
        guard let duration = DurationFormat.parse(text), duration >= .zero else {
            throw Problem.invalid(name, "\(name) must be a duration such as 30s, 250ms or 5m")
        }
        return min(duration, max)
    }
}

/// Opaque keyset cursors: base64url of a key, so clients do not build them.
enum Cursor {
    static func encode(_ key: String) -> String {
        Data(key.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    static func decode(_ cursor: String?) throws -> String? {
        guard let cursor else { return nil }
        var base64 = cursor.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let data = Data(base64Encoded: base64), let key = String(data: data, encoding: .utf8) else {
            throw Problem.invalid("cursor", "cursor is not one this server handed out")
        }
        return key
    }
}
