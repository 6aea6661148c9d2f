/// How one attempt at a stage ended, as seen by the worker that ran it.
public enum StageOutcome: Sendable, Hashable {
    /// The task returned this output (JSON text); `then`: what it decided comes next (``Next``),
    /// nil when it leaves that to the chain.
    case succeeded(output: String, then: FlowRule.Action? = nil)
    /// The task failed; `retry` says whether and when another attempt may follow.
    case failed(error: StageError, retry: RetryRequest)
    /// The stage is a group: its members are to be started.
    case fanOut
    /// The stage is a map over these elements (a JSON array's text, not empty): a member is to
    /// start for each.
    case fanOutOver(elements: String)
    /// The stage awaits a signal that has not come: the job is to wait for it.
    case awaiting
    /// The task asked to run again after this delay, its attempt not counted (``Snooze``); with
    /// `pausingRateLimit`, no stage of its rate limit key starts meanwhile either.
    case snoozed(Duration, pausingRateLimit: Bool = false)

    public enum RetryRequest: Sendable, Hashable {
        /// Retry by the stage's policy.
        case byPolicy
        /// Retry after this delay (e.g. an HTTP Retry-After), capped by the policy's maximum backoff;
        /// with `pausingRateLimit`, no stage of the stage's rate limit key starts meanwhile either.
        case after(Duration, pausingRateLimit: Bool = false)
        /// Never retry.
        case never
    }
}

/// What happens to a job after one of its stages ends: a pure function of the chain, the outcome
/// and the policy. The store applies it in one transaction (`apply_outcomes` in the schema).
public enum Transition: Sendable, Hashable {
    /// The next stage runs now, on the same worker, without going back through the queue. `to`:
    /// the position it is at (nil: the one after this; else chosen by a `goto` or `repeat`);
    /// `queue`: the stage's own queue, if it names one (nil: the job's).
    case hop(output: String, to: Int? = nil, queue: String? = nil)
    /// The next stage is ready: claimable by any worker of its queue, or queued in `lane`; `to`
    /// and `queue` as for `hop`.
    case advance(output: String, lane: String?, to: Int? = nil, queue: String? = nil)
    /// The last stage succeeded, or a `finish` rule held: the job is completed with this output.
    case complete(output: String)
    /// The attempt failed; try again after `delay`. `pauseRateLimit`: the stage's rate limit key
    /// gives no token for `delay` either.
    case retry(error: StageError, delay: Duration, pauseRateLimit: Bool = false)
    /// The stage failed for good: the job is discarded.
    case discard(error: StageError)
    /// Start the group's members; the job waits for them.
    case spawn
    /// Start a map's members, one per element of `elements` (a JSON array's text); the job waits
    /// for them.
    case spawnOver(elements: String)
    /// Put the stage back untouched, its attempt not counted: a draining worker ran out of grace.
    case release
    /// Wait, holding no worker, for the signal the stage awaits, up to `timeout`.
    case await(timeout: Duration)
    /// Run the stage again after `delay`, the attempt given back; a laned stage keeps its lane.
    /// `pauseRateLimit`: the stage's rate limit key gives no token for `delay` either.
    case snooze(delay: Duration, pauseRateLimit: Bool = false)

    /// Decides what follows `outcome` of attempt number `attempt` (1-based) at position `stage`
    /// of `chain`; a success follows the stage's `repeat` and `next` rules.
    ///
    /// - Parameters:
    ///   - runs: how many times in a row the stage has run before this run (for `repeat`'s max).
    ///   - canHop: whether this worker may run that task stage itself, now (it runs its task,
    ///     serves its queue and is not draining).
    ///   - random: a value in 0..<1 that places the retry delay inside the jitter band; asked for
    ///     only by a retry (a random number is a system call, and most stages succeed).
    public static func decide(
        chain: [StageSpec], stage position: Int, runs: Int = 0, attempt: Int, outcome: StageOutcome,
        canHop: (StageSpec) -> Bool, random: @autoclosure () -> Double
    ) -> Transition {
        let stage = chain[position]
        switch outcome {
        case .fanOut:
            return .spawn
        case .fanOutOver(let elements):
            return .spawnOver(elements: elements)
        case .awaiting:
            return .await(timeout: stage.awaited?.timeout ?? AwaitStage.defaultTimeout)
        case .snoozed(let delay, let pausing):
            return .snooze(delay: delay, pauseRateLimit: pausing)
        case .succeeded(let output, let decided?):
            switch decided {
            case .finish:
                return .complete(output: output)
            case .goto(let name):
                guard let target = chain.firstIndex(where: { $0.name == name }), target > position else {
                    return .discard(
                        error: StageError(
                            "the task chose goto \"\(name)\", which names no later stage", code: "goto_unknown"))
                }
                return proceed(to: target, from: position, output: output, chain: chain, canHop: canHop)
            }
        case .succeeded(let output, nil):
            var target = position + 1
            if let task = stage.task, task.hasFlow {
                switch follow(task, at: position, output: output, runs: runs, in: chain) {
                case .next(let position): target = position
                case .finish: return .complete(output: output)
                case .fail(let error): return .discard(error: error)
                }
            }
            return proceed(to: target, from: position, output: output, chain: chain, canHop: canHop)
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
                return .retry(error: error, delay: policy.backoff.delay(afterAttempt: attempt, random: random()))
            case .after(let delay, let pausing):
                return .retry(error: error, delay: max(.zero, min(delay, policy.backoff.max)), pauseRateLimit: pausing)
            }
        }
    }

    /// Goes on at `target` (past the end: completes): at once on this worker when it may, else
    /// through the queue or the stage's lane.
    private static func proceed(
        to target: Int, from position: Int, output: String, chain: [StageSpec], canHop: (StageSpec) -> Bool
    ) -> Transition {
        guard target < chain.count else { return .complete(output: output) }
        let next = chain[target]
        let to = target == position + 1 ? nil : target
        let queue = next.task?.queue
        if let lane = next.lane { return .advance(output: output, lane: lane, to: to, queue: queue) }
        // A rate-limited stage starts only with a token, which a claim takes.
        if next.task != nil, next.task?.rate == nil, canHop(next) { return .hop(output: output, to: to, queue: queue) }
        return .advance(output: output, lane: nil, to: to, queue: queue)
    }

    private enum Flow {
        case next(Int)
        case finish
        case fail(StageError)
    }

    /// Where a task stage's `repeat` and `next` rules send the chain after `output`.
    private static func follow(
        _ task: TaskStage, at position: Int, output: String, runs: Int, in chain: [StageSpec]
    ) -> Flow {
        // Most stages have no rules: their output is not read (a large one is not parsed for nothing).
        guard task.repeat != nil || !task.next.isEmpty else { return .next(position + 1) }
        let value = (try? JSONValue(parsing: output)) ?? .null
        if let rule = task.repeat, rule.condition.holds(for: value) {
            guard runs + 1 < rule.max else {
                return .fail(
                    StageError(
                        "repeat reached its max of \(rule.max) runs while \(rule.condition.json.jsonText) held",
                        code: "repeat_max", details: ["max": .number(JSONNumber(rule.max))]))
            }
            return .next(position)
        }
        for rule in task.next where rule.condition.holds(for: value) {
            switch rule.action {
            case .finish: return .finish
            case .goto(let name):
                // Checked at enqueue; a stored chain that lost its target goes on as without the rule.
                if let target = chain.firstIndex(where: { $0.name == name }), target > position { return .next(target) }
            }
        }
        return .next(position + 1)
    }
}
