import BatonPostgres
import Synchronization

/// The workers the control plane has seen and the paused queues, read at most once a second (by
/// one request; the others meanwhile await its answer). An enqueue naming a task that no worker
/// seen within the window serves is refused (422) instead of left to wait forever; an enqueue
/// into a paused queue, or one no live worker serves, says so in its answer.
final class WorkerCatalog: Sendable {
    private struct Cache {
        var serving: WorkersServing?
        var readAt: ContinuousClock.Instant?
        var reading: Task<WorkersServing, any Error>?
    }

    private let store: Store
    private let window: Duration
    private let cache = Mutex(Cache())

    init(store: Store, window: Duration) {
        self.store = store
        self.window = window
    }

    /// As read within the last second.
    func current() async throws -> WorkersServing {
        enum Source {
            case cached(WorkersServing)
            case reading(Task<WorkersServing, any Error>)
        }
        let asked = ContinuousClock.now
        let source = cache.withLock { cache -> Source in
            if let serving = cache.serving, let readAt = cache.readAt, asked - readAt < .seconds(1) {
                return .cached(serving)
            }
            if let reading = cache.reading { return .reading(reading) }
            let reading = Task { [store, window] in try await store.workersServing(within: window) }
            cache.reading = reading
            return .reading(reading)
        }
        let reading: Task<WorkersServing, any Error>
        switch source {
        case .cached(let serving): return serving
        case .reading(let task): reading = task
        }
        do {
            let serving = try await reading.value
            cache.withLock { cache in
                if cache.reading == reading { cache = Cache(serving: serving, readAt: asked, reading: nil) }
            }
            return serving
        } catch {
            cache.withLock { cache in if cache.reading == reading { cache.reading = nil } }
            throw error
        }
    }

    /// The first stage routed to a queue of its own that no worker seen within the window serves
    /// with its task.
    func unserved(_ stages: [(task: String, queue: String, path: String)]) async throws -> (
        task: String, queue: String, path: String
    )? {
        guard !stages.isEmpty else { return nil }
        let workers = try await current().workers
        return stages.first { stage in
            !workers.contains { $0.queues.contains(stage.queue) && $0.tasks.contains(stage.task) }
        }
    }

    /// The names in `names` that no worker seen within the window serves, in the order given,
    /// each once.
    func unknown(_ names: [String]) async throws -> [String] {
        let known = try await current().tasks
        var seen = Set<String>()
        return names.filter { !known.contains($0) && seen.insert($0).inserted }
    }
}
