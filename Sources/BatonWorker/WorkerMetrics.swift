import Baton
import BatonPostgres
import Metrics

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
        case .hop, .advance, .complete, .spawn, .spawnOver: outcome = "succeeded"
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
        case .spawn, .spawnOver, .release, .await, .snooze:
            break
        }
    }

    func pickedUp(queue: String, waited: Double, job: Int64) {
        // A wait past Int64's ~292 years of nanoseconds (a clock gone wrong) is recorded as the
        // longest a Timer can hold, not trapped on.
        let nanoseconds = Int64(exactly: (max(0, waited) * 1e9).rounded()) ?? .max
        made.timer("baton_pickup_latency_seconds", queue: queue).record(duration: .nanoseconds(nanoseconds))
        history.pickedUp(queue: queue, waited: waited, job: job)
    }
}
