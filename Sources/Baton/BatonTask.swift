/// A task a stage runs. Its stored properties are its args: the value is encoded into the chain
/// when enqueued and decoded again on the worker that runs it.
///
/// ```swift
/// struct Render: BatonTask {
///     var template: String
///     func run(_ input: Order, context: StageContext) async throws -> Document { … }
/// }
/// ```
public protocol BatonTask: Codable, Sendable {
    associatedtype Input: Codable & Sendable
    associatedtype Output: Codable & Sendable

    /// The name this task is registered and enqueued under; the type's name unless overridden.
    static var name: String { get }

    /// Runs one attempt. Throw ``TaskFailure`` to fail for good or to ask for a specific delay;
    /// any other error is retried by the stage's policy. The task is cancelled on timeout, on
    /// cancellation of the job, and when a draining worker runs out of grace.
    func run(_ input: Input, context: StageContext) async throws -> Output
}

extension BatonTask {
    public static var name: String { String(describing: Self.self) }
}

/// An error a task throws to steer its retries, with a code and details a caller can read
/// (``StageError``).
public struct TaskFailure: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String
    public var retry: StageOutcome.RetryRequest
    /// Short and stable, for programs: `card_declined`.
    public var code: String?
    /// Anything a caller may need, as JSON.
    public var details: JSONValue?

    public init(
        _ message: String, code: String? = nil, details: JSONValue? = nil,
        retry: StageOutcome.RetryRequest = .byPolicy
    ) {
        self.message = message
        self.code = code
        self.details = details
        self.retry = retry
    }

    /// Fail the stage for good: no further attempt.
    public static func permanent(_ message: String, code: String? = nil, details: JSONValue? = nil) -> TaskFailure {
        TaskFailure(message, code: code, details: details, retry: .never)
    }

    /// Try again after `delay` (capped by the stage's maximum backoff), e.g. an HTTP 429's
    /// Retry-After. With `pausingRateLimit`, the stage's rate limit key (`.rate("partner")`) gives no
    /// token for that long either: the whole key pauses, across every worker.
    public static func retry(
        after delay: Duration, _ message: String, code: String? = nil, details: JSONValue? = nil,
        pausingRateLimit: Bool = false
    ) -> TaskFailure {
        TaskFailure(message, code: code, details: details, retry: .after(delay, pausingRateLimit: pausingRateLimit))
    }

    /// The failure as stored.
    public var error: StageError { StageError(message, code: code, details: details) }

    public var description: String { message }
}

/// What a task throws to run again later without spending an attempt: the resource it waits for
/// is not ready (an export still being built, a rate limit of its own). Not a failure: nothing is
/// recorded in the job's errors, the attempt is given back, and a laned stage keeps its lane. Unlike
/// ``TaskFailure/retry(after:_:)``, which records a failed attempt and counts toward
/// `max_attempts`, a task may snooze without end: bound it yourself (``StageContext/attempt`` does
/// not grow; count in a checkpoint if you must).
///
/// ```swift
/// guard export.isReady else { throw Snooze(for: .seconds(30)) }
/// // a partner answered 429: nothing of its rate limit key starts for a minute
/// if response.status == .tooManyRequests { throw Snooze(for: .seconds(60), pausingRateLimit: true) }
/// ```
public struct Snooze: Error, Sendable, Hashable {
    /// How long until the stage runs again (at most a year).
    public var delay: Duration
    /// Whether the stage's rate limit key (`.rate("partner")`) gives no token for `delay` either:
    /// the whole key pauses, across every worker. Without a key, or a limit for it, only this
    /// stage waits.
    public var pausesRateLimit: Bool

    public init(for delay: Duration, pausingRateLimit: Bool = false) {
        self.delay = max(.zero, min(delay, .seconds(365 * 86_400)))
        self.pausesRateLimit = pausingRateLimit
    }
}
