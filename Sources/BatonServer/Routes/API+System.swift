import Baton
import BatonAPI
import BatonPostgres
import OpenAPIRuntime

extension API {
    /// `GET /healthz`: the process answers.
    func health(_ input: Operations.Health.Input) async throws -> Operations.Health.Output {
        .ok(.init(body: .json(.init(status: .ok))))
    }

    /// `GET /readyz`: the database answers, takes writes (a standby, or a primary a failover
    /// demoted, is not ready: a load balancer sends no traffic there) and its schema is the one
    /// this binary needs; else 503.
    func ready(_ input: Operations.Ready.Input) async throws -> Operations.Ready.Output {
        let version: Int
        do {
            try await store.pool.requireWritable(logger: RequestScope.logger)
            version = try await Migrator(schema: store.schema, logger: RequestScope.logger).currentVersion(store.pool)
        } catch {
            let detail = (error as? DatabaseUnavailable)?.description ?? "the database does not answer"
            throw Problem(.serviceUnavailable, type: "not-ready", title: "Not ready", detail: detail)
        }
        guard version >= Migrator.latestVersion else {
            throw Problem(
                .serviceUnavailable, type: "not-ready", title: "Not ready",
                detail:
                    "the schema is at version \(version), this binary needs \(Migrator.latestVersion): run `baton migrate`"
            )
        }
        return .ok(.init(body: .json(.init(status: .ready, schemaVersion: version))))
    }

    /// `GET /metrics`: Prometheus text.
    func metrics(_ input: Operations.Metrics.Input) async throws -> Operations.Metrics.Output {
        await clusterMetrics.refresh()
        let page = registry.map(MetricsExposition.page(of:)) ?? []
        return .ok(.init(body: .plainText(HTTPBody(page))))
    }

    /// `GET /openapi.json`: the document this server's code was generated from.
    func openAPIDocument(_ input: Operations.OpenAPIDocument.Input) async throws
        -> Operations.OpenAPIDocument.Output
    {
        .ok(.init(body: .json(APIDocument.shared.document)))
    }
}
