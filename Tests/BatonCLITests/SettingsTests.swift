import AsyncHTTPClient
import Baton
import BatonPostgres
import BatonTestSupport
import Foundation
import LocalPostgres
import Testing

/// Settings as an operator gives them: flags over environment variables over a config file, every
/// malformed value refused with where it came from, and the README's table the one the binary has.
@Suite(.timeLimit(.minutes(3)))
final class SettingsTests: Sendable {
    /// This test's files, removed when it ends.
    let directory = FileManager.default.temporaryDirectory.appending(path: "baton-settings-\(UUID().uuidString)")

    deinit { try? FileManager.default.removeItem(at: directory) }

    /// The environment of every run: none of the settings this machine may have set.
    static let clean: [String: String?] = Dictionary(
        uniqueKeysWithValues: [
            "BATON_DATABASE_URL", "DATABASE_URL", "BATON_API_TOKENS", "BATON_API_TOKEN", "BATON_LOG_LEVEL",
            "BATON_LOG_FORMAT", "BATON_CONFIG", "BATON_WORKER_LEASE", "BATON_WORKER_GRACE", "BATON_API_PORT",
        ].map { ($0, nil) })

    struct Run {
        var status: Int32
        var out: String
        var err: String

        /// `baton settings`' rows: key → (value, source).
        var rows: [String: (value: String, source: String)] {
            var rows: [String: (String, String)] = [:]
            for line in out.split(separator: "\n") {
                let fields = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
                guard fields.count >= 3 else { continue }
                rows[fields[0]] = (fields[1], fields[2...].joined(separator: " "))
            }
            return rows
        }
    }

    static func baton(_ arguments: [String], environment: [String: String?] = [:]) async throws -> Run {
        let child = try await ChildProcess(
            try ChildProcess.builtBinary("baton"), arguments, environment: clean.merging(environment) { _, new in new })
        let status = try await child.waitForExit(timeout: .seconds(60))
        return Run(status: status, out: child.standardOutput, err: child.standardError)
    }

    func file(_ name: String, _ text: String) throws -> String {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let url = directory.appending(path: name)
        try text.write(to: url, atomically: true, encoding: .utf8)
        return url.path
    }

