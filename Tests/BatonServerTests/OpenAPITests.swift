import AsyncHTTPClient
import Baton
import BatonPostgres
import Logging
import NIOHTTP1
import Testing

@testable import BatonServer

/// The OpenAPI document and the server describe the same API: the same routes and methods, the
/// same roles, and (through `TestServer.call`, in every test) the same responses.
@Suite(.timeLimit(.minutes(2)))
struct OpenAPITests {
    let contract = OpenAPIContract.shared

    @Test func everyReferenceResolves() {
        var missing: [String] = []
        func walk(_ value: JSONValue) {
            switch value {
            case .object(let fields):
                if case .string(let ref)? = fields["$ref"], contract.resolve(value) == .null { missing.append(ref) }
                fields.values.forEach(walk)
            case .array(let items): items.forEach(walk)
            default: break
            }
        }
        walk(contract.document)
        #expect(missing.isEmpty)
        #expect(contract.document["openapi"] == "3.1.0")
    }

    /// The server registers its routes from one table; that table is the document's operations,
    /// with the roles the document states.
    @Test func routesAndRolesAreTheDocumentsOperations() throws {
        do {
            // Never run: the routes do not touch the database until called.
            let database = try DatabaseConfiguration(url: "postgres://nobody@127.0.0.1:1/nothing")
            let client = BatonClient(
                postgres: database.makeClient(logger: Logger(label: "test")), configuration: database,
                logger: Logger(label: "test"))
            let api = API(
                client: client, catalog: TaskCatalog(store: client.store, window: .seconds(1)),
                configuration: ServerConfiguration(tokens: Token.all), registry: nil)
            let served = Set(api.routes.map { "\($0.method.rawValue) \($0.path)" })
            let documented = Set(contract.operations.map { "\($0.method) \($0.path)" })
            #expect(served == documented)
            for route in api.routes {
                let operation = try #require(contract.operation(method: route.method.rawValue, path: route.path))
                let documentedRoles = Set(
                    operation.operation["x-baton-roles"]?.items.compactMap(\.stringValue) ?? [])
                let roles: Set<String> =
                    switch route.access {
                    case .open: []
                    case .roles(let roles): Set(roles.map(\.rawValue))
                    }
                #expect(roles == documentedRoles, "\(route.method) \(route.path)")
            }
        }
    }

    /// Every documented operation reaches a handler (no 404 "no route", no 405); every other
    /// method on a documented path is a 405 naming the documented ones; the served document is
    /// this one.
    @Test func theServerAnswersExactlyTheDocumentedRoutes() async throws {
        try await withServer(worker: nil) { server async throws in
            for (path, method, _) in contract.operations {
                let concrete = path.replacingOccurrences(of: "{id}", with: "999999")
                    .replacingOccurrences(of: "{name}", with: "some-queue")
                let reply = try await server.call(
                    HTTPMethod(rawValue: method), concrete,
                    body: method == "POST" ? ["stages": [["task": "noop"]]] : nil)
                #expect(reply.status != 405, "\(method) \(path)")
                #expect(reply["detail"]?.stringValue?.hasPrefix("no route") != true, "\(method) \(path)")
            }
            let documented = Dictionary(grouping: contract.operations, by: \.path)
            for (path, operations) in documented {
                let allowed = Set(operations.map(\.method))
                let concrete = path.replacingOccurrences(of: "{id}", with: "1")
                    .replacingOccurrences(of: "{name}", with: "q")
                for method in ["GET", "POST", "PUT", "PATCH", "DELETE", "QUERY", "PROPFIND"]
                where !allowed.contains(method) {
                    let reply = try await server.call(HTTPMethod(rawValue: method), concrete)
                    #expect(reply.status == 405, "\(method) \(path)")
                    let allow = Set(
                        (reply.headers.first(name: "Allow") ?? "").split(separator: ",").map {
                            $0.trimmingCharacters(in: .whitespaces)
                        })
                    #expect(allow == allowed, "\(method) \(path)")
                }
            }
            let unknown = try await server.call(.GET, "/v1/nothing-here")
            #expect(unknown.status == 404)
            #expect(unknown.headers.first(name: "Content-Type") == "application/problem+json")
            let served = try await server.call(.GET, "/openapi.json", token: Token.read)
            #expect(served.json == contract.document)
        }
    }
}
