import BatonPostgres
import Synchronization

/// The one door through which work enters the worker: stages claimed by a fetch loop and lane
/// holders handed over by an outcome batch are received here alike, counted against their
/// queue's slots (``SlotStateMachine``), registered as running (so that cancels and the heartbeat
/// find them), and passed to the ``StageRunner`` that runs them.
final class Intake: Sendable {
    /// A stage received and registered, for the runner to start.
    struct Admitted: Sendable {
        let job: ClaimedJob
        let control: RunControl
    }

    private struct State {
        var slots: SlotStateMachine
        var running: [Int64: RunControl] = [:]
        /// Cancels heard for jobs not running here, and when: a claim under way may bring one.
        var cancelsHeard: [Int64: ContinuousClock.Instant] = [:]
    }

    private let state: Mutex<State>
    /// One per queue: wakes its fetch loop.
    private let signals: [String: WakeUp]
    /// Admitted stages, a batch per claim or hand-over, in the order they arrived; finished once
    /// the drain is over. (A batch, not a stage, per element: a yield and a `next()` per stage cost
    /// a measurable part of a busy worker's CPU;
    /// docs/benchmarks.md#issue-21-part-5-again-the-workers-cpu-per-stage-again-2026-11-27-evening.)
    let admitted: AsyncStream<[Admitted]>
    private let continuation: AsyncStream<[Admitted]>.Continuation

    init(capacities: [String: Int]) {
        state = Mutex(State(slots: SlotStateMachine(capacities: capacities)))
        signals = capacities.mapValues { _ in WakeUp() }
        (admitted, continuation) = AsyncStream.makeStream()
    }

    /// Ids of the jobs running here (received and not yet ended).
    var runningJobs: [Int64] { state.withLock { Array($0.running.keys) } }

    /// Whether stages of `queue` must not hop on here: the worker is leaving.
    func isDraining(_ queue: String) -> Bool { state.withLock { $0.slots.isDraining(queue) } }

    /// Whether the worker as a whole drains.
    var isStopping: Bool { state.withLock { $0.slots.stopping } }

    /// A description of what a drain still waits for.
    var drainState: String {
        state.withLock { state in
            state.slots.queues.sorted { $0.key < $1.key }.map { queue, slots in
                "\(queue): \(slots.busy) busy, \(slots.reservations) reservations, claiming \(slots.claiming ?? 0)"
            }.joined(separator: "; ")
        }
    }

    // MARK: the fetch loops

    /// What the fetch loop of `queue` does next.
    func fetch(_ queue: String) -> SlotStateMachine.FetchAction { state.withLock { $0.slots.fetch(queue) } }

    /// Waits for a wake-up of `queue`'s fetch loop.
    func waitForWork(in queue: String) async { await signals[queue]?.wait() }

    /// Jobs are (or may be) available in `queue`.
    func wake(_ queue: String) { perform(state.withLock { $0.slots.wake(queue) }) }

    /// Jobs are (or may be) available anywhere (the listener is back).
    func wakeAll() { for queue in signals.keys { wake(queue) } }

    func claimFailed(_ queue: String) { perform(state.withLock { $0.slots.claimFailed(queue) }) }

    /// The queue claims no more; its fetch loop stops.
    func drain(_ queue: String) { perform(state.withLock { $0.slots.drain(queue) }) }

    // MARK: the door

    /// Reserves up to `count` slots of `queue` for lane holders an outcome batch may hand over.
    func reserve(_ count: Int, in queue: String) -> Int { state.withLock { $0.slots.reserve(count, in: queue) } }

    /// Jobs of `queue` arrived: each is registered as running and passed to the runner.
    func receive(_ jobs: [ClaimedJob], queue: String, via delivery: SlotStateMachine.Delivery) {
        let action = state.withLock { $0.slots.received(jobs.count, queue: queue, via: delivery) }
        if !jobs.isEmpty { continuation.yield(jobs.map { Admitted(job: $0, control: admit($0)) }) }
        perform(action)
    }

    /// Registers a received job as running here, before its task starts; stopped at once if it
    /// was cancelled after the statement that claimed it was sent. An earlier run of the same job
    /// still here is stopped: the job was handed out again, so that run is not the job's any more
    /// (and it would otherwise run on unseen by the drain).
    func admit(_ job: ClaimedJob) -> RunControl {
        let control = RunControl()
        let (cancelled, earlier) = state.withLock { state in
            let earlier = state.running.updateValue(control, forKey: job.id)
            guard let heard = state.cancelsHeard.removeValue(forKey: job.id) else { return (false, earlier) }
            return (heard > job.claimedSince, earlier)
        }
        earlier?.stop(.cancelled)
        if cancelled { control.stop(.cancelled) }
        return control
    }

    /// A stage has ended, its outcome submitted: its slot is free.
    func ended(_ admitted: Admitted) {
        let action = state.withLock { state in
            // Only this run's entry: a retried job may already run again here under the same id.
            if state.running[admitted.job.id] === admitted.control {
                state.running.removeValue(forKey: admitted.job.id)
            }
            return state.slots.stageEnded(in: admitted.job.queue)
        }
        perform(action)
    }

    /// Every queue drains; the stream of admitted stages ends once nothing is left to come.
    func drainAll() { perform(state.withLock { $0.slots.drainAll() }) }

    private func perform(_ action: SlotStateMachine.Action) {
        switch action {
        case .none: break
        case .wakeFetcher(let queue): signals[queue]?.signal()
        case .finish: continuation.finish()
        }
    }

    // MARK: stopping running stages

    /// Stops the job if it runs here; else remembers the cancel for a while, since the claim that
    /// brings the job here may have committed before the cancel and be answered after its notice.
    func cancel(_ id: Int64) {
        let now = ContinuousClock.now
        let control = state.withLock { state -> RunControl? in
            if let control = state.running[id] { return control }
            if state.cancelsHeard.count >= 1000 {
                state.cancelsHeard = state.cancelsHeard.filter { now - $0.value < .seconds(60) }
            }
            state.cancelsHeard[id] = now
            return nil
        }
        control?.stop(.cancelled)
    }

    /// Stops the stages of `jobs` that were running here before `instant`: cancels whose notice
    /// was missed, found by the heartbeat sent then (a run admitted since is a later one).
    func stopCancelled(_ jobs: [Int64], admittedBefore instant: ContinuousClock.Instant) {
        guard !jobs.isEmpty else { return }
        let controls = state.withLock { state in
            jobs.compactMap { state.running[$0] }.filter { $0.admitted < instant }
        }
        for control in controls { control.stop(.cancelled) }
    }

    /// Stops every running stage to be put back (the drain's grace is over); returns how many.
    func releaseAll() -> Int {
        let controls = state.withLock { Array($0.running.values) }
        for control in controls { control.stop(.released) }
        return controls.count
    }
}
