import Baton
import BatonAPI
import BatonPostgres
import Foundation

/// A decoded `JobRequest` as a job to enqueue. The generated code has checked the shape (fields,
/// types, required, no unknown field); this checks what the schema says and generated code does
/// not enforce (lengths, patterns, ranges) and what no schema can say (stage names unique, initial
/// ≤ max, run_at or delay), each refusal a 400 naming the JSON path of the field at fault; then
/// ``validated(_:checkingArgs:)`` makes it the ``ValidJob`` the store takes, with the store's own checks.
/// Nothing is written until every job of a request has been read.
struct JobReader {
    /// Paths are prefixed with this (`jobs[3].` inside a batch).
    var prefix = ""
    var now = Date()

    func job(_ request: Components.Schemas.JobRequest) throws -> NewJob {
        var job = NewJob(chain: ChainDefinition(input: request.input ?? .null, stages: []))
        if let queue = request.queue { job.queue = queue }
        if let priority = request.priority {
            guard (Int32(Int16.min)...Int32(Int16.max)).contains(priority) else {
                throw invalid("priority", "priority must be an integer within -32768...32767")
            }
            job.priority = Int(priority)
        }
        switch (request.runAt, request.delay) {
        case (.some, .some): throw invalid("delay", "give run_at or delay, not both")
        case (let runAt?, nil):
            guard Self.storableTimes.contains(runAt) else {
                throw invalid("run_at", "run_at must be a time in the years 1 to 9999")
            }
            job.runAt = runAt
        case (nil, let delay?):
            let duration = try duration(delay, at: "delay")
            guard duration <= Self.longestDelay else { throw invalid("delay", "delay may be at most 100 years") }
            job.runAt = now.addingTimeInterval(Double(duration.milliseconds) / 1000)
        case (nil, nil): break
        }
        if let key = request.idempotencyKey {
            job.idempotencyKey = try Self.idempotencyKey(key, path: path("idempotency_key"))
        }
        if let unique = request.unique {
            var rule = Uniqueness(
                key: unique.key, finished: Set((unique.finished ?? []).compactMap { JobState(rawValue: $0.rawValue) }))
            rule.window = try unique.window.map { try duration($0, at: "unique.window") }
            job.unique = rule
        }
        if let metadata = request.metadata {
            guard case .object = metadata else { throw invalid("metadata", "metadata must be an object") }
            job.metadata = metadata
        }
        job.fairKey = request.fairKey
        job.fairWeight = request.fairWeight
        job.chain.stages = try stages(request.stages, at: "stages")
        return job
    }

    /// `job` checked once, as the store checks what comes in, tasks' args with `check` (the
    /// store's ``Store/argsCheck``): a refusal is a 400 naming the field's path.
    func validated(_ job: NewJob, checkingArgs check: ChainDefinition.ArgsCheck?) throws -> ValidJob {
        do {
            return try job.validated(checkingArgs: check)
        } catch {
            throw Problem.invalid(error, prefix: prefix)
        }
    }

    static func idempotencyKey(_ key: String, path: String) throws -> String {
        guard (1...255).contains(key.unicodeScalars.count), !key.unicodeScalars.contains("\u{0}") else {
            throw Problem.invalid(path, "an idempotency key is 1 to 255 characters, without NUL")
        }
        return key
    }

    // MARK: stages

    private func stages(_ list: [Components.Schemas.StageRequest], at path: String) throws -> [StageSpec] {
        guard list.count <= ChainDefinition.maxStages else {
            throw invalid(path, "at most \(ChainDefinition.maxStages) stages or members, got \(list.count)")
        }
        return try list.enumerated().map { index, stage in try self.stage(stage, at: "\(path)[\(index)]") }
    }

    private func stage(_ stage: Components.Schemas.StageRequest, at here: String) throws -> StageSpec {
        switch stage {
        case .GroupStageRequest(let group):
            return .group(try members(group.group, at: "\(here).group"), name: group.name)
        case .MapStageRequest(let map):
            let failures: MapStage.Failures
            do {
                failures = try MapStage.failures(map.failures?.rawValue, stopAfter: map.stopAfter, at: here)
            } catch {
                throw Problem.invalid(error, prefix: prefix)
            }
            return .map(
                over: MapStage.path(of: map.map), concurrency: map.concurrency, failures: failures,
                maxElements: map.maxElements,
                try stages(map.stages, at: "\(here).stages"), name: map.name)
        case .TaskStageRequest(let task):
            return try self.task(task, at: here)
        case .AwaitStageRequest(let stage):
            let attempts = stage.maxAttempts ?? 1
            guard (1...10_000).contains(attempts) else {
                throw invalid("\(here).max_attempts", "\(here).max_attempts must be an integer within 1...10000")
            }
            return .awaitSignal(
                stage._await, name: stage.name,
                timeout: try stage.timeout.map { try duration($0, at: "\(here).timeout") }
                    ?? AwaitStage.defaultTimeout,
                maxAttempts: Int(attempts))
        }
    }

