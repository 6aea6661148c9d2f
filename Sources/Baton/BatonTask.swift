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

/// An error a task throws to steer its retries.
public struct TaskFailure: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String
    public var retry: StageOutcome.RetryRequest

    /// Fail the stage for good: no further attempt.
    public static func permanent(_ message: String) -> TaskFailure {
        TaskFailure(message: message, retry: .never)
    }

    /// Try again after `delay` (capped by the stage's maximum backoff), e.g. an HTTP 429's Retry-After.
    public static func retry(after delay: Duration, _ message: String) -> TaskFailure {
        TaskFailure(message: message, retry: .after(delay))
    }

    public var description: String { message }
}
