import Metrics
import Synchronization

/// Each metric made once per label and dimensions, and kept. Making a `Timer`, `Counter` or `Meter`
/// looks it up in the backend (with Prometheus: a lock, a dictionary, a check of every name), which,
/// done three times a stage and once a claimed job, was a measurable part of a busy worker's CPU
/// with `--metrics-port` (docs/benchmarks.md#stage-metrics-made-once), and twice a transaction in
/// the pool. They are made on first use (a claim, a stage's end, a lease), so after the process
/// has bootstrapped its backend: one made before would stay with the no-op backend. Their number is
/// bounded by the queues served times the task labels (``MetricLabels``).
package final class MadeMetrics: Sendable {
    private struct Key: Hashable {
        var label: String
        var queue = ""
        var task = ""
        var outcome = ""
    }

    private let timers = Mutex<[Key: Timer]>([:])
    private let counters = Mutex<[Key: Counter]>([:])
    private let meters = Mutex<[String: Meter]>([:])

    package init() {}

    package func timer(_ label: String) -> Timer {
        made(Key(label: label), in: timers) { Timer(label: label) }
    }

    /// A timer of one queue (the pickup latency).
    package func timer(_ label: String, queue: String) -> Timer {
        made(Key(label: label, queue: queue), in: timers) { Timer(label: label, dimensions: [("queue", queue)]) }
    }

    package func timer(_ label: String, queue: String, task: String, outcome: String) -> Timer {
        made(Key(label: label, queue: queue, task: task, outcome: outcome), in: timers) {
            Timer(label: label, dimensions: [("queue", queue), ("task", task), ("outcome", outcome)])
        }
    }

    package func counter(_ label: String, queue: String, task: String) -> Counter {
        made(Key(label: label, queue: queue, task: task), in: counters) {
            Counter(label: label, dimensions: [("queue", queue), ("task", task)])
        }
    }

    package func meter(_ label: String) -> Meter {
        made(label, in: meters) { Meter(label: label) }
    }

    private func made<Key: Hashable & Sendable, Metric: Sendable>(
        _ key: Key, in store: borrowing Mutex<[Key: Metric]>, _ make: () -> Metric
    ) -> Metric {
        store.withLock { made in
            if let metric = made[key] { return metric }
            let metric = make()
            made[key] = metric
            return metric
        }
    }
}
