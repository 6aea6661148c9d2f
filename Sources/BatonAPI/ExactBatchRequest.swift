import Baton
@_spi(Generated) import OpenAPIRuntime

/// `#/components/schemas/BatchRequest`, the one request schema written by hand (see
/// `openapi-generator-config.yaml`): so that a batch's jobs are decoded by Baton's decoder, from
/// the reading of the body the bridge already holds (`FoundationJSONBridge.swift`), rather than
/// by Foundation's. Decoding 1,000 generated `JobRequest`s with Foundation was 42 % of the server's
/// time for such a batch; Foundation now reads only this object.
///
/// Its shape is the document's: `{"jobs": [JobRequest, …]}`, `jobs` required, no other field.
public struct ExactBatchRequest: Codable, Hashable, Sendable {
    public var jobs: [Components.Schemas.JobRequest]

    public init(jobs: [Components.Schemas.JobRequest]) { self.jobs = jobs }

    enum CodingKeys: String, CodingKey { case jobs }

    public init(from decoder: any Decoder) throws {
        // A foreign (Foundation's) decoder over a body Baton has read: decode that reading instead.
        if !(decoder is any JSONValueDecoding), let document = ForeignJSON.current?.value(at: decoder.codingPath) {
            self = try document.decode(as: ExactBatchRequest.self)
            return
        }
        let container = try decoder.container(keyedBy: CodingKeys.self)
        jobs = try container.decode([Components.Schemas.JobRequest].self, forKey: .jobs)
        try decoder.ensureNoAdditionalProperties(knownKeys: ["jobs"])
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(jobs, forKey: .jobs)
    }
}
