import AsyncHTTPClient
import Baton
import BatonAPI
import BatonPostgres
import BatonServer
import BatonTestSupport
import BatonWorker
import Foundation
import Logging
import Metrics
import NIOCore
import NIOHTTP1
import Prometheus
import ServiceLifecycle
import Testing

/// The tokens every test server accepts.
package enum Token {
    package static let admin = "admin-token-1"
    package static let enqueue = "enqueue-token-1"
    package static let otherEnqueue = "enqueue-token-2"
    package static let read = "read-token-1"

    package static let all = APITokens([
        (.admin, admin), (.enqueue, enqueue), (.enqueue, otherEnqueue), (.read, read),
    ])
}

/// One answer from the server.
package struct Reply: Sendable {
    package init(status: Int, headers: HTTPHeaders, text: String, json: JSONValue) {
        (self.status, self.headers, self.text, self.json) = (status, headers, text, json)
    }

    package var status: Int
    package var headers: HTTPHeaders
    package var text: String
    package var json: JSONValue

    package subscript(key: String) -> JSONValue? { json[key] }
}

/// A control plane on loopback with a real HTTP client, over a fresh schema.
package struct TestServer: Sendable {
    package let base: String
    package let db: TestDatabase
    package let client: BatonClient

    package init(base: String, db: TestDatabase, client: BatonClient) {
        (self.base, self.db, self.client) = (base, db, client)
    }

    /// Sends a request; `body` is sent as JSON, `raw` as is. Every refusal must be a problem
    /// (RFC 9457) of one of Baton's types, which the test records an issue for otherwise.
    @discardableResult
    package func call(
        _ method: HTTPMethod, _ target: String, token: String? = Token.admin, body: JSONValue? = nil,
        raw: String? = nil, headers: [(String, String)] = [], sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> Reply {
        var request = HTTPClientRequest(url: base + target)
        request.method = method
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let text = raw ?? body?.jsonText {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: text))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        let buffer = try await response.body.collect(upTo: 64 << 20)
        let text = String(buffer: buffer)
        let json = text.isEmpty ? JSONValue.null : (try? JSONValue(parsing: text)) ?? .string(text)
        if response.status.code >= 400 {
            #expect(
                response.headers.first(name: "Content-Type") == "application/problem+json",
                "\(method) \(target) → \(response.status.code)", sourceLocation: sourceLocation)
            let problem = try? json.decode(as: Components.Schemas.Problem.self)
            #expect(
                problem?._type.hasPrefix("urn:baton:problem:") == true && problem?.status == Int(response.status.code),
                "\(method) \(target) → \(text)", sourceLocation: sourceLocation)
        }
        return Reply(status: Int(response.status.code), headers: response.headers, text: text, json: json)
    }

    /// Enqueues `job` (JSON) and returns its id; fails the test unless it was created.
    @discardableResult
    package func enqueue(_ job: JSONValue, query: String = "", token: String = Token.admin) async throws -> Int64 {
        let reply = try await call(.POST, "/v1/jobs" + query, token: token, body: job)
        try #require(reply.status == 201, "\(reply.text)")
        return try #require(reply["id"].flatMap(\.int64))
    }

    /// Reads the job until `condition` holds.
    package func job(_ id: Int64, until condition: @Sendable (JSONValue) -> Bool) async throws -> JSONValue {
        // Each look holds a moment for the job to finish (woken by NOTIFY), not longer: the
        // condition may be about a job that runs on.
        var last = JSONValue.null
        try await eventually(timeout: .seconds(60), "job \(id) to reach the expected state") {
            last = try await call(.GET, "/v1/jobs/\(id)?wait=250ms").json
            return condition(last)
        }
        return last
    }
}

extension TestServer {
    /// What a run of the `baton` executable did.
    package struct CLIRun: Sendable {
        package var status: Int32
        package var out: String
        package var err: String

        package init(status: Int32, out: String, err: String) { (self.status, self.out, self.err) = (status, out, err) }

        /// Standard output decoded as the API's JSON.
        package func json<T: Decodable>(_ type: T.Type) throws -> T {
            try JSONValue(parsing: out).decode(as: T.self)
        }

        package var lines: [Substring] { out.split(separator: "\n") }
    }