    private func members(_ list: [Components.Schemas.GroupMemberRequest], at path: String) throws -> [StageSpec] {
        guard list.count <= ChainDefinition.maxStages else {
            throw invalid(path, "at most \(ChainDefinition.maxStages) stages or members, got \(list.count)")
        }
        return try list.enumerated().map { index, member in
            switch member {
            case .StageRequest(let stage): try self.stage(stage, at: "\(path)[\(index)]")
            case .SubChainRequest(let chain):
                .chain(try stages(chain.stages, at: "\(path)[\(index)].stages"), name: chain.name)
            }
        }
    }

    private func task(_ stage: Components.Schemas.TaskStageRequest, at path: String) throws -> StageSpec {
        var retry = RetryPolicy.default
        if let attempts = stage.maxAttempts {
            guard (1...10_000).contains(attempts) else {
                throw invalid("\(path).max_attempts", "\(path).max_attempts must be an integer within 1...10000")
            }
            retry.maxAttempts = Int(attempts)
        }
        if let backoff = stage.backoff { retry.backoff = try self.backoff(backoff, at: "\(path).backoff") }
        return .task(
            stage.task, args: stage.args ?? .object([:]), name: stage.name, lane: stage.lane, retry: retry,
            timeout: try stage.timeout.map { try duration($0, at: "\(path).timeout") } ?? TaskStage.defaultTimeout,
            repeat: try stage._repeat.map { rule in
                try flow(rule, at: "\(path).repeat") { (json, at) throws(BatonError) in
                    try RepeatRule(json: json, at: at)
                }
            },
            next: try (stage.next ?? []).enumerated().map { index, rule in
                try flow(rule, at: "\(path).next[\(index)]") { (json, at) throws(BatonError) in
                    try FlowRule(json: json, at: at)
                }
            }, queue: stage.queue, rate: stage.rate)
    }

    /// A `repeat` or `next` rule, read by Baton's own reader from its JSON form: one set of rules
    /// (and refusals) for the stored chain, Swift and HTTP.
    private func flow<Rule>(
        _ request: some Encodable, at path: String, _ read: (JSONValue, String) throws(BatonError) -> Rule
    ) throws -> Rule {
        do {
            return try read(try JSONValue(encoding: request), self.path(path))
        } catch let error as BatonError {
            throw Problem.invalid(error, prefix: "")
        }
    }

    private func backoff(_ request: Components.Schemas.Backoff, at path: String) throws -> Backoff {
        var backoff: Backoff =
            switch request.kind ?? .exponential {
            case .exponential: .exponential()
            case .constant: .constant(.seconds(1))
            case .linear: .linear()
            }
        if let initial = request.initial { backoff.initial = try duration(initial, at: "\(path).initial") }
        if let max = request.max { backoff.max = try duration(max, at: "\(path).max") }
        if backoff.kind == .constant, request.max == nil { backoff.max = backoff.initial }
        if let jitter = request.jitter {
            guard (0...1).contains(jitter) else {
                throw invalid("\(path).jitter", "jitter must be a number from 0 to 1")
            }
            backoff.jitter = jitter
        }
        return backoff
    }

    // MARK: values

    private func duration(_ text: String, at path: String) throws -> Duration {
        guard let duration = DurationFormat.parse(text) else {
            throw invalid(path, "\(path) must be a duration such as \"250ms\", \"30s\" or \"10m\"")
        }
        return duration
    }

    private func path(_ path: String) -> String { prefix + path }

    private func invalid(_ path: String, _ detail: String) -> Problem {
        Problem.invalid(self.path(path), detail)
    }

    /// What `timestamptz` stores without complaint (PostgreSQL has no year 0).
    static let storableTimes =
        Date(timeIntervalSince1970: -62_135_596_800)...Date(timeIntervalSince1970: 253_402_300_799)
    static let longestDelay = Duration.seconds(100 * 365 * 86_400)
}
