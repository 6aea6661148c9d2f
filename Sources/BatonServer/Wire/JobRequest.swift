import Baton
import BatonAPI
import BatonPostgres
import Foundation

/// Reads the JSON of `POST /v1/jobs` into a job to enqueue. Every refusal is a 400 naming the JSON
/// path of the field at fault (e.g. `stages[1].group[0].timeout`); nothing is written until the
/// whole request has been read.
struct JobRequest {
    /// Paths are prefixed with this (`jobs[3].` inside a batch).
    var prefix = ""

    // The fields each object may have are the shared request types' keys.
    static let jobFields = Set(JobSubmission.CodingKeys.allCases.map(\.stringValue))
    static let taskFields = Set(TaskStageSubmission.CodingKeys.allCases.map(\.stringValue))
    static let groupFields = Set(GroupStageSubmission.CodingKeys.allCases.map(\.stringValue))
    static let backoffFields = Set(BackoffSubmission.CodingKeys.allCases.map(\.stringValue))

    func job(_ value: JSONValue, now: Date = Date()) throws -> NewJob {
        let fields = try object(value, at: "", allowed: Self.jobFields)
        var job = NewJob(chain: ChainDefinition(input: fields["input"] ?? .null, stages: []))
        if let queue = fields["queue"] { job.queue = try string(queue, at: "queue") }
        if let priority = fields["priority"] {
            job.priority = try integer(priority, at: "priority", within: Int(Int16.min)...Int(Int16.max))
        }
        switch (fields["run_at"], fields["delay"]) {
        case (.some, .some): throw invalid("delay", "give run_at or delay, not both")
        case (let runAt?, nil):
            let text = try string(runAt, at: "run_at")
            guard let date = Self.parseTimestamp(text), Self.storableTimes.contains(date) else {
                throw invalid(
                    "run_at", "run_at must be an RFC 3339 time in the years 1 to 9999, such as 2026-01-31T09:30:00Z")
            }
            job.runAt = date
        case (nil, let delay?):
            let duration = try duration(delay, at: "delay")
            guard duration <= Self.longestDelay else { throw invalid("delay", "delay may be at most 100 years") }
            job.runAt = now.addingTimeInterval(Double(duration.milliseconds) / 1000)
        case (nil, nil): break
        }
        if let key = fields["idempotency_key"] {
            job.idempotencyKey = try Self.idempotencyKey(
                try string(key, at: "idempotency_key"), path: path("idempotency_key"))
        }
        if let metadata = fields["metadata"] {
            guard case .object = metadata else { throw invalid("metadata", "metadata must be an object") }
            try storable(metadata, at: "metadata")
            job.metadata = metadata
        }
        guard let stages = fields["stages"] else { throw invalid("stages", "stages is required") }
        job.chain.stages = try stageList(stages, at: "stages")
        do {
            try ChainDefinition.checkName(job.queue, path: "queue", what: "queue name")
            try job.chain.validate()
        } catch {
            throw Problem.invalid(error, prefix: prefix)
        }
        return job
    }

    static func idempotencyKey(_ key: String, path: String) throws -> String {
        guard !key.isEmpty, key.utf8.count <= 255, !key.unicodeScalars.contains("\u{0}") else {
            throw Problem.invalid(path, "an idempotency key must be 1 to 255 bytes, without NUL")
        }
        return key
    }

    // MARK: stages

    private func stageList(_ value: JSONValue, at path: String) throws -> [StageSpec] {
        guard case .array(let items) = value else { throw invalid(path, "\(path) must be an array of stages") }
        guard !items.isEmpty else { throw invalid(path, "\(path) needs at least one stage") }
        guard items.count <= ChainDefinition.maxStages else {
            throw invalid(path, "at most \(ChainDefinition.maxStages) stages or members, got \(items.count)")
        }
        return try items.enumerated().map { index, item in try stage(item, at: "\(path)[\(index)]") }
    }

