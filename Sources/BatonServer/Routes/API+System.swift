import Baton
import BatonAPI
import BatonPostgres
import OpenAPIRuntime

extension API {
    /// `GET /healthz`: the process answers.
    func health(_ input: Operations.Health.Input) async throws -> Operations.Health.Output {
        .ok(.init(body: .json(.init(status: .ok))))
    }

    /// `GET /readyz`: the database answers and its schema is the one this binary needs; else 503.
    func ready(_ input: Operations.Ready.Input) async throws -> Operations.Ready.Output {
        let version: Int
        do {
            version = try await Migrator(schema: store.schema, logger: RequestScope.logger).currentVersion(store.pool)
        } catch {
            throw Problem(
                .serviceUnavailable, type: "not-ready", title: "Not ready", detail: "the database does not answer")
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
        var bytes: [UInt8] = []
        registry?.emit(into: &bytes)
        return .ok(.init(body: .plainText(HTTPBody(bytes))))
    }

    /// `GET /openapi.json`: the document this server's code was generated from.
    func openAPIDocument(_ input: Operations.OpenAPIDocument.Input) async throws
        -> Operations.OpenAPIDocument.Output
    {
        .ok(.init(body: .json(APIDocument.shared.document)))
    }
}
