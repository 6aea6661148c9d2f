import AsyncHTTPClient
import Baton
import BatonTestSupport
import Foundation
import LocalPostgres
import Testing

/// `baton worker --metrics-port`'s `/healthz` as a liveness probe sees it.
@Suite struct WorkerHealthTests {
    /// With PostgreSQL hung (every server process stopped: connections open, no answer) the
    /// worker's heartbeat and fetch loops stop coming round; within the lease `/healthz` answers
    /// 503 naming them, and 200 again once the server answers.
    @Test func aWorkerWhoseLoopsStopSaysSo() async throws {
        let cluster = try await LocalPostgres.start(LocalPostgres.Options(fast: true))
        defer {
            try? cluster.signalAll(SIGCONT)
            cluster.stop()
        }
        try await TestDatabase.with(baseURL: cluster.url) { db async throws in
            let port = try LocalPostgres.freePort()
            let worker = try ChildProcess(
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
            try await db.eventually("the worker to answer 200") { await health().status == 200 }

            try cluster.signalAll(SIGSTOP)
            let stopped = ContinuousClock.now
            try await db.eventually(timeout: .seconds(20), "the worker to say it is stalled") {
                await health().status == 503
            }
            #expect(stopped.duration(to: .now) > .seconds(3), "stalled before the lease ran out")
            let stalled = await health().body
            #expect(stalled?["status"] == "stalled")
            #expect(stalled?["loops"]?.arrayValue?.contains("heartbeat") == true, "\(String(describing: stalled))")
            #expect(stalled?["loops"]?.arrayValue?.contains("fetch:default") == true)

            try cluster.signalAll(SIGCONT)
            try await db.eventually(timeout: .seconds(20), "the worker to recover") { await health().status == 200 }
            worker.signal(SIGTERM)
            #expect(try await worker.waitForExit(timeout: .seconds(30)) == 0, "\(worker.standardError)")
        }
    }
}
