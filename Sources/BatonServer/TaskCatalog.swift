import BatonPostgres
import Synchronization

/// The tasks some live worker serves, cached briefly: enqueueing a chain naming a task no worker
/// runs is refused (422) instead of leaving the job to wait forever. A name missing from the cache
/// forces a re-read (at most once a second), so a worker that has just started is seen at once.
final class TaskCatalog: Sendable {
    private struct Cache {
        var names: Set<String> = []
        var readAt: ContinuousClock.Instant?
    }

    private let store: Store
    private let window: Duration
    private let cache = Mutex(Cache())

    init(store: Store, window: Duration) {
        self.store = store
        self.window = window
    }

    /// The names in `names` that no worker seen within the window serves, in the order given.
    func unknown(_ names: [String]) async throws -> [String] {
        let now = ContinuousClock.now
        let (known, readAt) = cache.withLock { ($0.names, $0.readAt) }
        var missing = names.filter { !known.contains($0) }
        let fresh = readAt.map { now - $0 < .seconds(1) } ?? false
        let stale = readAt.map { now - $0 > .seconds(30) } ?? true
        if (!missing.isEmpty && !fresh) || stale {
            let names = try await store.liveTaskNames(within: window)
            cache.withLock { $0 = Cache(names: names, readAt: now) }
            missing = missing.filter { !names.contains($0) }
        }
        var seen = Set<String>()
        return missing.filter { seen.insert($0).inserted }
    }
}
