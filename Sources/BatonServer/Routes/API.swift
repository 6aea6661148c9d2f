import Baton
import BatonPostgres
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Metrics
import Prometheus
import Synchronization

/// The control plane's routes: one table, which the server registers and the OpenAPI document
/// describes (a test holds them to each other).
struct API: Sendable {
    typealias Handler = @Sendable (Request, BatonRequestContext, Caller?) async throws -> Response

    struct Route: Sendable {
        var method: HTTPRequest.Method
        /// OpenAPI's path template (`/v1/jobs/{id}`), which Hummingbird reads too.
        var path: String
        var access: Access
        var handler: Handler
    }

    let client: BatonClient
    let catalog: TaskCatalog
    let configuration: ServerConfiguration
    let registry: PrometheusCollectorRegistry?
    let clusterMetrics: ClusterMetrics
    let queueLabels = MetricLabels()
    let taskLabels = MetricLabels()

    init(
        client: BatonClient, catalog: TaskCatalog, configuration: ServerConfiguration,
        registry: PrometheusCollectorRegistry?
    ) {
        self.client = client
        self.catalog = catalog
        self.configuration = configuration
        self.registry = registry
        clusterMetrics = ClusterMetrics(store: client.store)
    }

    var store: Store { client.store }

    var routes: [Route] {
        jobRoutes + queueRoutes + [
            Route(method: .get, path: "/v1/lanes", access: .readers, handler: lanes),
            Route(method: .get, path: "/v1/workers", access: .readers, handler: workers),
        ] + operationRoutes
    }

    /// Counts enqueued jobs in `baton_jobs_enqueued_total{queue, task}` (the first stage's task).
    func countEnqueued(_ job: NewJob) {
        Counter(
            label: "baton_jobs_enqueued_total",
            dimensions: [("queue", queueLabels.label(job.queue)), ("task", taskLabels.label(job.firstTask))]
        ).increment()
    }

    /// The `{id}` of a job route: a path that names no job id is a job that does not exist.
    static func jobID(_ context: BatonRequestContext) throws -> Int64 {
        let text = context.parameters.get("id") ?? ""
        guard let id = Int64(text), id > 0 else { throw Problem.notFound("no job has id \(text)") }
        return id
    }

    /// A queue name from the path, percent-decoded (Hummingbird leaves path parameters as sent).
    static func queueName(_ context: BatonRequestContext) throws -> String {
        let raw = context.parameters.get("name") ?? ""
        guard let name = raw.removingPercentEncoding else {
            throw Problem.invalid("name", "the queue name in the path is not valid percent-encoding")
        }
        do {
            try ChainDefinition.checkName(name, path: "name", what: "queue name")
        } catch {
            throw Problem.invalid(error)
        }
        return name
    }
}
