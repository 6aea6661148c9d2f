import Baton
import Foundation
import HTTPTypes
import OpenAPIRuntime
import Testing

@testable import BatonAPI

/// swift-openapi-runtime decodes and encodes bodies with Foundation's `JSONDecoder` and
/// `JSONEncoder`, which round numbers; `FoundationJSONBridge.swift` carries them past it. These
/// tests show the rounding without the bridge (the reason it exists) and its absence with it.
struct FoundationJSONBridgeTests {
    static let request =
        #"{"input": {"n": 12345678901234567890123, "x": 1e-400, "d": 0.1}, "stages": [{"task": "noop", "args": {"big": 1e400}}]}"#

    static func exactInput() throws -> JSONValue {
        try JSONValue(parsing: #"{"n": 12345678901234567890123, "x": 1e-400, "d": 0.1}"#)
    }

    @Test func foundationAloneRoundsAPayload() throws {
        let decoded = try? JSONDecoder().decode(Components.Schemas.JobRequest.self, from: Data(Self.request.utf8))
        #expect(decoded?.input != (try Self.exactInput()), "Foundation reads 1e-400 as 0 and the integer as a Double")
        let job = Components.Schemas.JobRequest(input: ["n": .number(JSONNumber("1e400")!)], stages: [])
        #expect(throws: (any Error).self, "Foundation has no spelling for 1e400") { try JSONEncoder().encode(job) }
    }

    @Test func withTheBridgeFoundationDecodesPayloadsExactly() throws {
        let bridge = ForeignJSON(document: try JSONValue(parsing: Self.request))
        let decoded = try ForeignJSON.$current.withValue(bridge) {
            try JSONDecoder().decode(Components.Schemas.JobRequest.self, from: Data(Self.request.utf8))
        }
        #expect(decoded.input == (try Self.exactInput()))
        guard case .TaskStageRequest(let stage) = decoded.stages.first else {
            Issue.record("not a task stage")
            return
        }
        #expect(stage.args?["big"]?.numberValue == JSONNumber("1e400"))
    }

    @Test func withTheBridgeFoundationEncodesPayloadsExactly() throws {
        let pi = JSONNumber("3.14159265358979323846264338327950288419716939937510")!
        let job = Components.Schemas.JobRequest(
            metadata: ["user": "baton-number-x-0", "pi": .number(pi)], input: try Self.exactInput(), stages: [])
        let bridge = ForeignJSON()
        let encoded = try ForeignJSON.$current.withValue(bridge) { try JSONEncoder().encode(job) }
        #expect(bridge.wrotePlaceholders)
        let text = String(decoding: bridge.restoringNumbers(in: Array(encoded)), as: UTF8.self)
        let read = try JSONValue(parsing: text)
        #expect(read["input"] == (try Self.exactInput()))
        #expect(read["metadata"]?["pi"]?.numberValue?.text == "3.14159265358979323846264338327950288419716939937510")
        #expect(read["metadata"]?["user"] == "baton-number-x-0", "a string that looks like a placeholder stays")
    }

    @Test func aRestoredBodyStatesItsNewLength() async throws {
        let bridge = ForeignJSON()
        let encoded = try ForeignJSON.$current.withValue(bridge) {
            try JSONEncoder().encode(["n": JSONValue.number(JSONNumber("1e400")!)])
        }
        var headers: HTTPFields = [.contentLength: String(encoded.count)]
        let body = try await ExactJSON.restoringNumbers(in: HTTPBody(Array(encoded)), &headers, bridge)
        let bytes = try await [UInt8](collecting: body!, upTo: 1 << 20)
        #expect(String(decoding: bytes, as: UTF8.self) == #"{"n":1e400}"#)
        #expect(headers[.contentLength] == String(bytes.count))
    }
}
