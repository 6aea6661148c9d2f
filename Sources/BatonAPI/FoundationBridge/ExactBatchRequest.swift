import Baton
@_spi(Generated) import OpenAPIRuntime

/// `#/components/schemas/BatchRequest`, the one request schema written by hand (see
/// `openapi-generator-config.yaml`): so that a batch's jobs are made from the reading of the body
/// the bridge already holds (`FoundationJSONBridge.swift`) rather than decoded by Foundation.
/// Decoding 1,000 generated `JobRequest`s with Foundation was much of the server's time for such a
/// batch (docs/benchmarks.md#http-enqueue-before-and-after); through `Codable` with Baton's decoder,
/// still a large part (the runtime's unknown-key check builds two sets per object;
/// docs/benchmarks.md#http-batch-enqueue-without-codable-on-the-common-path-issue-14-2026-11-25-night).
/// So a job of the common shape (one-task stages, no `unique`, no `backoff`) is made directly with
/// the generated initialisers, and anything else, or anything that would not decode, sends the
/// whole body through `Codable`, whose answer (the value, or the error the middleware turns into a
/// 400) is the reference. `ExactBatchRequestTests` holds the two to the same values.
///
/// Its shape is the document's: `{"jobs": [JobRequest, …]}`, `jobs` required, no other field.
public struct ExactBatchRequest: Codable, Hashable, Sendable {
    public var jobs: [Components.Schemas.JobRequest]

    public init(jobs: [Components.Schemas.JobRequest]) { self.jobs = jobs }

    enum CodingKeys: String, CodingKey { case jobs }

    public init(from decoder: any Decoder) throws {
        // A foreign (Foundation's) decoder over a body Baton has read: decode that reading instead.
        if !(decoder is any JSONValueDecoding), let document = ForeignJSON.current?.value(at: decoder.codingPath) {
            self = try ExactBatchRequest(quickly: document) ?? document.decode(as: ExactBatchRequest.self)
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

// MARK: - The common shape, without `Codable`

extension ExactBatchRequest {
    /// The batch `document` holds, if each of its jobs has the common shape; nil sends it through
    /// `Codable`. Each field is read as Baton's decoder reads it (the same helpers).
    package init?(quickly document: JSONValue) {
        guard case .object(let fields) = document, fields.count == 1, case .array(let items)? = fields["jobs"]
        else { return nil }
        var jobs: [Components.Schemas.JobRequest] = []
        jobs.reserveCapacity(items.count)
        for item in items {
            guard let job = Components.Schemas.JobRequest(quickly: item) else { return nil }
            jobs.append(job)
        }
        self.init(jobs: jobs)
    }
}

extension Components.Schemas.JobRequest {
    init?(quickly value: JSONValue) {
        guard case .object(let fields) = value else { return nil }
        var stages: [Components.Schemas.StageRequest]?
        self.init(stages: [])
        for (key, field) in fields {
            // A `null` is an absent optional field to the generated code (the middleware refuses
            // it first); a `null` under a key the document does not know is still an unknown key.
            if field == .null {
                switch key {
                case "queue", "priority", "run_at", "delay", "idempotency_key", "metadata", "input", "fair_key",
                    "fair_weight":
                    continue
                default: return nil
                }
            }
            switch key {
            case "queue": guard let text = field.quickString else { return nil }; queue = text
            case "priority":
                guard let number = field.quickInteger(as: Int32.self) else { return nil }; priority = number
            case "run_at":
                guard let text = field.quickString, let date = RFC3339.parse(text) else { return nil }
                runAt = date
            case "delay": guard let text = field.quickString else { return nil }; delay = text
            case "idempotency_key": guard let text = field.quickString else { return nil }; idempotencyKey = text
            case "fair_key": guard let text = field.quickString else { return nil }; fairKey = text
            case "fair_weight": guard case .number(let number) = field else { return nil }; fairWeight = number.double
            case "metadata": metadata = field
            case "input": input = field
            case "stages":
                guard case .array(let items) = field else { return nil }
                var list: [Components.Schemas.StageRequest] = []
                list.reserveCapacity(items.count)
                for item in items {
                    guard let stage = Components.Schemas.TaskStageRequest(quickly: item) else { return nil }
                    list.append(.TaskStageRequest(stage))
                }
                stages = list
            default: return nil  // `unique`, or a field the document does not know
            }
        }
        guard let stages else { return nil }
        self.stages = stages
    }
}

extension Components.Schemas.TaskStageRequest {
    init?(quickly value: JSONValue) {
        guard case .object(let fields) = value, case .string(let task)? = fields["task"] else { return nil }
        self.init(task: task)
        for (key, field) in fields where key != "task" {
            if field == .null {
                switch key {
                case "name", "args", "lane", "max_attempts", "timeout": continue
                default: return nil
                }
            }
            switch key {
            case "name": guard let text = field.quickString else { return nil }; name = text
            case "args": args = field
            case "lane": guard let text = field.quickString else { return nil }; lane = text
            case "max_attempts":
                guard let number = field.quickInteger(as: Int32.self) else { return nil }
                maxAttempts = number
            case "timeout": guard let text = field.quickString else { return nil }; timeout = text
            default: return nil  // `backoff`, or a field the document does not know
            }
        }
    }
}

extension JSONValue {
    fileprivate var quickString: String? {
        if case .string(let text) = self { text } else { nil }
    }

    fileprivate func quickInteger<T: FixedWidthInteger>(as type: T.Type) -> T? {
        if case .number(let number) = self { number.integer(as: T.self) } else { nil }
    }
}
