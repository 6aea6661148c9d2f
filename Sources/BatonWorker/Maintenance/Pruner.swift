import Baton
import BatonPostgres
import ServiceLifecycle

/// Deletes finished jobs past their retention (with their group members), the per-minute queue
/// history as old (at least a day of it stays, for the dashboard's charts), and audit events past
/// theirs, every minute, while this worker holds the maintenance lead.
struct Pruner: Service {
    let store: Store
    let leadership: Leadership
    let retention: Retention
    var period: Duration = .seconds(60)

    func run() async {
        await leadership.repeatWhileLeading(every: period, "pruning") { try await prune() }
    }

    /// Finished jobs past retention, in batches.
    func prune() async throws {
        for (state, kept) in [
            (JobState.completed, retention.completed), (.discarded, retention.discarded),
            (.cancelled, retention.cancelled),
        ] {
            while try await store.prune(state, retention: kept, limit: 5000) == 5000 {}
        }
        try await store.pruneHistory(keep: max(retention.completed, .seconds(25 * 3600)))
        while try await store.pruneAudit(retention: retention.audit, limit: 5000) == 5000 {}
    }
}