    /// Runs the built `baton` with `arguments` against this server, as `token`.
    package func baton(
        _ arguments: [String], token: String? = Token.admin, input: String? = nil,
        environment: [String: String?] = [:]
    ) async throws -> CLIRun {
        let child = try await ChildProcess(
            try ChildProcess.builtBinary("baton"), arguments,
            environment: [
                "BATON_URL": base, "BATON_TOKEN": token, "BATON_API_TOKEN": nil, "NO_COLOR": nil, "COLUMNS": nil,
            ].merging(environment) { $1 }, input: input)
        let status = try await child.waitForExit(timeout: .seconds(90))
        return CLIRun(status: status, out: child.standardOutput, err: child.standardError)
    }
}

extension JSONValue {
    package var int64: Int64? {
        numberValue?.integer()
    }

    package var items: [JSONValue] { arrayValue ?? [] }
}

/// Metrics go to one registry per test process (swift-metrics is bootstrapped once).
package let testRegistry: PrometheusCollectorRegistry = {
    let registry = PrometheusCollectorRegistry()
    MetricsSystem.bootstrap(MetricsExposition.factory(registry: registry))
    return registry
}()

/// Runs a server (and, unless `worker` is nil, a worker with `tasks`) over a fresh schema while
/// `body` runs.
/// `logger`, when given, receives everything: the database pool's, the server's and the worker's
/// lines.
package func withServer<T: Sendable>(
    worker tasks: TaskRegistry? = serverTestTasks, workerLogger: Logger? = nil, schema: String? = nil,
    baseURL: String? = nil, logger: Logger? = nil,
    configure: @Sendable (inout ServerConfiguration) -> Void = { _ in },
    _ body: @Sendable (TestServer) async throws -> T
) async throws -> T {
    try await TestDatabase.with(baseURL: baseURL, logger: logger) { db async throws in
        // Another schema: a pool of its own, run with the services.
        let pool = try schema.map { DatabasePool(configuration: try db.configuration.inSchema($0), logger: db.logger) }
        let client = BatonClient(pool: pool ?? db.pool, logger: db.logger, checkingArgs: TaskRegistry().argsCheck)
        var configuration = ServerConfiguration(port: 0, tokens: Token.all, requestLogLevel: .debug)
        configure(&configuration)
        let (ports, portSink) = AsyncStream.makeStream(of: Int.self)
        let server = BatonServer(
            configuration: configuration, client: client, registry: testRegistry, logger: db.logger,
            onListening: { portSink.yield($0) })
        let worker = tasks.map { tasks in
            Worker(
                pool: pool ?? db.pool, tasks: tasks,
                // A lease of ten seconds, as the worker tests' (Tests/BatonWorkerTests/Harness.swift
                // says why): with two, a heartbeat late under the full suite had the worker taken
                // for lost and its running stage put back (LongPollTests saw its job `retryable`).
                configuration: WorkerConfiguration(
                    queues: ["default": 8], lease: .seconds(10), pollInterval: .seconds(1),
                    drainGrace: .seconds(5), schedulerInterval: .milliseconds(20)),
                logger: workerLogger ?? db.logger)
        }
        let services: [any Service] = (pool.map { [$0] } ?? []) + [client, server] + (worker.map { [$0] } ?? [])
        return try await withRunningServices(services, logger: db.logger) {
            var iterator = ports.makeAsyncIterator()
            let port = try #require(await iterator.next())
            try await eventually("the listener to connect") { client.listener.isListening }
            if let worker {
                // Registered (the API checks task names against live workers) and listening
                // (a cancel's notice reaches it at once).
                try await eventually("the worker to register and listen") {
                    try await !db.store.workers().isEmpty && worker.isListening
                }
            }
            return try await body(TestServer(base: "http://127.0.0.1:\(port)", db: db, client: client))
        }
    }
}
