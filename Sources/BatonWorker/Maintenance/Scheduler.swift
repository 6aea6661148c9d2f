import BatonPostgres
import ServiceLifecycle
import Synchronization

/// Makes scheduled and retryable jobs available once their time has come, ends the waits for
/// signals that ran out, and empties the slots of `ready` claims no longer need, while this worker
/// holds the maintenance lead; wakes the workers of their queues.
struct Scheduler: Service {
    let store: Store
    let leadership: Leadership
    let interval: Duration
    /// Tells this worker's fetch loops and the cluster's workers that these queues have jobs.
    let wake: @Sendable ([String]) -> Void
    /// Tells those who await these jobs that they have finished.
    let finished: @Sendable ([Int64]) -> Void
    /// Hears each wait for a signal that ran out (the failure reporter).
    var expired: @Sendable ([ExpiredWait]) -> Void = { _ in }

    /// The chores of each second rather than of each promotion: waits for signals end to the
    /// second, and the slots of `ready` and `lane_holds` are a second each (`ready_slot` in the
    /// schema), one of each freed a second.
    static let secondPeriod = Duration.seconds(1)

    func run() async {
        let lastSecond = Mutex(ContinuousClock.now - Self.secondPeriod)
        await leadership.repeatWhileLeading(every: interval, "scheduling due jobs") {
            try await promoteDue()
            let now = ContinuousClock.now
            guard lastSecond.withLock({ now - $0 >= Self.secondPeriod }) else { return }
            try await store.rotateReady()
            try await store.rotateLaneHolds()
            try await expireAwaits()
            lastSecond.withLock { $0 = now }
        }
    }

    /// Waits for signals that ran out, a thousand at a time.
    func expireAwaits() async throws {
        while true {
            let (ended, discarded) = try await store.expireAwaits(limit: 1000)
            finished(discarded)
            expired(ended)
            if ended.count < 1000 { return }
        }
    }

    /// Scheduled and retryable jobs whose time has come, a thousand at a time.
    func promoteDue() async throws {
        while true {
            let queues = try await store.promoteDue(limit: 1000)
            if queues.isEmpty { return }
            wake(queues)
            if queues.count < 1000 { return }
        }
    }
}
