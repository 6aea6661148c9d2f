/// A stage's stored form written straight to JSON text, for the enqueue's batch: the same value as
/// ``StageSpec/json``, whose dictionaries (a stage's, its retry policy's, its backoff's) and number
/// texts took a large part of a producer's CPU when built for every job and then written
/// (docs/benchmarks.md#issue-21-part-5-again-the-workers-cpu-per-stage-again-2026-11-27-evening).
/// Keys come in no particular order, as for any `jsonb` parameter. `StageSpecWriteTests` holds the
/// two to the same value.
extension StageSpec {
    package func write(into bytes: inout [UInt8]) {
        // Groups, repeats and flow rules are rarer: written through `json`.
        guard case .task(let task) = body, task.repeat == nil, task.next.isEmpty else {
            json.write(into: &bytes, sortingKeys: false)
            return
        }
        bytes.append(contentsOf: "{\"task\":".utf8)
        JSONValue.write(string: task.task, into: &bytes)
        if let name { Self.member("name", string: name, into: &bytes) }
        if task.args != [:] {
            bytes.append(contentsOf: ",\"args\":".utf8)
            task.args.write(into: &bytes, sortingKeys: false)
        }
        if let lane = task.lane { Self.member("lane", string: lane, into: &bytes) }
        if let queue = task.queue { Self.member("queue", string: queue, into: &bytes) }
        if let rate = task.rate { Self.member("rate", string: rate, into: &bytes) }
        if task.retry != .default {
            bytes.append(contentsOf: ",\"retry\":".utf8)
            task.retry.write(into: &bytes)
        }
        if task.timeout != TaskStage.defaultTimeout {
            bytes.append(contentsOf: ",\"timeout_ms\":\(task.timeout.milliseconds)".utf8)
        }
        bytes.append(UInt8(ascii: "}"))
    }

    private static func member(_ key: StaticString, string: String, into bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: ","))
        bytes.append(UInt8(ascii: "\""))
        key.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: "\":".utf8)
        JSONValue.write(string: string, into: &bytes)
    }
}

extension RetryPolicy {
    /// ``json`` written straight to JSON text.
    func write(into bytes: inout [UInt8]) {
        bytes.append(contentsOf: "{\"max_attempts\":\(maxAttempts),\"backoff\":{\"kind\":\"".utf8)
        bytes.append(contentsOf: backoff.kind.rawValue.utf8)
        bytes.append(contentsOf: "\",\"initial_ms\":\(backoff.initial.milliseconds)".utf8)
        bytes.append(contentsOf: ",\"max_ms\":\(backoff.max.milliseconds)".utf8)
        bytes.append(contentsOf: ",\"jitter\":".utf8)
        (JSONNumber(backoff.jitter).map(JSONValue.number) ?? 0).write(into: &bytes)
        bytes.append(contentsOf: "}}".utf8)
    }
}
