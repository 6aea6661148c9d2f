import Baton
import BatonPostgres
import ServiceLifecycle

/// Deletes finished jobs past their retention (with their group members), the per-minute queue
/// history as old (at least a day of it stays, for the dashboard's charts), audit events past
/// theirs, and the lanes' floors (``Store/reviewLaneFloors(batch:)``), every minute, while this
/// worker holds the maintenance lead.
package struct Pruner: Service {
    let store: Store
    let leadership: Leadership
    let retention: Retention
    var period: Duration = .seconds(60)

    package func run() async {
        await leadership.repeatWhileLeading(every: period, "pruning") {
            try await prune()
            return nil
        }
    }

    /// Finished jobs past retention, in batches.
    func prune() async throws {
        for (state, kept) in [
            (JobState.completed, retention.completed), (.discarded, retention.discarded),
            (.cancelled, retention.cancelled),
        ] {
            try await Self.prune(state, retention: kept, store: store)
        }
        try await store.pruneHistory(keep: max(retention.completed, .seconds(25 * 3600)))
        while try await store.pruneAudit(retention: retention.audit, limit: 5000) == 5000 {}
        _ = try await store.reviewLaneFloors()
    }

    /// Deletes the jobs finished in `state` longer than `retention` ago, 5,000 per transaction,
    /// resting after each full batch `restFactor` times as long as it took: a backlog (a day of
    /// jobs at once, after retention is shortened or the workers were away) then takes about a
    /// tenth of the database's time instead of all of it. Pruned flat out, a backlog cut the jobs'
    /// throughput markedly (docs/benchmarks.md#issue-21-part-3-millions-of-finished-jobs-2026-11-26).
    /// A day's jobs pruned minute by minute, as they expire, are one batch a minute.
    /// Returns how many it deleted.
    @discardableResult
    package static func prune(_ state: JobState, retention: Duration, store: Store, restFactor: Int = 9)
        async throws -> Int
    {
        var deleted = 0
        while true {
            let started = ContinuousClock.now
            let batch = try await store.prune(state, retention: retention, limit: 5000)
            deleted += batch
            guard batch == 5000 else { return deleted }
            try await Task.sleep(for: (ContinuousClock.now - started) * restFactor)
        }
    }
}
