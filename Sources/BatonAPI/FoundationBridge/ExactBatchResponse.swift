import Baton
import Foundation

/// `#/components/schemas/BatchResponse`, written by hand (see `openapi-generator-config.yaml`) so
/// that the server writes a batch's answer with Baton's writer: Foundation's `JSONEncoder` took more
/// of the server's time for a batch of 1,000 jobs than storing them
/// (docs/benchmarks.md#http-batch-enqueue-without-codable-on-the-common-path-issue-14-2026-11-25-night).
/// Under the server's bridge (`FoundationJSONBridge.swift`) Foundation writes
/// `{"jobs": "<placeholder>"}` and the bridge puts the array's text in; anywhere else (a client
/// decoding it, Baton's own coders) it is plain `Codable`.
///
/// Its shape is the document's: `{"jobs": [EnqueuedJob, …]}`. `BatchResponseTests` holds the
/// writer to what Foundation writes for the same value, field by field.
public struct ExactBatchResponse: Codable, Hashable, Sendable {
    public var jobs: [Components.Schemas.EnqueuedJob]

    public init(jobs: [Components.Schemas.EnqueuedJob]) { self.jobs = jobs }

    enum CodingKeys: String, CodingKey { case jobs }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        jobs = try container.decode([Components.Schemas.EnqueuedJob].self, forKey: .jobs)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        if !(encoder is any JSONValueEncoding), let bridge = ForeignJSON.current {
            var bytes: [UInt8] = []
            bytes.reserveCapacity(jobs.count * 64)
            Self.write(jobs, into: &bytes)
            try container.encode(bridge.placeholder(forJSON: String(decoding: bytes, as: UTF8.self)), forKey: .jobs)
        } else {
            try container.encode(jobs, forKey: .jobs)
        }
    }

    /// The fields in the document's order, optional ones left out when absent (as the generated
    /// code writes them).
    package static func write(_ jobs: [Components.Schemas.EnqueuedJob], into bytes: inout [UInt8]) {
        func key(_ name: StaticString, first: Bool = false) {
            if !first { bytes.append(UInt8(ascii: ",")) }
            bytes.append(UInt8(ascii: "\""))
            bytes.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
            bytes.append(contentsOf: "\":".utf8)
        }
        bytes.append(UInt8(ascii: "["))
        for (index, job) in jobs.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes.append(UInt8(ascii: "{"))
            key("id", first: true)
            bytes.append(contentsOf: String(job.id).utf8)
            key("queue")
            JSONValue.write(string: job.queue, into: &bytes)
            key("state")
            JSONValue.write(string: job.state.rawValue, into: &bytes)
            key("inserted")
            bytes.append(contentsOf: (job.inserted ? "true" : "false").utf8)
            if let reasons = job.waitingFor {
                key("waiting_for")
                bytes.append(UInt8(ascii: "["))
                for (index, reason) in reasons.enumerated() {
                    if index > 0 { bytes.append(UInt8(ascii: ",")) }
                    bytes.append(UInt8(ascii: "{"))
                    key("reason", first: true)
                    JSONValue.write(string: reason.reason.rawValue, into: &bytes)
                    key("message")
                    JSONValue.write(string: reason.message, into: &bytes)
                    if let until = reason.until {
                        key("until")
                        JSONValue.write(string: RFC3339.format(until), into: &bytes)
                    }
                    if let job = reason.job {
                        key("job")
                        bytes.append(contentsOf: String(job).utf8)
                    }
                    bytes.append(UInt8(ascii: "}"))
                }
                bytes.append(UInt8(ascii: "]"))
            }
            bytes.append(UInt8(ascii: "}"))
        }
        bytes.append(UInt8(ascii: "]"))
    }
}