    @Test(arguments: ["yaml", "json"])
    func aFlagBeatsTheEnvironmentWhichBeatsTheConfigFile(format: String) async throws {
        let config =
            format == "yaml"
            ? try file(
                "baton.yaml",
                """
                worker:
                  lease: 20s
                  grace: 40s
                  queues: [default, "mail:3"]
                api:
                  port: 9000
                """)
            : try file(
                "baton.json",
                #"{"worker": {"lease": "20s", "grace": 40, "queues": ["default", "mail:3"]}, "api": {"port": 9000}}"#)
        let run = try await Self.baton(
            ["settings", "--config", config, "--grace", "50s"],
            environment: ["BATON_WORKER_LEASE": "25s", "BATON_API_TOKENS": "admin:0123456789abcdef0123"])
        #expect(run.status == 0, "\(run.err)")
        let rows = run.rows
        let name = URL(fileURLWithPath: config).lastPathComponent
        #expect(rows["worker.grace"]?.value == "50s")
        #expect(rows["worker.grace"]?.source == "--grace")
        #expect(rows["worker.lease"]?.value == "25s")
        #expect(rows["worker.lease"]?.source == "BATON_WORKER_LEASE")
        #expect(rows["api.port"]?.value == "9000")
        #expect(rows["api.port"]?.source == "api.port in \(name)")
        #expect(rows["worker.queues"]?.value == "default,mail:3")
        #expect(rows["worker.retention"]?.source == "default")
        // A secret says that it is set, never what it is.
        #expect(rows["api.tokens"]?.value == "(set)")
        #expect(!run.out.contains("0123456789abcdef0123"))
    }

    @Test func theConfigFileCanComeFromTheEnvironment() async throws {
        let config = try file("baton.yml", "log:\n  level: debug\n")
        let run = try await Self.baton(["settings"], environment: ["BATON_CONFIG": config])
        #expect(run.status == 0, "\(run.err)")
        #expect(run.rows["log.level"]?.value == "debug")
        #expect(run.rows["config"]?.source == "BATON_CONFIG")
    }

    /// Each malformed setting is a usage error (exit 2) naming where the value came from; nothing
    /// starts with a setting it could not read.
    @Test func aMalformedSettingIsRefusedNamingWhereItCameFrom() async throws {
        let typo = try file("typo.yaml", "worker:\n  leese: 20s\n")
        let notJSON = try file("broken.json", #"{"worker": "#)
        let wrongType = try file("types.json", #"{"worker": {"concurrency": "ten"}}"#)
        let cases: [([String], [String: String?], String)] = [
            (["settings", "--config", typo], [:], #"unknown setting "worker.leese""#),
            (["settings", "--config", notJSON], [:], "is not valid JSON"),
            (["settings", "--config", wrongType], [:], "worker.concurrency in types.json: expected a whole number"),
            (["settings", "--config", "/nonexistent/baton.yaml"], [:], "cannot read the config file"),
            (["settings", "--config", try file("baton.toml", "")], [:], "name it .json, .yaml or .yml"),
            (["settings"], ["BATON_WORKER_CONCURRENCY": "ten"], "BATON_WORKER_CONCURRENCY: expected a whole number"),
            (["settings"], ["BATON_WORKER_LEASE": "soon"], #"BATON_WORKER_LEASE: "soon" is not a duration"#),
            (["settings"], ["BATON_WORKER_LEASE": "1ms"], "worker.lease must be at least 300ms"),
            (
                ["settings"], ["BATON_WORKER_DISCARD_WEBHOOK": "ops.example/hook"],
                "worker.discard-webhook must be an http"
            ),
            (["settings"], ["BATON_API_TOKENS": "root:0123456789abcdef"], "roles are admin, enqueue, read"),
            (["settings"], ["BATON_HTTP_DENY": "10.0.0.0/99"], "http.allow/http.deny"),
            (
                ["settings"], ["BATON_HTTP_TLS": "localhost ca=/nonexistent/ca.pem"],
                "cannot read the CA bundle /nonexistent/ca.pem"
            ),
            (
                ["settings"], ["HTTPS_PROXY": "socks5://proxy:1080"],
                #"HTTPS_PROXY: "socks5://proxy:1080" is not a proxy URL"#
            ),
            (["worker", "--log-level", "loud"], [:], #"log.level "loud""#),
            (["serve", "--log-format", "xml"], [:], #"log.format "xml""#),
            (["worker"], [:], "no database: pass --database-url or set BATON_DATABASE_URL"),
        ]
        for (arguments, environment, message) in cases {
            let run = try await Self.baton(arguments, environment: environment)
            #expect(run.status == 2, "\(arguments) \(environment): \(run.err)")
            #expect(run.err.contains(message), "\(arguments) \(environment): \(run.err)")
        }
    }

    /// docs/operations.md documents every setting with the table the binary prints.
    @Test func theReadmeHasTheTableOfEverySetting() async throws {
        let run = try await Self.baton(["settings", "--reference"])
        #expect(run.status == 0)
        let table = run.out.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(table.split(separator: "\n").count > 20)
        let guide = try String(
            contentsOf: Self.packageRoot.appending(path: "docs/operations.md"), encoding: .utf8)
        #expect(
            guide.contains(table),
            "docs/operations.md's settings table differs from `baton settings --reference`:\n\(table)")
    }

    static var packageRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
    }

    /// `--log-format json` writes one JSON object per line, with the worker's id in each;
    /// `logfmt` writes `key=value` lines.
    @Test(arguments: ["json", "logfmt"])
    func logLinesAreMachineReadable(format: String) async throws {
        try await TestDatabase.with { db async throws in
            let worker = try await ChildProcess(
                try ChildProcess.builtBinary("baton"),
                ["worker", "--database-url", db.url, "--log-format", format, "--lease", "2s"],
                environment: Self.clean)
            defer { if worker.isRunning { worker.signal(SIGKILL) } }
            try await eventually("the worker to start") {
                worker.standardError.contains("worker started") || !worker.isRunning
            }
            worker.signal(SIGTERM)
            #expect(try await worker.waitForExit() == 0)
            let lines = worker.standardError.split(separator: "\n").map(String.init)
            #expect(lines.contains { $0.contains("worker stopped") }, "\(lines)")
            for line in lines {
                if format == "json" {
                    let object = try JSONValue(parsing: Array(line.utf8))
                    #expect(object["level"] != nil && object["msg"] != nil && object["ts"] != nil, "\(line)")
                    if line.contains("worker started") { #expect(object["worker"] != nil, "\(line)") }
                } else {
                    #expect(
                        line.wholeMatch(
                            of:
                                /ts=\S+ level=[a-z]+ logger=\S+ msg=("(\\.|[^"\\])*"|\S+)( [a-z_]+=("(\\.|[^"\\])*"|\S+))*/
                        ) != nil, "\(line)")
                }
            }
        }
    }

    /// `baton worker --metrics-port` serves Prometheus text and a health check, no token needed.
    /// The settings file's schedules and lane widths are saved when a worker starts, the file's
    /// own (the API may not change them); one the file no longer lists is deleted; a malformed one
    /// refuses the start, naming the file and the field.
    @Test func theSettingsFilesSchedulesAndLaneWidthsAreWhatRuns() async throws {
        try await TestDatabase.with { db async throws in
            func start(_ config: String) async throws {
                let worker = try await ChildProcess(
                    try ChildProcess.builtBinary("baton"), ["worker", "--database-url", db.url, "--config", config],
                    environment: Self.clean)
                defer { if worker.isRunning { worker.signal(SIGKILL) } }
                try await eventually("the worker to start") {
                    guard worker.isRunning else { throw TestFailure("the worker exited: \(worker.standardError)") }
                    // logged last, after the schedules
                    return worker.standardError.contains("lane settings from the settings file")
                }
                worker.signal(SIGTERM)
                #expect(try await worker.waitForExit() == 0)
            }
            try await start(
                try file(
                    "baton.yaml",
                    """
                    schedules:
                      nightly:
                        cron: "0 2 * * *"
                        time_zone: Europe/Paris
                        job: {queue: reports, input: {big: 12345678901234567890123}, stages: [{task: noop}]}
                      hourly:
                        cron: "@hourly"
                        paused: true
                        job: {stages: [{task: noop}]}
                    lanes:
                      "tenant-*": {width: 3}
                      tenant-vip: {width: 10}
                    rate_limits:
                      partner: {rate: 10, per: 1s, burst: 20}
                      queue:emails: {rate: 100, per: 1m}
                      slow: {rate: 1000, per: 1h}
                    fair_keys:
                      exports: {from: metadata.tenant}
                    """))
            var schedules = try await db.store.schedules()
            #expect(schedules.map(\.name) == ["hourly", "nightly"])
            #expect(schedules.allSatisfy { $0.source == .settings })
            #expect(schedules.last?.job.queue == "reports")
            #expect(schedules.last?.job.chain.input["big"]?.numberValue == JSONNumber("12345678901234567890123"))
            #expect(schedules.first?.paused == true)
            #expect(
                try await db.store.laneSettings().map { "\($0.lane)=\($0.width) \($0.source)" } == [
                    "tenant-*=3 settings", "tenant-vip=10 settings",
                ])
            #expect(
                try await db.store.rateLimits().map { "\($0.key) \($0.rate)/\($0.per) \($0.burst) \($0.source)" } == [
                    "partner 10/1.0 seconds 20 settings", "queue:emails 100/60.0 seconds 100 settings",
                    "slow 1000/3600.0 seconds 1000 settings",
                ])
            #expect(try await db.store.fairShareBacklogs()["exports"]?.keyFrom == "metadata.tenant")
            // Set through the API: the API's, whatever the file says.
            try await db.store.setFairKeySource(try FairKeySource(parsing: "input.customer"), queue: "mail")

            try await start(
                try file(
                    "baton.json",
                    #"{"schedules": {"nightly": {"cron": "0 3 * * *", "job": {"stages": [{"task": "noop"}]}}}, "#
                        + #""lanes": {"tenant-*": {"width": 2}}, "rate_limits": {}, "fair_keys": {}}"#))
            schedules = try await db.store.schedules()
            #expect(schedules.map(\.name) == ["nightly"])
            #expect(schedules.first?.cron.description == "0 3 * * *")
            #expect(try await db.store.laneSettings().map { "\($0.lane)=\($0.width)" } == ["tenant-*=2"])
            #expect(try await db.store.rateLimits().isEmpty, "the file no longer lists them")
            let fair = try await db.store.fairShareBacklogs()
            #expect(fair["exports"]?.keyFrom == nil && fair["mail"]?.keyFrom == "input.customer")

            let bad = try file(
                "bad.yaml", "schedules:\n  broken:\n    cron: \"61 * * * *\"\n    job: {stages: [{task: noop}]}\n")
            let run = try await Self.baton(["worker", "--database-url", db.url, "--config", bad])
            #expect(run.status == 2)
            #expect(run.err.contains("config file bad.yaml: schedules.broken.cron: minute \"61\""), "\(run.err)")
            for (lanes, message) in [
                ("lanes: [3]", "lanes must map lanes"),
                ("lanes:\n  a: {width: 0}", "lanes.a.width: a whole number from 1 to 10000"),
                ("lanes:\n  a: {width: 2, rate: 5}", "lanes.a.rate: unknown lane setting"),
                ("lanes:\n  a: 3", "lanes.a: a lane's settings are an object"),
                ("rate_limits:\n  k: {rate: 0, per: 1s}", "rate_limits.k.rate: a whole number from 1 to 1000000"),
                ("rate_limits:\n  k: {rate: 5, per: 1 fortnight}", "rate_limits.k.per: a period from 1ms to 31d"),
                ("rate_limits:\n  k: {rate: 5, per: 1s, burst: -1}", "rate_limits.k.burst: a whole number"),
                ("fair_keys: [q]", "fair_keys must map queues"),
                ("fair_keys:\n  q: metadata.tenant", "fair_keys.q: a queue's fairness key is an object"),
                ("fair_keys:\n  q: {from: output.x}", "fair_keys.q.from: a fairness key comes from a field"),
                ("fair_keys:\n  q: {from: metadata.t, weight: 2}", "fair_keys.q.weight: unknown; there is from"),
            ] {
                let refused = try await Self.baton(
                    ["worker", "--database-url", db.url, "--config", try file("lanes.yaml", lanes)])
                #expect(refused.status == 2)
                #expect(refused.err.contains("config file lanes.yaml: " + message), "\(refused.err)")
            }
        }
    }

    @Test func aWorkerServesMetricsAndHealthOnItsOwnPort() async throws {
        try await TestDatabase.with { db async throws in
            let port = try LocalPostgres.freePort()
            let worker = try await ChildProcess(
                try ChildProcess.builtBinary("baton"),
                ["worker", "--database-url", db.url, "--metrics-port", "\(port)", "--metrics-host", "127.0.0.1"],
                environment: Self.clean)
            defer { if worker.isRunning { worker.signal(SIGKILL) } }
            let base = "http://127.0.0.1:\(port)"
            try await eventually("the worker's /healthz to answer 200") {
                guard worker.isRunning else { throw TestFailure("the worker exited: \(worker.standardError)") }
                let health = try? await HTTPClient.shared.execute(
                    HTTPClientRequest(url: base + "/healthz"), timeout: .seconds(5))
                return health?.status == .ok
            }
            let metrics = try await HTTPClient.shared.execute(
                HTTPClientRequest(url: base + "/metrics"), timeout: .seconds(5))
            #expect(metrics.status == .ok)
            #expect(metrics.headers.first(name: "content-type")?.hasPrefix("text/plain") == true)
            worker.signal(SIGTERM)
            #expect(try await worker.waitForExit() == 0)
        }
    }
}
