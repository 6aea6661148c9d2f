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

    /// How far back a promotion looks for due jobs, and how often it looks at them all
    /// (`promote_due_from` in the schema says why not always): under a held xmin horizon each
    /// promotion steps over the entries of the jobs promoted in the last `dueWindow`, and a sweep
    /// over all promoted since the hold began.
    static let dueWindow = Duration.seconds(2)
    static let sweepPeriod = Duration.seconds(10)
    /// The least time between promotions, however soon the next job is due: each costs a
    /// statement, and the jobs due meanwhile go together.
    static let leastGap = Duration.milliseconds(20)

    func run() async {
        let lastSecond = Mutex(ContinuousClock.now - Self.secondPeriod)
        let lastSweep = Mutex(ContinuousClock.now - Self.sweepPeriod)
        await leadership.repeatWhileLeading(every: interval, "scheduling due jobs") {
            let now = ContinuousClock.now
            let sweep = lastSweep.withLock { last in
                guard now - last >= Self.sweepPeriod else { return false }
                last = now
                return true
            }
            let nextDue = try await promoteDue(within: sweep ? nil : Self.dueWindow)
            if lastSecond.withLock({ now - $0 >= Self.secondPeriod }) {
                try await store.rotateReady()
                try await store.rotateLaneHolds()
                try await store.rotateRateTokens()
                try await expireAwaits()
                lastSecond.withLock { $0 = now }
            }
            // Woken when the next job is due, rather than as much as an interval later.
            return nextDue.map { max($0, Self.leastGap) }
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

    /// Scheduled and retryable jobs whose time has come, a thousand at a time, of those due within
    /// `within` (nil: all). Returns how long until the next is due.
    func promoteDue(within: Duration?) async throws -> Duration? {
        while true {
            let promotion = try await store.promoteDue(limit: 1000, within: within)
            if !promotion.queues.isEmpty { wake(promotion.queues) }
            if promotion.promoted < 1000 { return promotion.nextDue }
        }
    }
}
