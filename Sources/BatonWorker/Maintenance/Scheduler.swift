import BatonPostgres
import ServiceLifecycle

/// Makes scheduled and retryable jobs available once their time has come, and ends the waits for
/// signals that ran out, while this worker holds the maintenance lead; wakes the workers of their
/// queues.
struct Scheduler: Service {
    let store: Store
    let leadership: Leadership
    let interval: Duration
    /// Tells this worker's fetch loops and the cluster's workers that these queues have jobs.
    let wake: @Sendable ([String]) -> Void
    /// Tells those who await these jobs that they have finished.
    let finished: @Sendable ([Int64]) -> Void

    func run() async {
        await leadership.repeatWhileLeading(every: interval, "scheduling due jobs") {
            try await promoteDue()
            try await expireAwaits()
        }
    }

    /// Waits for signals that ran out, a thousand at a time.
    func expireAwaits() async throws {
        while true {
            let (ended, discarded) = try await store.expireAwaits(limit: 1000)
            finished(discarded)
            if ended < 1000 { return }
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
