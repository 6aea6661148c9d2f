import Prometheus

/// Baton's metrics as Prometheus text that follows Prometheus's conventions (`promtool check
/// metrics` passes): every family has `# HELP` and `# TYPE`, counters end in `_total`, durations
/// are in seconds and say so.
///
/// swift-prometheus's `MetricsFactory` registers what swift-metrics makes without help text (it
/// passes an empty one, and a family registered with help first would then trap on the
/// mismatch), so the help is added to the page as it is written, from ``help``; a family Baton
/// does not know (a task's own metrics, in a Swift service) gets a line that says where it came
/// from. Hummingbird's request metrics are renamed on their way in (``factory(registry:)``).
public enum MetricsExposition {
    /// A factory for `registry`: Baton's histogram buckets, and Hummingbird's metric names made
    /// conventional (`hb.requests` is a counter: `http_server_requests_total`;
    /// `http.server.request.duration` is in seconds: `http_server_request_duration_seconds`).
    public static func factory(registry: PrometheusCollectorRegistry) -> PrometheusMetricsFactory {
        var factory = PrometheusMetricsFactory(registry: registry)
        let fast: [Duration] = [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000].map { .milliseconds($0) }
        factory.durationHistogramBuckets = [
            "baton_pickup_latency_seconds": fast + [.seconds(30), .seconds(60), .seconds(300)],
            "baton_db_connection_wait_seconds": fast,
            "baton_stage_duration_seconds": fast + [.seconds(30), .seconds(60), .seconds(300), .seconds(900)],
        ]
        factory.nameAndLabelSanitizer = { name, labels in (renamed[name] ?? name, labels) }
        return factory
    }

    /// The page for `GET /metrics`: `registry`'s text with a `# HELP` line before each family's
    /// `# TYPE` line.
    public static func page(of registry: PrometheusCollectorRegistry) -> [UInt8] {
        var text: [UInt8] = []
        registry.emit(into: &text)
        var lines = text.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        if lines.last?.isEmpty == true { lines.removeLast() }
        var page: [UInt8] = []
        page.reserveCapacity(text.count + 4096)
        for line in lines {
            if line.starts(with: typePrefix) {
                let name = String(
                    decoding: line.dropFirst(typePrefix.count).prefix { $0 != UInt8(ascii: " ") }, as: UTF8.self)
                let text = help[name] ?? "\(name), recorded through swift-metrics (not one of Baton's own)."
                page.append(contentsOf: "# HELP \(name) \(text)\n".utf8)
            }
            page.append(contentsOf: line)
            page.append(UInt8(ascii: "\n"))
        }
        return page
    }

    private static let typePrefix = Array("# TYPE ".utf8)

    /// Hummingbird's `MetricsMiddleware` labels, as Prometheus names them.
    static let renamed: [String: String] = [
        "hb.requests": "http_server_requests_total",
        "hb.request.errors": "http_server_request_errors_total",
        "http.server.request.duration": "http_server_request_duration_seconds",
        "http.server.active_requests": "http_server_active_requests",
    ]

    /// What each family means: docs/operations.md#metrics-logs-and-traces says the same at length.
    static let help: [String: String] = [
        "baton_jobs_enqueued_total":
            "Jobs created, by queue and first stage's task (a repeated idempotency key does not count).",
        "baton_jobs_completed_total": "Jobs whose last stage succeeded, by queue and that stage's task.",
        "baton_jobs_retried_total": "Failed attempts that will be tried again, by queue and task.",
        "baton_jobs_discarded_total": "Jobs failed for good, by queue and the task of the stage that failed.",
        "baton_jobs_cancelled_total": "Jobs cancelled, by queue and the task of their current stage.",
        "baton_stages_completed_total": "Stages that succeeded, the last of their job or not, by queue and task.",
        "baton_stage_duration_seconds":
            "How long each attempt of a stage ran, by queue, task and outcome (succeeded, failed, released).",
        "baton_pickup_latency_seconds": "From a stage becoming claimable to its claim, by queue.",
        "baton_queue_jobs":
            "Jobs not finished, by queue and state (available, running, scheduled, retryable, waiting).",
        "baton_queue_oldest_available_seconds": "Age of the oldest claimable job of each queue (0: none).",
        "baton_queue_unserved": "1 when the queue has available jobs and no live worker serves it.",
        "baton_queue_task_unserved":
            "1 when some of the queue's oldest available jobs are of a task no live worker serving it runs.",
        "baton_workers_silent": "Registered workers whose last heartbeat is older than their lease.",
        "baton_schedules_late": "Schedules not paused whose next run is more than a minute overdue.",
        "baton_fair_keys_waiting": "In a fair queue, the fairness keys with stages waiting.",
        "baton_fair_key_stages":
            "Stages waiting of the fairness keys with the most in a fair queue (the five with the most only).",
        "baton_queue_paused": "1 when the queue is paused (no worker claims from it), 0 when not.",
        "baton_lanes_blocked": "Lanes whose holder failed and waits to retry: nothing behind it moves.",
        "baton_workers_alive": "Workers whose last heartbeat is within their lease.",
        "baton_db_connections_in_use": "Connections of this process's pool holding a statement now.",
        "baton_db_connection_wait_seconds": "Time spent waiting for a pooled connection.",
        "http_server_requests_total": "HTTP requests answered, by route, method and status.",
        "http_server_request_errors_total": "HTTP requests that ended in an error thrown by their handler.",
        "http_server_request_duration_seconds": "How long each HTTP request took to answer, by route and method.",
        "http_server_active_requests": "HTTP requests in flight, by method.",
    ]
}
