import Baton
import BatonPostgres
import Hummingbird
import NIOCore

extension API {
    var operationRoutes: [Route] {
        [
            Route(method: .get, path: "/healthz", access: .open, handler: health),
            Route(method: .get, path: "/readyz", access: .open, handler: ready),
            Route(
                method: .get, path: "/metrics", access: configuration.metricsRequireToken ? .anyToken : .open,
                handler: metrics),
            Route(method: .get, path: "/openapi.json", access: .anyToken, handler: openAPI),
        ]
    }

    /// `GET /healthz`: the process answers.
    @Sendable func health(_ request: Request, context: BatonRequestContext, caller: Caller?) async throws -> Response {
        JSONBody.response(["status": "ok"] as JSONValue)
    }

    /// `GET /readyz`: the database answers and its schema is the one this binary needs; else 503.
    @Sendable func ready(_ request: Request, context: BatonRequestContext, caller: Caller?) async throws -> Response {
        let version: Int
        do {
            version = try await Migrator(schema: store.schema, logger: context.logger).currentVersion(store.client)
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
        return JSONBody.response(["status": "ready", "schema_version": .number(version)] as JSONValue)
    }

    /// `GET /metrics`: Prometheus text.
    @Sendable func metrics(_ request: Request, context: BatonRequestContext, caller: Caller?) async throws -> Response {
        await clusterMetrics.refresh()
        var bytes: [UInt8] = []
        registry?.emit(into: &bytes)
        return Response(
            status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    /// `GET /openapi.json`: the document that describes all of the above.
    @Sendable func openAPI(_ request: Request, context: BatonRequestContext, caller: Caller?) async throws -> Response {
        Response(
            status: .ok, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(string: OpenAPIDocument.json)))
    }
}
