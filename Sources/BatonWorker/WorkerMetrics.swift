import Baton
import BatonPostgres
import Metrics
import Synchronization

/// What a worker reports through swift-metrics, to whatever backend the process bootstrapped
/// (`baton worker --metrics-port` serves Prometheus text):
///
/// - `baton_stage_duration_seconds{queue, task, outcome}`: each run of a stage, `outcome` being
///   `succeeded`, `failed` or `released` (put back by a drain).
/// - `baton_stages_completed_total{queue, task}`: stages that succeeded, the last of a job or not.
/// - `baton_jobs_completed_total`, `baton_jobs_retried_total`, `baton_jobs_discarded_total`
///   `{queue, task}`: what followed a stage (`task` is that stage's): the job completed, the
///   stage is to be tried again, the job failed for good.
/// - `baton_pickup_latency_seconds{queue}`: from a stage becoming claimable to its claim.
///
/// Counted when the worker decides, before the outcome is written: an outcome the database then
/// refuses (the job was cancelled meanwhile) has been counted.
///
/// The same events feed ``QueueHistory``, the per-minute history of the dashboard.
struct WorkerMetrics: Sendable {
    let tasks = MetricLabels()
    let history: QueueHistory
    private let made = MadeMetrics()

    func stageEnded(queue: String, task: String, transition: Transition, duration: Duration) {
        let task = tasks.label(task)
        let outcome: String
        switch transition {
        case .hop, .advance, .complete, .spawn: outcome = "succeeded"
        case .retry, .discard: outcome = "failed"
        case .release: outcome = "released"
        case .await: outcome = "awaiting"
        case .snooze: outcome = "snoozed"
        }
        made.timer("baton_stage_duration_seconds", queue: queue, task: task, outcome: outcome)
            .record(duration: duration)
        switch transition {
        case .hop, .advance:
            made.counter("baton_stages_completed_total", queue: queue, task: task).increment()
        case .complete:
            made.counter("baton_stages_completed_total", queue: queue, task: task).increment()
            made.counter("baton_jobs_completed_total", queue: queue, task: task).increment()
            history.completed(queue: queue)
        case .retry:
            made.counter("baton_jobs_retried_total", queue: queue, task: task).increment()
        case .discard:
            made.counter("baton_jobs_discarded_total", queue: queue, task: task).increment()
            history.discarded(queue: queue)
        case .spawn, .release, .await, .snooze:
            break
        }
    }

    func pickedUp(queue: String, waited: Double) {
        // A wait past Int64's ~292 years of nanoseconds (a clock gone wrong) is recorded as the
        // longest a Timer can hold, not trapped on.
        let nanoseconds = Int64(exactly: (max(0, waited) * 1e9).rounded()) ?? .max
        made.timer("baton_pickup_latency_seconds", queue: queue).record(duration: .nanoseconds(nanoseconds))
        history.pickedUp(queue: queue, waited: waited)
    }
}

/// Each metric made once per label and dimensions. Making a `Timer` or `Counter` looks it up in the
/// backend (with Prometheus: a lock, a dictionary, a check of every name), which, done three times
/// a stage and once a claimed job, was 7.7 % of a busy worker's CPU with `--metrics-port`. They are
/// made on first use, a claim or a stage's end, so after the process has bootstrapped its backend
/// (one made before would stay with the no-op backend). Their number is bounded by the queues
/// served times the task labels (``MetricLabels``).
private final class MadeMetrics: Sendable {
    private struct Key: Hashable {
        var label: String
        var queue: String
        var task = ""
        var outcome = ""
    }

    private let timers = Mutex<[Key: Timer]>([:])
    private let counters = Mutex<[Key: Counter]>([:])

    func timer(_ label: String, queue: String, task: String, outcome: String) -> Timer {
        made(Key(label: label, queue: queue, task: task, outcome: outcome), in: timers) {
            Timer(label: label, dimensions: [("queue", queue), ("task", task), ("outcome", outcome)])
        }
    }

    /// A timer of one queue (the pickup latency).
    func timer(_ label: String, queue: String) -> Timer {
        made(Key(label: label, queue: queue), in: timers) { Timer(label: label, dimensions: [("queue", queue)]) }
    }

    func counter(_ label: String, queue: String, task: String) -> Counter {
        made(Key(label: label, queue: queue, task: task), in: counters) {
            Counter(label: label, dimensions: [("queue", queue), ("task", task)])
        }
    }

    private func made<Metric>(_ key: Key, in store: borrowing Mutex<[Key: Metric]>, _ make: () -> Metric) -> Metric {
        store.withLock { made in
            if let metric = made[key] { return metric }
            let metric = make()
            made[key] = metric
            return metric
        }
    }
}
