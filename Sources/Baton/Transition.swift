/// How one attempt at a stage ended, as seen by the worker that ran it.
public enum StageOutcome: Sendable, Hashable {
    /// The task returned this output (JSON text).
    case succeeded(output: String)
    /// The task failed; `retry` says whether and when another attempt may follow.
    case failed(error: StageError, retry: RetryRequest)
    /// The stage is a group: its members are to be started.
    case fanOut
    /// The stage awaits a signal that has not come: the job is to wait for it.
    case awaiting
    /// The task asked to run again after this delay, its attempt not counted (``Snooze``).
    case snoozed(Duration)

    public enum RetryRequest: Sendable, Hashable {
        /// Retry by the stage's policy.
        case byPolicy
        /// Retry after this delay (e.g. an HTTP Retry-After), capped by the policy's maximum backoff.
        case after(Duration)
        /// Never retry.
        case never
    }
}

/// What happens to a job after one of its stages ends: a pure function of the chain, the outcome
/// and the policy. The store applies it in one transaction (`apply_outcomes` in the schema).
public enum Transition: Sendable, Hashable {
    /// The next stage runs now, on the same worker, without going back through the queue.
    case hop(output: String)
    /// The next stage is ready: claimable by any worker, or queued in `lane`.
    case advance(output: String, lane: String?)
    /// The last stage succeeded: the job is completed with this output.
    case complete(output: String)
    /// The attempt failed; try again after `delay`.
    case retry(error: StageError, delay: Duration)
    /// The stage failed for good: the job is discarded.
    case discard(error: StageError)
    /// Start the group's members; the job waits for them.
    case spawn
    /// Put the stage back untouched, its attempt not counted: a draining worker ran out of grace.
    case release
    /// Wait, holding no worker, for the signal the stage awaits, up to `timeout`.
    case await(timeout: Duration)
    /// Run the stage again after `delay`, the attempt given back; a laned stage keeps its lane.
    case snooze(delay: Duration)

    /// Decides what follows `outcome` of attempt number `attempt` (1-based) at `stage`.
    ///
    /// - Parameters:
    ///   - next: the following stage, nil if `stage` is the last.
    ///   - canHop: the worker may run the next stage itself (it is not draining).
    ///   - random: a value in 0..<1 that places the retry delay inside the jitter band.
    public static func decide(
        stage: StageSpec, next: StageSpec?, attempt: Int, outcome: StageOutcome, canHop: Bool, random: Double
    ) -> Transition {
        switch outcome {
        case .fanOut:
            return .spawn
        case .awaiting:
            return .await(timeout: stage.awaited?.timeout ?? AwaitStage.defaultTimeout)
        case .snoozed(let delay):
            return .snooze(delay: delay)
        case .succeeded(let output):
            guard let next else { return .complete(output: output) }
            if let lane = next.lane { return .advance(output: output, lane: lane) }
            if canHop, next.task != nil { return .hop(output: output) }
            return .advance(output: output, lane: nil)
        case .failed(let error, let request):
            // A group stage only fails when its worker is lost before the members start:
            // starting them again is safe, so it retries by the default policy.
            let policy = stage.task?.retry ?? .default
            switch request {
            case .never:
                return .discard(error: error)
            case _ where attempt >= policy.maxAttempts:
                return .discard(error: error)
            case .byPolicy:
                return .retry(error: error, delay: policy.backoff.delay(afterAttempt: attempt, random: random))
            case .after(let delay):
                return .retry(error: error, delay: max(.zero, min(delay, policy.backoff.max)))
            }
        }
    }
}
