import Baton
import BatonAPI
import BatonPostgres
import Logging
import Metrics
import Prometheus
import Synchronization

/// The control plane's operations: the handler protocol generated from the OpenAPI document
/// (`APIProtocol`), over the store. Roles, query parameters and body decoding are checked before a
/// handler runs (see `BatonServer.router`); a handler throws a ``Problem`` for anything else it
/// refuses.
struct API: APIProtocol {
    let client: BatonClient
    let catalog: WorkerCatalog
    let configuration: ServerConfiguration
    let access: Access
    let registry: PrometheusCollectorRegistry?
    let clusterMetrics: ClusterMetrics
    let queueLabels = MetricLabels()
    let taskLabels = MetricLabels()

    init(
        client: BatonClient, catalog: WorkerCatalog, configuration: ServerConfiguration,
        registry: PrometheusCollectorRegistry?
    ) {
        self.client = client
        self.catalog = catalog
        self.configuration = configuration
        access = Access(configuration: configuration, store: client.store)
        self.registry = registry
        clusterMetrics = ClusterMetrics(store: client.store)
    }

    var store: Store { client.store }

    /// Counts enqueued jobs in `baton_jobs_enqueued_total{queue, task}` (the first stage's task).
    /// `baton_jobs_enqueued_total` by queue and first task: one counter look-up per pair, not per
    /// job (a batch of 1,000 mostly has one pair).
    func countEnqueued(_ jobs: [NewJob]) {
        var counts: [Pair: Int] = [:]
        for job in jobs { counts[Pair(queue: job.queue, task: job.firstTask), default: 0] += 1 }
        for (pair, count) in counts {
            Counter(
                label: "baton_jobs_enqueued_total",
                dimensions: [("queue", queueLabels.label(pair.queue)), ("task", taskLabels.label(pair.task))]
            ).increment(by: count)
        }
    }

    private struct Pair: Hashable {
        var queue: String
        var task: String
    }

    /// A job id from a path: one that names no job is a job that does not exist.
    static func jobID(_ id: Int64) throws -> Int64 {
        guard id > 0 else { throw Problem.notFound("no job has id \(id)") }
        return id
    }

    /// A queue name from a path, checked by the name rule.
    static func queueName(_ name: String) throws -> String {
        do {
            try ChainDefinition.checkName(name, path: "name", what: "queue name")
        } catch {
            throw Problem.invalid(error)
        }
        return name
    }

    /// A `?wait=` duration, cut to the server's longest.
    func wait(_ text: String?) throws -> Duration? {
        guard let text else { return nil }
        guard let duration = DurationFormat.parse(text) else {
            throw Problem.invalid("wait", "wait must be a duration such as 30s, 250ms or 5m")
        }
        return min(duration, configuration.maxWait)
    }
}

/// The request being handled, for what a handler logs.
enum RequestScope {
    /// Carries the request id.
    @TaskLocal static var logger = Logger(label: "baton.api")
    /// The request's id (its `X-Request-Id`), recorded with the changes it makes.
    @TaskLocal static var requestID: String?
    /// Where the name of the request's token goes, once known, for its log line.
    @TaskLocal static var tokenName: TokenName?

    final class TokenName: Sendable {
        private let name = Mutex<String?>(nil)

        var value: String? {
            get { name.withLock { $0 } }
            set { name.withLock { $0 = newValue } }
        }
    }
}
