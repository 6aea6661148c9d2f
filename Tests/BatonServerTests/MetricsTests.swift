import AsyncHTTPClient
import Baton
import BatonTestSupport
import Foundation
import LocalPostgres
import NIOCore
import Testing

/// What an operator's Prometheus scrapes, from `baton serve` and `baton worker --metrics-port`
/// as real processes, after real jobs completed, retried, were discarded and cancelled.
@Suite(.timeLimit(.minutes(3)))
struct MetricsTests {
    static let token = "metrics-test-admin-token"

    /// Samples of a Prometheus text page: `name{labels}` → value.
    struct Scrape {
        var samples: [(name: String, labels: [String: String], value: Double)] = []
        var text: String

        init(_ text: String) {
            self.text = text
            for line in text.split(separator: "\n") where !line.hasPrefix("#") {
                guard let match = line.wholeMatch(of: /([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)/),
                    let value = Double(match.4)
                else { continue }
                var labels: [String: String] = [:]
                for pair in String(match.3 ?? "").matches(of: /([a-zA-Z_]+)="((\\.|[^"\\])*)"/) {
                    labels[String(pair.1)] = String(pair.2)
                }
                samples.append((String(match.1), labels, value))
            }
        }

        /// The value of the sample named `name` whose labels include `labels`; nil if none.
        func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
            samples.first { sample in
                sample.name == name && labels.allSatisfy { key, value in sample.labels[key] == value }
            }?.value
        }
    }

    static func get(_ url: String, token: String? = nil) async throws -> (status: Int, body: String) {
        var request = HTTPClientRequest(url: url)
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 8 << 20)
        return (Int(response.status.code), String(buffer: body))
    }

    static func post(_ url: String, _ body: String = "") async throws -> JSONValue {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        request.body = .bytes(ByteBuffer(string: body))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        return try JSONValue(parsing: try await response.body.collect(upTo: 1 << 20).readableBytesView)
    }

    /// Polls `url` until it answers 200 or the process has died.
    static func awaitUp(_ url: String, _ process: ChildProcess) async throws {
        try await eventually(timeout: .seconds(60), "\(url) to answer") {
            guard process.isRunning else { throw TestFailure("\(url) never answered: \(process.standardError)") }
            return (try? await get(url))?.status == 200
        }
    }

    @Test func theWorkerAndTheAPIReportWhatHappenedToJobs() async throws {
        try await TestDatabase.with { db async throws in
            let (apiPort, metricsPort) = (try LocalPostgres.freePort(), try LocalPostgres.freePort())
            let environment: [String: String?] = [
                "BATON_API_TOKEN": Self.token, "BATON_API_TOKENS": nil, "BATON_LOG_LEVEL": "warning",
            ]
            let api = try await ChildProcess(
                try ChildProcess.builtBinary("baton"),
                ["serve", "--database-url", db.url, "--port", "\(apiPort)"], environment: environment)
            defer { if api.isRunning { api.signal(SIGKILL) } }
            let worker = try await ChildProcess(
                try ChildProcess.builtBinary("baton"),
                [
                    "worker", "--database-url", db.url, "--metrics-port", "\(metricsPort)", "--metrics-host",
                    "127.0.0.1", "--lease", "2s",
                ], environment: environment)
            defer { if worker.isRunning { worker.signal(SIGKILL) } }
            let base = "http://127.0.0.1:\(apiPort)"
            let metrics = "http://127.0.0.1:\(metricsPort)"
            try await Self.awaitUp(base + "/readyz", api)
            try await Self.awaitUp(metrics + "/healthz", worker)

            // Completed; retried once then discarded; cancelled while running; scheduled for
            // later; available in a queue nobody serves; holding a lane while it waits to retry.
            // The failures are requests to a port nothing listens on (refused, retried by policy).
            let closed = "http://127.0.0.1:\(try LocalPostgres.freePort())/"
            let failing = #"{"method": "GET", "url": "\#(closed)"}"#
            let completed = try await Self.post(base + "/v1/jobs?wait=30s", #"{"stages": [{"task": "noop"}]}"#)
            #expect(completed["state"] == "completed")
            // Backdated by fourteen centuries (the API takes any instant from year 1): its pickup
            // latency is counted from its enqueue (it once overflowed the worker's nanoseconds
            // and killed it), and its time comes back as it went in.
            let backdated = try await Self.post(
                base + "/v1/jobs?wait=30s", #"{"run_at": "0532-01-05T03:43:28Z", "stages": [{"task": "noop"}]}"#)
            #expect(backdated["state"] == "completed")
            #expect(backdated["run_at"] == "0532-01-05T03:43:28.000Z")  // not the Julian 01-03
            let discarded = try await Self.post(
                base + "/v1/jobs?wait=30s",
                #"{"stages": [{"task": "http", "args": \#(failing), "max_attempts": 2, "backoff": {"kind": "constant", "initial": "10ms"}}]}"#
            )
            #expect(discarded["state"] == "discarded")
            let sleeping = try await Self.post(
                base + "/v1/jobs", #"{"stages": [{"task": "sleep", "args": {"ms": 60000}}]}"#)
            guard let sleeper = sleeping["id"]?.numberValue?.integer(as: Int.self) else {
                throw TestFailure("no id: \(sleeping)")
            }
            try await Self.awaitState("running", job: sleeper, base: base)
            let cancelled = try await Self.post(base + "/v1/jobs/\(sleeper)/cancel")
            #expect(cancelled["state"] == "cancelled")
            _ = try await Self.post(base + "/v1/jobs", #"{"delay": "1h", "stages": [{"task": "noop"}]}"#)
            _ = try await Self.post(base + "/v1/jobs", #"{"queue": "idle", "stages": [{"task": "noop"}]}"#)
            // Two tenants' stages waiting in a fair queue nobody serves.
            for key in ["t-1", "t-1", "t-2"] {
                _ = try await Self.post(
                    base + "/v1/jobs", #"{"queue": "tenants", "fair_key": "\#(key)", "stages": [{"task": "noop"}]}"#)
            }
            let blocking = try await Self.post(
                base + "/v1/jobs",
                #"{"stages": [{"task": "http", "args": \#(failing), "lane": "l-1", "max_attempts": 5, "backoff": {"kind": "constant", "initial": "1h"}}]}"#
            )
            guard let blocker = blocking["id"]?.numberValue?.integer(as: Int.self) else {
                throw TestFailure("no id: \(blocking)")
            }
            try await Self.awaitState("retryable", job: blocker, base: base)

            // A task no worker runs, in a queue one serves; a worker gone silent ten minutes ago.
            _ = try await Self.post(base + "/v1/jobs?unchecked=true", #"{"stages": [{"task": "resize"}]}"#)
            try await db.pool.execute(
                """
                INSERT INTO \(unescaped: db.configuration.schema).workers (id, host, pid, queues, tasks, heartbeat_at)
                VALUES ('gone', 'elsewhere', 1, '{default}', '{noop}', now() - interval '10 minutes')
                """)

            let work = Scrape(try await Self.get(metrics + "/metrics").body)
            let noop = ["queue": "default", "task": "noop"]
            let missing = ["queue": "default", "task": "http"]
            #expect(work.value("baton_jobs_completed_total", noop) == 2)
            #expect(work.value("baton_stages_completed_total", noop) == 2)
            // The discarded job's first try, and the lane holder's.
            #expect(work.value("baton_jobs_retried_total", missing) == 2)
            #expect(work.value("baton_jobs_discarded_total", missing) == 1)
            #expect(
                work.value("baton_stage_duration_seconds_count", noop.merging(["outcome": "succeeded"]) { $1 }) == 2)
            #expect(
                work.value("baton_stage_duration_seconds_count", missing.merging(["outcome": "failed"]) { $1 }) == 3)
            #expect((work.value("baton_pickup_latency_seconds_count", ["queue": "default"]) ?? 0) >= 5)
            #expect((work.value("baton_pickup_latency_seconds_sum", ["queue": "default"]) ?? .infinity) < 60)
            #expect((work.value("baton_db_connection_wait_seconds_count") ?? 0) > 0)
            #expect(work.value("baton_db_connections_in_use") != nil)

            #expect(try await Self.get(base + "/metrics").status == 401)
            let control = Scrape(try await Self.get(base + "/metrics", token: Self.token).body)
            #expect(control.value("baton_jobs_enqueued_total", noop) == 3)
            #expect(control.value("baton_jobs_enqueued_total", ["queue": "idle", "task": "noop"]) == 1)
            #expect(control.value("baton_jobs_enqueued_total", missing) == 2)
            #expect(control.value("baton_jobs_enqueued_total", ["queue": "default", "task": "sleep"]) == 1)
            #expect(control.value("baton_jobs_cancelled_total", ["queue": "default", "task": "sleep"]) == 1)
            #expect(control.value("baton_queue_jobs", ["queue": "default", "state": "scheduled"]) == 1)
            #expect(control.value("baton_queue_jobs", ["queue": "default", "state": "retryable"]) == 1)
            #expect(control.value("baton_queue_jobs", ["queue": "idle", "state": "available"]) == 1)
            #expect((control.value("baton_queue_oldest_available_seconds", ["queue": "idle"]) ?? 0) > 0)
            #expect(control.value("baton_lanes_blocked") == 1)
            #expect(control.value("baton_workers_alive") == 1)
            #expect(control.value("baton_workers_silent") == 1)
            #expect(control.value("baton_schedules_late") == 0)
            #expect(control.value("baton_queue_task_unserved", ["queue": "default", "task": "resize"]) == 1)
            #expect(control.value("baton_fair_keys_waiting", ["queue": "tenants"]) == 2)
            #expect(control.value("baton_fair_key_stages", ["queue": "tenants", "key": "t-1"]) == 2)
            #expect(control.value("baton_fair_key_stages", ["queue": "tenants", "key": "t-2"]) == 1)
            #expect(control.value("baton_fair_keys_waiting", ["queue": "idle"]) == nil, "not a fair queue")
            // Every state of a queue present, 0 included; the queue nobody serves flagged.
            #expect(control.value("baton_queue_jobs", ["queue": "idle", "state": "running"]) == 0)
            #expect(control.value("baton_queue_unserved", ["queue": "idle"]) == 1)
            #expect(control.value("baton_queue_unserved", ["queue": "default"]) == 0)
            #expect(control.value("baton_queue_paused", ["queue": "idle"]) == 0)
            _ = try await Self.post(base + "/v1/queues/idle/pause")
            try await eventually("the pause to show") {
                let scrape = Scrape(try await Self.get(base + "/metrics", token: Self.token).body)
                return scrape.value("baton_queue_paused", ["queue": "idle"]) == 1
            }

            // What Prometheus's own linter says of both pages.
            for (name, page) in [("worker", try await Self.get(metrics + "/metrics").body), ("API", control.text)] {
                #expect(Self.conventionProblems(page).isEmpty, "\(name): \(Self.conventionProblems(page))")
                if let problems = try await Self.promtoolProblems(page) {
                    Issue.record("promtool check metrics, \(name)'s page: \(problems)")
                }
            }
        }
    }

    /// What Prometheus's conventions ask of a page that can be checked without promtool: a
    /// `# HELP` line before each family's `# TYPE`, and counters, and only they, ending in `_total`.
    static func conventionProblems(_ page: String) -> [String] {
        var problems: [String] = []
        var help: Set<Substring> = []
        for line in page.split(separator: "\n") {
            if let match = line.wholeMatch(of: /# HELP (\S+) .+/) { help.insert(match.1) }
            guard let match = line.wholeMatch(of: /# TYPE (\S+) (\S+)/) else { continue }
            if !help.contains(match.1) { problems.append("\(match.1): no help") }
            if (match.2 == "counter") != match.1.hasSuffix("_total") { problems.append("\(match.1): a \(match.2)") }
        }
        return problems
    }

    /// What `promtool check metrics` (Debian's `prometheus`) finds wrong with `page`; nil when
    /// nothing, or when promtool is not installed, unless `BATON_REQUIRE_PROMTOOL=1` (set by
    /// `.ci/run`, which installs it) makes that a failure.
    static func promtoolProblems(_ page: String) async throws -> String? {
        guard
            let promtool = ["/usr/bin/promtool", "/usr/local/bin/promtool"].first(where: {
                FileManager.default.isExecutableFile(atPath: $0)
            })
        else {
            return ProcessInfo.processInfo.environment["BATON_REQUIRE_PROMTOOL"] == "1" ? "not installed" : nil
        }
        let check = try await ChildProcess(URL(filePath: promtool), ["check", "metrics"], input: page)
        let status = try await check.waitForExit()
        return status == 0 ? nil : check.standardOutput + check.standardError
    }

    /// Waits until job `id` is in `state` (the API's long poll answers at once when nothing changes).
    static func awaitState(_ state: String, job id: Int, base: String) async throws {
        try await eventually("job \(id) to become \(state)") {
            let job = try JSONValue(parsing: Array(try await get(base + "/v1/jobs/\(id)", token: token).body.utf8))
            return job["state"] == .string(state)
        }
    }
}
