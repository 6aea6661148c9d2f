import Baton
@_spi(Generated) import OpenAPIRuntime

/// `#/components/schemas/JobRequestBody`, the body of `POST /v1/jobs` (a `JobRequest`), written by
/// hand (see `openapi-generator-config.yaml`) so that the job is made from the reading of the body
/// the bridge already holds (`FoundationJSONBridge.swift`), as a batch's jobs are
/// (`ExactBatchRequest.swift`): Foundation's `JSONDecoder` took about four times as long to decode
/// one job as Baton's reader and decoder took to read and decode it
/// (docs/benchmarks.md#one-job-a-request-read-once). A job of the common shape is made directly with
/// the generated initialisers; anything else goes through `Codable` with Baton's decoder, whose
/// answer (the value, or the error the middleware turns into a 400) is the reference.
public struct ExactJobRequest: Codable, Hashable, Sendable {
    public var job: Components.Schemas.JobRequest

    public init(_ job: Components.Schemas.JobRequest) { self.job = job }

    public init(from decoder: any Decoder) throws {
        // A foreign (Foundation's) decoder over a body Baton has read: decode that reading instead.
        if !(decoder is any JSONValueDecoding), let document = ForeignJSON.current?.value(at: decoder.codingPath) {
            job =
                try Components.Schemas.JobRequest(quickly: document)
                ?? document.decode(as: Components.Schemas.JobRequest.self)
            return
        }
        job = try Components.Schemas.JobRequest(from: decoder)
    }

    public func encode(to encoder: any Encoder) throws { try job.encode(to: encoder) }
}