    private func stage(_ value: JSONValue, at path: String) throws -> StageSpec {
        guard case .object(let fields) = value else { throw invalid(path, "a stage must be an object") }
        let name = try fields["name"].map { try string($0, at: "\(path).name") }
        if let group = fields["group"] {
            try checkFields(fields, at: path, allowed: Self.groupFields, form: "a group stage")
            return .group(try stageList(group, at: "\(path).group"), name: name)
        }
        try checkFields(fields, at: path, allowed: Self.taskFields, form: "a task stage")
        guard let task = fields["task"] else { throw invalid("\(path).task", "a stage needs task (or group)") }
        var retry = RetryPolicy.default
        if let attempts = fields["max_attempts"] {
            retry.maxAttempts = try integer(attempts, at: "\(path).max_attempts", within: 1...10_000)
        }
        if let backoff = fields["backoff"] { retry.backoff = try self.backoff(backoff, at: "\(path).backoff") }
        let lane: String?
        switch fields["lane"] {
        case nil, .null?: lane = nil
        case .string(let name)?: lane = name
        default: throw invalid("\(path).lane", "lane must be a string naming the lane")
        }
        return .task(
            try string(task, at: "\(path).task"), args: fields["args"] ?? .object([:]), name: name, lane: lane,
            retry: retry,
            timeout: try fields["timeout"].map { try duration($0, at: "\(path).timeout") } ?? TaskStage.defaultTimeout)
    }

    private func backoff(_ value: JSONValue, at path: String) throws -> Backoff {
        let fields = try object(value, at: path, allowed: Self.backoffFields)
        var backoff = Backoff.exponential()
        if let kind = fields["kind"] {
            let name = try string(kind, at: "\(path).kind")
            guard let kind = Backoff.Kind(rawValue: name) else {
                throw invalid("\(path).kind", "kind must be exponential, constant or linear")
            }
            backoff =
                switch kind {
                case .exponential: .exponential()
                case .constant: .constant(.seconds(1))
                case .linear: .linear()
                }
        }
        if let initial = fields["initial"] { backoff.initial = try duration(initial, at: "\(path).initial") }
        if let max = fields["max"] { backoff.max = try duration(max, at: "\(path).max") }
        if backoff.kind == .constant, fields["max"] == nil { backoff.max = backoff.initial }
        if let jitter = fields["jitter"] {
            guard let fraction = jitter.numberValue?.double, (0...1).contains(fraction) else {
                throw invalid("\(path).jitter", "jitter must be a number from 0 to 1")
            }
            backoff.jitter = fraction
        }
        return backoff
    }

    // MARK: values

    private func object(_ value: JSONValue, at path: String, allowed: Set<String>) throws -> [String: JSONValue] {
        guard case .object(let fields) = value else {
            throw invalid(path, path.isEmpty ? "the body must be a JSON object" : "\(path) must be an object")
        }
        try checkFields(fields, at: path, allowed: allowed, form: path.isEmpty ? "a job" : path)
        return fields
    }

    private func checkFields(_ fields: [String: JSONValue], at path: String, allowed: Set<String>, form: String) throws
    {
        if let unknown = fields.keys.filter({ !allowed.contains($0) }).min() {
            throw invalid(
                path.isEmpty ? unknown : "\(path).\(unknown)",
                "unknown field \"\(unknown)\" in \(form); expected one of \(allowed.sorted().joined(separator: ", "))")
        }
    }

    private func string(_ value: JSONValue, at path: String) throws -> String {
        guard case .string(let string) = value else { throw invalid(path, "\(path) must be a string") }
        return string
    }

    private func integer(_ value: JSONValue, at path: String, within range: ClosedRange<Int>) throws -> Int {
        guard let integer = value.numberValue?.integer(as: Int.self), range.contains(integer) else {
            throw invalid(path, "\(path) must be an integer within \(range.lowerBound)...\(range.upperBound)")
        }
        return integer
    }

    private func duration(_ value: JSONValue, at path: String) throws -> Duration {
        guard case .string(let text) = value, let duration = DurationFormat.parse(text), duration >= .zero else {
            throw invalid(path, "\(path) must be a duration such as \"250ms\", \"30s\" or \"10m\"")
        }
        return duration
    }

    /// What PostgreSQL's `jsonb` cannot hold (a NUL character, a number beyond `numeric`).
    private func storable(_ value: JSONValue, at path: String) throws {
        do {
            try value.checkStorable(at: path)
        } catch {
            throw Problem.invalid(error, prefix: prefix)
        }
    }

    private func path(_ path: String) -> String { prefix + path }

    private func invalid(_ path: String, _ detail: String) -> Problem {
        Problem.invalid(self.path(path), detail)
    }

    /// What `timestamptz` stores without complaint (PostgreSQL has no year 0).
    static let storableTimes =
        Date(timeIntervalSince1970: -62_135_596_800)...Date(timeIntervalSince1970: 253_402_300_799)
    static let longestDelay = Duration.seconds(100 * 365 * 86_400)

    static func parseTimestamp(_ text: String) -> Date? {
        (try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text))
            ?? (try? Date.ISO8601FormatStyle().parse(text))
    }
}
