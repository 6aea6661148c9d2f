import BatonPostgres
import Logging
import Synchronization

/// Claims stages of one queue, never more than its free slots, and starts each as a child task.
///
/// It claims when told that jobs are available (NOTIFY, or an outcome of this worker's), when a
/// slot frees up while the last claim filled every slot, and every `pollInterval` regardless.
final class Fetcher: Sendable {
    private struct State {
        /// Stages running, plus slots reserved for jobs the completer may hand over.
        var running = 0
        /// The queue may hold more than the last claim took.
        var backlog = true
        /// Jobs claimed elsewhere (by the completer, for lanes it handed on) for this fetcher to run.
        var inbox: [ClaimedJob] = []
        /// Reservations not yet delivered: the fetcher stays until they are.
        var reservations = 0
        /// Draining: no more reservations.
        var stopping = false
        /// When the fetch loop last came round (it does at least every poll interval).
        var tick = ContinuousClock.now
    }

    let queue: String
    let capacity: Int
    private let state = Mutex(State())
    private let signal = Signal()
    private let stopped = Signal()

    /// Free slots that make a refill worth a claim while the queue has a backlog.
    let refill: Int

    init(queue: String, capacity: Int) {
        self.queue = queue
        self.capacity = capacity
        self.refill = max(1, capacity / 4)
    }

    /// What a draining fetcher still waits for: running stages, undelivered reservations, inbox.
    var drainState: String {
        state.withLock {
            "\(queue): \($0.running) running, \($0.reservations) reservations, \($0.inbox.count) in the inbox"
        }
    }

    /// When the fetch loop last came round.
    var lastTick: ContinuousClock.Instant { state.withLock { $0.tick } }

    /// Jobs the completer claimed for this fetcher that it has not started yet.
    var handedOverJobs: [Int64] { state.withLock { $0.inbox.map(\.id) } }

    /// Jobs are (or may be) available.
    func wake() {
        state.withLock { $0.backlog = true }
        signal.signal()
    }

    /// Interrupts the waits of the fetch loop and the poller (drain begins).
    func interrupt() {
        state.withLock { $0.stopping = true }
        signal.signal()
        stopped.signal()
    }

    /// Reserves up to `count` free slots for jobs claimed by the completer; returns how many.
    func reserve(upTo count: Int) -> Int {
        state.withLock { state in
            guard !state.stopping else { return 0 }
            let reserved = max(0, min(count, capacity - state.running))
            state.running += reserved
            state.reservations += reserved > 0 ? 1 : 0
            return reserved
        }
    }

    /// Hands over jobs claimed on `reserved` slots (`jobs.count ≤ reserved`); frees the rest.
    func deliver(_ jobs: [ClaimedJob], reserved: Int) {
        guard reserved > 0 else { return }
        state.withLock { state in
            state.running -= reserved - jobs.count
            state.inbox += jobs
            state.reservations -= 1
        }
        signal.signal()
    }

    /// Claims and runs until `worker` drains; returns once every stage it started has ended.
    func run(for worker: Worker) async {
        var backoff = Duration.milliseconds(50)
        await withDiscardingTaskGroup { group in
            while !Task.isCancelled {
                // Run what the completer claimed for us, even while draining (it is ours now).
                // Admitted before they leave the inbox: never out of the worker's holdings.
                let handedOver = state.withLock { state in
                    state.tick = .now
                    return state.inbox
                }
                let controls = handedOver.map { worker.admit($0) }
                state.withLock { $0.inbox.removeFirst(handedOver.count) }
                for (job, control) in zip(handedOver, controls) { start(job, control, in: &group, for: worker) }
                if worker.isDraining {
                    if state.withLock({ $0.reservations == 0 && $0.inbox.isEmpty }) { break }
                    await signal.wait()
                    continue
                }
                let free = state.withLock { state -> Int in
                    guard state.backlog else { return 0 }
                    return capacity - state.running
                }
                if free > 0 {
                    do {
                        let jobs = try await worker.store.claim(queue: queue, limit: free, worker: worker.id)
                        backoff = .milliseconds(50)
                        state.withLock { state in
                            state.running += jobs.count
                            state.backlog = jobs.count == free
                        }
                        for job in jobs {
                            if let waited = job.waited { worker.metrics.pickedUp(queue: queue, waited: waited) }
                            start(job, worker.admit(job), in: &group, for: worker)
                        }
                        if jobs.count == free { continue }
                    } catch {
                        worker.logger.warning(
                            "claim failed; retrying",
                            metadata: ["queue": "\(queue)", "error": "\(error.logDescription)"])
                        try? await Task.sleep(for: backoff)
                        backoff = min(backoff * 2, .seconds(2))
                        continue
                    }
                }
                await signal.wait()
            }
        }
    }

    private func start(
        _ job: ClaimedJob, _ control: RunControl, in group: inout DiscardingTaskGroup, for worker: Worker
    ) {
        group.addTask {
            await worker.execute(job, control: control)
            // Claim again once a quarter of the slots are free, not slot by slot.
            let claimNow = self.state.withLock { state -> Bool in
                state.running -= 1
                return state.backlog && self.capacity - state.running >= self.refill
            }
            if claimNow { self.signal.signal() }
        }
    }

    /// Looks for work every `interval` whatever the notifications say: a lost NOTIFY costs this
    /// much latency, never a job.
    func poll(every interval: Duration, for worker: Worker) async {
        while !Task.isCancelled, !worker.isDraining {
            await stopped.wait(timeout: interval)
            wake()
        }
    }
}
