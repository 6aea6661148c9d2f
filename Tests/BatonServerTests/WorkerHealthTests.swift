import AsyncHTTPClient
import Baton
import BatonTestSupport
import Foundation
import LocalPostgres
import PostgresNIO
import Testing

/// `baton worker --metrics-port`'s `/healthz` as a liveness probe sees it.
@Suite struct WorkerHealthTests {
    /// While a lock holds every statement of the worker's loops (its heartbeat and its claims wait
    /// on the jobs table), the loops stop coming round: within the lease `/healthz` answers 503
    /// naming them, and 200 again once the lock goes.
    @Test func aWorkerWhoseLoopsStopSaysSo() async throws {
        try await TestDatabase.with { db async throws in
            let port = try LocalPostgres.freePort()
            let worker = try await ChildProcess(
                try ChildProcess.builtBinary("baton"),
                [
                    "worker", "--database-url", db.url, "--metrics-port", "\(port)", "--metrics-host", "127.0.0.1",
                    "--lease", "3s",
                ],
                environment: ["BATON_LOG_LEVEL": "error"])
            defer { if worker.isRunning { worker.signal(SIGKILL) } }
            func health() async -> (status: UInt, body: JSONValue?) {
                guard
                    let response = try? await HTTPClient.shared.execute(
                        HTTPClientRequest(url: "http://127.0.0.1:\(port)/healthz"), timeout: .seconds(5)),
                    let body = try? await response.body.collect(upTo: 1 << 16)
                else { return (0, nil) }
                return (response.status.code, try? JSONValue(parsing: body.readableBytesView))
            }
            try await eventually("the worker to answer 200") { await health().status == 200 }

            let locker = try await db.configuration.connect(id: 1, logger: db.logger)
            try await locker.query("BEGIN", logger: db.logger)
            try await locker.query(
                "LOCK TABLE \(unescaped: db.configuration.schema).jobs IN ACCESS EXCLUSIVE MODE", logger: db.logger)
            let locked = ContinuousClock.now
            var stalled: JSONValue?
            try await eventually(timeout: .seconds(20), "the worker to name both loops stalled") {
                let answer = await health()
                stalled = answer.body
                let loops = answer.body?["loops"]?.arrayValue ?? []
                return answer.status == 503 && loops.contains("heartbeat") && loops.contains("fetch:default")
            }
            #expect(locked.duration(to: .now) > .seconds(3), "stalled before the lease ran out")
            #expect(stalled?["status"] == "stalled")

            try await locker.query("COMMIT", logger: db.logger)
            try await locker.close()
            try await eventually(timeout: .seconds(20), "the worker to recover") { await health().status == 200 }
            worker.signal(SIGTERM)
            #expect(try await worker.waitForExit(timeout: .seconds(30)) == 0, "\(worker.standardError)")
        }
    }
}
