/// How a stage is retried: how many attempts in all, and how long to wait between them.
public struct RetryPolicy: Sendable, Hashable, Codable {
    /// Attempts in all, the first included. 1 means no retry.
    public var maxAttempts: Int
    public var backoff: Backoff

    public init(maxAttempts: Int, backoff: Backoff) {
        self.maxAttempts = maxAttempts
        self.backoff = backoff
    }

    /// 20 attempts, exponential from 1 s doubling up to 10 min, ±10 % jitter (about 2 h in all).
    public static let `default` = RetryPolicy(maxAttempts: 20, backoff: .exponential())

    /// Exactly one attempt.
    public static let none = RetryPolicy(maxAttempts: 1, backoff: .constant(.zero))

    public static func exponential(
        initial: Duration = .seconds(1), max: Duration = .seconds(600), jitter: Double = 0.1, attempts: Int
    ) -> RetryPolicy {
        RetryPolicy(maxAttempts: attempts, backoff: .exponential(initial: initial, max: max, jitter: jitter))
    }

    public static func constant(_ delay: Duration, jitter: Double = 0, attempts: Int) -> RetryPolicy {
        RetryPolicy(maxAttempts: attempts, backoff: .constant(delay, jitter: jitter))
    }

    public static func linear(
        initial: Duration = .seconds(1), max: Duration = .seconds(600), jitter: Double = 0, attempts: Int
    ) -> RetryPolicy {
        RetryPolicy(maxAttempts: attempts, backoff: .linear(initial: initial, max: max, jitter: jitter))
    }

    enum CodingKeys: String, CodingKey {
        case maxAttempts = "max_attempts"
        case backoff
    }

    public func encode(to encoder: any Encoder) throws {
        try json.encode(to: encoder)
    }

    /// The stored form: `{"max_attempts", "backoff"}`.
    public var json: JSONValue {
        ["max_attempts": .number(maxAttempts), "backoff": backoff.json]
    }
}

/// The wait before the next attempt.
public struct Backoff: Sendable, Hashable, Codable {
    public enum Kind: String, Sendable, Hashable, Codable {
        /// `initial · 2^(attempt-1)`, capped at `max`.
        case exponential
        /// always `initial`.
        case constant
        /// `initial · attempt`, capped at `max`.
        case linear
    }

    public var kind: Kind
    public var initial: Duration
    public var max: Duration
    /// Spread each delay uniformly by ± this fraction (0…1), so retries of many jobs do not align.
    public var jitter: Double

    public init(kind: Kind, initial: Duration, max: Duration, jitter: Double) {
        self.kind = kind
        self.initial = initial
        self.max = max
        self.jitter = Swift.min(Swift.max(jitter, 0), 1)
    }

    public static func exponential(
        initial: Duration = .seconds(1), max: Duration = .seconds(600), jitter: Double = 0.1
    ) -> Backoff {
        Backoff(kind: .exponential, initial: initial, max: max, jitter: jitter)
    }

    public static func constant(_ delay: Duration, jitter: Double = 0) -> Backoff {
        Backoff(kind: .constant, initial: delay, max: delay, jitter: jitter)
    }

    public static func linear(initial: Duration = .seconds(1), max: Duration = .seconds(600), jitter: Double = 0)
        -> Backoff
    {
        Backoff(kind: .linear, initial: initial, max: max, jitter: jitter)
    }

    /// The delay after failed attempt number `attempt` (1-based). `random` is a value in 0..<1 that
    /// picks the point inside the jitter band; passing it in keeps this function pure.
    public func delay(afterAttempt attempt: Int, random: Double) -> Duration {
        let initialMs = Double(initial.milliseconds)
        let base: Double
        switch kind {
        case .constant:
            base = initialMs
        case .linear:
            base = Swift.min(initialMs * Double(Swift.max(attempt, 1)), Double(max.milliseconds))
        case .exponential:
            let exponent = Double(Swift.min(Swift.max(attempt - 1, 0), 62))
            base = Swift.min(initialMs * powerOfTwo(exponent), Double(max.milliseconds))
        }
        let spread = base * jitter * (2 * Swift.min(Swift.max(random, 0), 1) - 1)
        return .milliseconds(Int64(Swift.max(0, (base + spread).rounded())))
    }

    enum CodingKeys: String, CodingKey {
        case kind
        case initial = "initial_ms"
        case max = "max_ms"
        case jitter
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            kind: try container.decode(Kind.self, forKey: .kind),
            initial: .milliseconds(try container.decode(Int64.self, forKey: .initial)),
            max: .milliseconds(try container.decode(Int64.self, forKey: .max)),
            jitter: try container.decodeIfPresent(Double.self, forKey: .jitter) ?? 0
        )
    }

    public func encode(to encoder: any Encoder) throws {
        try json.encode(to: encoder)
    }

    /// The stored form: `{"kind", "initial_ms", "max_ms", "jitter"}`.
    public var json: JSONValue {
        [
            "kind": .string(kind.rawValue), "initial_ms": .number(initial.milliseconds),
            "max_ms": .number(max.milliseconds), "jitter": JSONNumber(jitter).map(JSONValue.number) ?? 0,
        ]
    }
}

@inline(__always)
private func powerOfTwo(_ exponent: Double) -> Double {
    Double(sign: .plus, exponent: Int(exponent), significand: 1)
}

extension Duration {
    /// Whole milliseconds, rounded down.
    public var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
