import Baton
import BatonAPI
import BatonServerTestSupport
import BatonTestSupport
import Foundation
import LocalPostgres
import Testing

/// The admin commands as an operator runs them: the built `baton` binary, as a subprocess, against
/// a control plane and a worker on loopback, on real jobs.
@Suite(.timeLimit(.minutes(3)))
struct AdminCLITests {
    typealias Run = TestServer.CLIRun

    /// Runs `baton` with `arguments` against `server`, as `token`.
    static func baton(
        _ arguments: [String], _ server: TestServer, token: String? = Token.admin, input: String? = nil
    ) async throws -> Run {
        try await server.baton(arguments, token: token, input: input)
    }

    /// Runs `baton` under `script`, so that its output goes to a terminal (standard output and
    /// error together).
    static func onTerminal(_ arguments: [String], _ server: TestServer) async throws -> Run {
        let child = try await startOnTerminal(arguments, server)
        let status = try await child.waitForExit(timeout: .seconds(90))
        return Run(status: status, out: child.standardOutput, err: child.standardError)
    }

    /// The CLI started on a pseudo-terminal 80 columns wide, its output readable as it comes.
    static func startOnTerminal(_ arguments: [String], _ server: TestServer) async throws -> ChildProcess {
        let command = ([try ChildProcess.builtBinary("baton").path] + arguments).map { "'\($0)'" }.joined(
            separator: " ")
        return try await ChildProcess(
            URL(fileURLWithPath: "/usr/bin/script"), ["-qec", "stty cols 80 2>/dev/null; " + command, "/dev/null"],
            environment: ["BATON_URL": server.base, "BATON_TOKEN": Token.admin, "NO_COLOR": nil, "TERM": "xterm"])
    }

    static func expectFits(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) {
        for line in text.split(separator: "\n") {
            #expect(line.count <= 80, "wider than 80 columns: \(line)", sourceLocation: sourceLocation)
        }
        #expect(!text.contains("\u{1B}"), "colours off a terminal", sourceLocation: sourceLocation)
    }

    // MARK: enqueue

    @Test func enqueueTakesAFileStandardInputOrOneStageFromOptions() async throws {
        try await withServer { server async throws in
            let file = FileManager.default.temporaryDirectory.appending(path: "baton-job-\(UUID().uuidString).json")
            defer { try? FileManager.default.removeItem(at: file) }
            try Data(#"{"input": 1, "stages": [{"task": "add", "args": {"n": 2}}]}"#.utf8).write(to: file)
            let fromFile = try await Self.baton(["enqueue", file.path], server)
            #expect(fromFile.status == 0, "\(fromFile.err)")
            let id = try #require(Int64(fromFile.out.trimmingCharacters(in: .whitespacesAndNewlines)))
            #expect(try await server.job(id) { $0["state"] == "completed" }["output"] == 3)

            let fromInput = try await Self.baton(
                ["enqueue", "-", "--json"], server,
                input: #"{"idempotency_key": "k-1", "stages": [{"task": "noop"}], "queue": "idle"}"#)
            #expect(fromInput.status == 0, "\(fromInput.err)")
            let job = try fromInput.json(JobView.self)
            #expect(job.queue == "idle" && job.idempotencyKey == "k-1")
            let again = try await Self.baton(
                ["enqueue", "-"], server, input: #"{"idempotency_key": "k-1", "stages": [{"task": "noop"}]}"#)
            #expect(again.out == "\(job.id)\n")
            #expect(again.err.contains("already existed"))

            let quick = try await Self.baton(
                [
                    "enqueue", "--task", "noop", "--args", "{}", "--input", #"{"x": [1, 2]}"#, "--lane", "acct-9",
                    "--queue", "idle",
                ], server)
            #expect(quick.status == 0, "\(quick.err)")
            let quickID = try #require(Int64(quick.out.trimmingCharacters(in: .whitespacesAndNewlines)))
            let stored = try await server.call(.GET, "/v1/jobs/\(quickID)").json
            #expect(stored["queue"] == "idle")
            #expect(stored["input"] == ["x": [1, 2]])
            #expect(stored["stages"]?.items.count == 1)
            #expect(stored["stages"]?.items.first?["lane"] == "acct-9")
            #expect(stored["stages"]?.items.first?["task"] == "noop")

            let batch = try await Self.baton(
                ["enqueue", "-"], server,
                input: #"{"jobs": [{"stages": [{"task": "noop"}]}, {"stages": [{"task": "noop"}]}]}"#)
            #expect(batch.status == 0 && batch.lines.count == 2 && batch.lines.allSatisfy { Int64($0) != nil })
        }
    }

    /// (whose: its idempotency key, metadata and fairness key)
    @Test func theQuickFormTakesWhereWhenAndWhoseAndNamesAnUnknownOption() async throws {
        try await withServer { server async throws in
            let scheduled = try await Self.baton(
                [
                    "enqueue", "--task", "noop", "--priority", "-3", "--delay", "1h", "--idempotency-key", "quick-1",
                    "--metadata", #"{"account": 12345678901234567890123}"#, "--fair-key", "tenant-7", "--fair-weight",
                    "2", "--json",
                ], server)
            #expect(scheduled.status == 0, "\(scheduled.err)")
            let job = try scheduled.json(JobView.self)
            #expect(job.priority == -3 && job.state == .scheduled && job.idempotencyKey == "quick-1")
            #expect(job.fairKey == "tenant-7" && job.fairWeight == 2)
            let shown = try await Self.baton(["jobs", "show", "\(job.id)"], server)
            #expect(shown.lines.contains("fair key: tenant-7 (weight 2)"), "\(shown.out)")
            let heavy = try await Self.baton(["enqueue", "--task", "noop", "--fair-weight", "5000"], server)
            #expect(heavy.status != 0 && heavy.err.contains("fair_weight"), "\(heavy.err)")
            #expect(job.runAt.timeIntervalSinceNow > 3500)
            #expect(job.metadata["account"]?.numberValue == JSONNumber("12345678901234567890123"))
            let dated = try await Self.baton(
                ["enqueue", "--task", "noop", "--run-at", "2030-01-31T09:30:00Z", "--json"], server)
            #expect(try dated.json(JobView.self).runAt == RFC3339.parse("2030-01-31T09:30:00Z"))
            let bogus = try await Self.baton(["enqueue", "--task", "noop", "--bogus", "3"], server)
            #expect(bogus.status == 2)
            #expect(bogus.err.contains("--bogus"), "\(bogus.err)")
            let both = try await Self.baton(
                ["enqueue", "--task", "noop", "--delay", "1s", "--run-at", "2030-01-01T00:00:00Z"], server)
            #expect(both.status == 2 && both.err.contains("not both"))
            let stray = try await Self.baton(["enqueue", "-", "--priority", "1"], server, input: "{}")
            #expect(stray.status == 2 && stray.err.contains("--priority goes with --task"))
            let unique = [
                "enqueue", "--task", "noop", "--queue", "idle", "--unique-key", "sync-7", "--unique-window", "1h",
            ]
            let first = try await Self.baton(unique, server)
            let again = try await Self.baton(unique, server)
            #expect(first.status == 0 && again.status == 0 && again.out == first.out, "\(first.out) \(again.out)")
            #expect(again.err.contains("already existed"), "\(again.err)")
            let windowAlone = try await Self.baton(["enqueue", "--task", "noop", "--unique-window", "1h"], server)
            #expect(windowAlone.status == 2 && windowAlone.err.contains("--unique-window goes with --unique-key"))
        }
    }

    @Test func anAddressWithAPathOrARefusedTokenSaysWhatToDo() async throws {
        try await withServer { server async throws in
            let withPath = try await Self.baton(["--url", server.base + "/v1", "jobs", "show", "1"], server)
            #expect(withPath.status == 2)
            #expect(withPath.err.contains("without a path: \(server.base)"), "\(withPath.err)")
            let refused = try await Self.baton(["jobs", "list"], server, token: "not-a-token-at-all")
            #expect(refused.status == 4)
            #expect(refused.err.contains("refused the token") && refused.err.contains("BATON_TOKEN"), "\(refused.err)")
            let none = try await Self.baton(["jobs", "list"], server, token: nil)
            #expect(none.status == 4 && none.err.contains("no token"), "\(none.err)")
        }
    }

    /// A job waiting for a signal says so, and `baton jobs signal` delivers it: once, then as a
    /// duplicate; a signal no stage awaits is refused (exit 1), a payload that is not JSON too (2).
    @Test func aSignalIsDeliveredFromTheShell() async throws {
        try await withServer { server async throws in
            let id = try await server.enqueue([
                "input": 1, "stages": [["await": "approved", "name": "approval"], ["task": "echo"]],
            ])
            _ = try await server.job(id) { $0["state"] == "waiting" }
            let shown = try await Self.baton(["jobs", "show", "\(id)"], server)
            #expect(shown.out.contains("approval (await signal approved)"), "\(shown.out)")
            #expect(shown.out.contains("not running: awaits signal \"approved\" until"), "\(shown.out)")

            let notJSON = try await Self.baton(["jobs", "signal", "\(id)", "approved", "{yes}"], server)
            #expect(notJSON.status == 2 && notJSON.err.contains("not JSON"), "\(notJSON.err)")
            let unknown = try await Self.baton(["jobs", "signal", "\(id)", "approve", "true"], server)
            #expect(unknown.status == 1 && unknown.err.contains("awaits a signal \"approve\""), "\(unknown.err)")

            let delivered = try await Self.baton(
                ["jobs", "signal", "\(id)", "approved", "-"], server,
                input: #"{"by": "ops", "limit": 9007199254740993}"#)
            #expect(delivered.status == 0, "\(delivered.err)")
            #expect(delivered.out.contains("received signal approved and goes on"), "\(delivered.out)")
            let done = try await server.job(id) { $0["state"] == "completed" }
            #expect(done["output"]?["input"]?["limit"] == .number(JSONNumber("9007199254740993")!))
            let again = try await Self.baton(["jobs", "signal", "\(id)", "approved", "--json"], server)
            #expect(again.status == 0)
            #expect(try again.json(JSONValue.self)["outcome"] == "duplicate")
        }
    }

    /// `baton dev` leaves its address and token in `.baton/dev.json`; the token goes to that
    /// address only, never to a server named by `--url` or `BATON_URL` (a `baton dev` killed outright
    /// leaves its file behind).
    @Test func aDevSessionsTokenGoesOnlyToItsOwnAddress() async throws {
        try await withServer { server async throws in
            let directory = FileManager.default.temporaryDirectory.appending(path: "baton-dev-\(UUID().uuidString)")
            try FileManager.default.createDirectory(
                at: directory.appending(path: ".baton"), withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            func listJobs(sessionAt url: String) async throws -> Run {
                try Data(#"{"url":"\#(url)","token":"\#(Token.admin)"}"#.utf8).write(
                    to: directory.appending(path: ".baton/dev.json"))
                let child = try await ChildProcess(
                    try ChildProcess.builtBinary("baton"), ["jobs", "list"],
                    environment: ["BATON_URL": server.base, "BATON_TOKEN": nil, "BATON_API_TOKEN": nil],
                    directory: directory)
                let status = try await child.waitForExit(timeout: .seconds(90))
                return Run(status: status, out: child.standardOutput, err: child.standardError)
            }
            let own = try await listJobs(sessionAt: server.base)
            #expect(own.status == 0, "\(own.err)")
            let elsewhere = try await listJobs(sessionAt: "http://127.0.0.1:1")
            #expect(elsewhere.status == 4 && elsewhere.err.contains("no token"), "\(elsewhere.err)")
        }
    }

    @Test func enqueueRefusesBadInputWithAUsageErrorAndTheServersRefusalWithItsReason() async throws {
        try await withServer { server async throws in
            let before = try await server.call(.GET, "/v1/jobs?limit=1000")["jobs"]?.items.count
            let notJSON = try await Self.baton(["enqueue", "-"], server, input: "{stages: oops")
            #expect(notJSON.status == 2)
            #expect(notJSON.err.contains("standard input is not JSON"))
            let missing = try await Self.baton(["enqueue", "/nonexistent/job.json"], server)
            #expect(missing.status == 2)
            #expect(missing.err.contains("cannot read /nonexistent/job.json"))
            #expect(try await Self.baton(["enqueue"], server).status == 2)
            #expect(try await Self.baton(["enqueue", "--task", "noop", "--args", "[1]"], server).status == 2)
            #expect(try await Self.baton(["enqueue", "-", "--task", "noop"], server).status == 2)

            let invalid = try await Self.baton(
                ["enqueue", "-"], server, input: #"{"stages": [{"task": "noop", "timeout": 5}]}"#)
            #expect(invalid.status == 1)
            #expect(invalid.err.contains("stages[0].timeout"))
            let unknown = try await Self.baton(["enqueue", "--task", "no-such-task"], server)
            #expect(unknown.status == 1)
            #expect(unknown.err.contains("no-such-task") && unknown.err.contains("--unchecked"))
            #expect(try await server.call(.GET, "/v1/jobs?limit=1000")["jobs"]?.items.count == before)
        }
    }

    // MARK: jobs

    @Test func jobsListShowsAnAlignedTableOrTheAPIsJSON() async throws {
        try await withServer { server async throws in
            let key = "list-\(UUID())"
            let failed = try await server.enqueue([
                "input": 1, "stages": [["task": "fail-first", "args": ["key": .string(key)]]],
            ])
            _ = try await server.job(failed) { $0["state"] == "discarded" }
            var ids = [failed]
            for n in 0..<4 {
                ids.append(
                    try await server.enqueue(
                        ["queue": "idle", "stages": [["task": "noop", "lane": .string("customer-\(n)")]]],
                        query: "?unchecked=true"))
            }
            let list = try await Self.baton(["jobs", "list"], server)
            #expect(list.status == 0, "\(list.err)")
            Self.expectFits(list.out)
            #expect(
                list.lines.first?.split(separator: " ").map(String.init) == [
                    "ID", "QUEUE", "STATE", "STAGE", "LANE", "ATT", "AGE", "LAST", "ERROR",
                ])
            #expect(list.lines.dropFirst().map { Int64($0.split(separator: " ")[0]) } == ids.reversed())
            let discarded = try #require(list.lines.first { $0.split(separator: " ").first == "\(failed)" })
            #expect(discarded.contains("discarded") && discarded.contains("first run of"))
            // Columns line up: each state starts where the header's STATE does.
            let column = list.lines[0].range(of: "STATE")!.lowerBound.utf16Offset(in: list.lines[0])
            for line in list.lines.dropFirst() {
                #expect(line.dropFirst(column).hasPrefix("available") || line.dropFirst(column).hasPrefix("discarded"))
            }

            // Options go after the command, or before it as global options.
            let filtered = try await Self.baton(["--json", "jobs", "list", "--state", "discarded"], server)
            #expect(try filtered.json(JobPage.self).jobs.map(\.id) == [failed])
            let lane = try await Self.baton(["jobs", "list", "--lane", "customer-2", "--json"], server)
            #expect(try lane.json(JobPage.self).jobs.map(\.id) == [ids[3]])
            let found = try await Self.baton(["jobs", "list", "--args", "key=\(key)", "--json"], server)
            #expect(try found.json(JobPage.self).jobs.map(\.id) == [failed])
            let none = try await Self.baton(
                ["jobs", "list", "--metadata", "tenant=42", "--args", "key=\(key)"], server)
            #expect(none.status == 0 && none.err.contains("no jobs match"), "\(none.err)")
            let unwritten = try await Self.baton(["jobs", "list", "--metadata", "tenant"], server)
            #expect(unwritten.status != 0 && unwritten.err.contains("key=value"), "\(unwritten.err)")

            let page = try await Self.baton(["jobs", "list", "--limit", "2"], server)
            #expect(page.lines.count == 3)
            #expect(page.err.contains("--all"))
            let all = try await Self.baton(["jobs", "list", "--limit", "2", "--all", "--json"], server)
            let everything = try all.json(JobPage.self)
            #expect(everything.jobs.map(\.id) == ids.reversed() && everything.nextCursor == nil)
        }
    }

    @Test func jobsLogsPrintsEachAttemptsLog() async throws {
        try await withServer { server async throws in
            let id = try await server.enqueue(serverTestChattyJob)
            _ = try await server.job(id) { $0["state"] == "completed" }
            let logs = try await Self.baton(["jobs", "logs", "\(id)"], server)
            #expect(logs.status == 0, "\(logs.err)")
            #expect(logs.lines.count == 4, "\(logs.out)")
            #expect(logs.lines[0].contains("stage 1 (chatty), attempt 1, failed: first attempt fails after logging"))
            #expect(logs.lines[1].contains("line 1 of attempt 1"))
            #expect(logs.lines[2].contains("attempt 2, completed") && logs.lines[3].contains("line 1 of attempt 2"))
            let none = try await Self.baton(
                ["jobs", "logs", "\(try await server.enqueue(["stages": [["task": "noop"]]]))"], server)
            #expect(none.status == 0 && none.err.contains("no attempt logged anything"))
        }
    }

    @Test func jobsShowDrawsTheChainWithEveryErrorInFull() async throws {
        try await withServer { server async throws in
            let chain = try await server.enqueue([
                "input": 1,
                "stages": [
                    ["task": "add", "name": "first", "args": ["n": 1]],
                    ["group": [["task": "add", "args": ["n": 10]], ["task": "add", "args": ["n": 20]]]],
                    ["task": "sum"],
                ],
            ])
            _ = try await server.job(chain) { $0["state"] == "completed" }
            let shown = try await Self.baton(["jobs", "show", "\(chain)"], server)
            #expect(shown.status == 0, "\(shown.err)")
            Self.expectFits(shown.out)
            #expect(shown.lines[0].hasPrefix("job \(chain)  completed  queue default"))
            #expect(shown.lines.contains { $0.hasPrefix("├─ 1/3 first (add)  completed  1 attempt") })
            #expect(shown.lines.contains { $0.hasSuffix("args {\"n\":1}") })
            #expect(shown.lines.contains { $0.hasPrefix("├─ 2/3 group [2 members]  completed") })
            #expect(shown.lines.contains { $0.contains("member 2 add  job") && $0.contains("→ 22") }, "\(shown.out)")
            #expect(shown.lines.contains { $0.hasPrefix("└─ 3/3 sum  completed") })
            #expect(shown.lines.last == "output: 34")
            #expect(
                try await Self.baton(["jobs", "show", "\(chain)", "--json"], server).json(JobView.self).output == 34)

            // A map of more runs than are listed: counted by state, the first 100 shown.
            let mapped = try await server.enqueue([
                "input": .array((0..<120).map { .number(JSONNumber($0)) }),
                "stages": [["map": "{{output}}", "stages": [["task": "add", "args": ["n": 1]]], "concurrency": 60]],
            ])
            _ = try await server.job(mapped) { $0["state"] == "completed" }
            let map = try await Self.baton(["jobs", "show", "\(mapped)"], server)
            #expect(
                map.lines.contains {
                    $0.hasPrefix("└─ 1/1 map over {{output}} (at most 60 at once) [120 members: 120 completed]")
                },
                "\(map.out)")
            #expect(map.lines.contains { $0.contains("member 100 add  job") })
            #expect(map.lines.contains { $0.hasSuffix("   (the first 100 of 120 shown)") }, "\(map.out)")

            // The path a repeat and a goto took: runs folded, the stage passed over skipped.
            let looped = try await server.enqueue(serverTestLoopedChain)
            _ = try await server.job(looped) { $0["state"] == "completed" }
            let path = try await Self.baton(["jobs", "show", "\(looped)"], server)
            #expect(path.lines.contains("path: count ×3 → last"), "\(path.out)")
            #expect(
                path.lines.contains {
                    $0.hasPrefix("├─ 1/3 count (add)  completed  3 runs  1 attempt") && $0.hasSuffix("queue default")
                })
            #expect(path.lines.contains { $0.hasPrefix("├─ 2/3 skipped (add)  skipped") })
            #expect(path.lines.last == "output: 10")

            // An error longer than a line is wrapped, not cut.
            let reason = (0..<30).map { "word\($0)" }.joined(separator: " ")
            let failed = try await server.enqueue([
                "input": 1, "stages": [["task": "fail-first", "args": ["key": .string(reason)]]],
            ])
            _ = try await server.job(failed) { $0["state"] == "discarded" }
            let failure = try await Self.baton(["jobs", "show", "\(failed)"], server)
            Self.expectFits(failure.out)
            #expect(failure.out.contains("✗ attempt 1"))
            let text = failure.out.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
                .joined(separator: " ")
            #expect(text.contains("first run of \(reason) fails"))
        }
    }

    @Test func cancelRetryAndDeleteSteerJobsAndReportEachFailure() async throws {
        try await withServer { server async throws in
            let idle = try await server.enqueue(["queue": "idle", "stages": [["task": "noop"]]])
            let cancel = try await Self.baton(["jobs", "cancel", "\(idle)"], server)
            #expect(cancel.status == 0 && cancel.out == "cancelled job \(idle)\n")
            #expect(try await server.call(.GET, "/v1/jobs/\(idle)")["state"] == "cancelled")
            let retry = try await Self.baton(["jobs", "retry", "\(idle)", "--json"], server)
            #expect(retry.status == 0)
            #expect(try retry.json(JobView.self).state == .available)

            // Several ids: each handled, each failure told, the first failure's status returned.
            let missing = Int64(999_999)
            let mixed = try await Self.baton(["jobs", "cancel", "\(missing)", "\(idle)"], server)
            #expect(mixed.status == 5)
            #expect(mixed.out == "cancelled job \(idle)\n")
            #expect(mixed.err.contains("job \(missing): no job has id \(missing)"))
            let again = try await Self.baton(["jobs", "cancel", "\(idle)"], server)
            #expect(again.status == 1)
            #expect(again.err.contains("only a job that has not finished can be cancelled"))

            let delete = try await Self.baton(["jobs", "delete", "\(idle)", "--json"], server)
            #expect(delete.status == 0)
            #expect(
                try JSONValue(parsing: delete.out.trimmingCharacters(in: .newlines)) == [
                    "id": .number(idle), "deleted": true,
                ])
            #expect(try await Self.baton(["jobs", "show", "\(idle)"], server).status == 5)

            // A scheduled job run now, another skipped with a reason.
            let later = try await server.enqueue(["delay": "1h", "stages": [["task": "noop"]]])
            let now = try await Self.baton(["jobs", "retry", "\(later)"], server)
            #expect(now.status == 0, "\(now.err)")
            _ = try await server.job(later) { $0["state"] == "completed" }
            let unwanted = try await server.enqueue(["delay": "1h", "stages": [["task": "noop"]]])
            let skip = try await Self.baton(["jobs", "skip", "\(unwanted)", "--reason", "not wanted"], server)
            #expect(skip.status == 0 && skip.out == "skipped job \(unwanted) at stage 1/1\n", "\(skip.err)")
            let skipped = try await server.call(.GET, "/v1/jobs/\(unwanted)")
            #expect(skipped["stages"]?.items.first?["errors"]?.items.last?["error"] == "skipped: not wanted")
        }
    }

    @Test func waitEndsInCompletionOrDiscardAndPrintsTheOutput() async throws {
        try await withServer { server async throws in
            let slow = try await server.enqueue([
                "input": 5, "stages": [["task": "sleep", "args": ["ms": 300]], ["task": "add", "args": ["n": 1]]],
            ])
            let completed = try await Self.baton(["jobs", "wait", "\(slow)"], server)
            #expect(completed.status == 0, "\(completed.err)")
            #expect(completed.out == "6\n")

            let doomed = try await server.enqueue([
                "input": 1,
                "stages": [
                    ["task": "sleep", "args": ["ms": 200]],
                    ["task": "fail-first", "args": ["key": .string("wait-\(UUID())")]],
                ],
            ])
            let discarded = try await Self.baton(["jobs", "wait", "\(doomed)"], server)
            #expect(discarded.status == 1)
            #expect(discarded.out.isEmpty)
            #expect(discarded.err.contains("job \(doomed) was discarded at stage 2/2 (fail-first): first run of wait-"))
            let json = try await Self.baton(["jobs", "wait", "\(doomed)", "--json"], server)
            #expect(json.status == 1)
            #expect(try json.json(JobView.self).state == .discarded)

            let idle = try await server.enqueue(["queue": "idle", "stages": [["task": "noop"]]])
            let timedOut = try await Self.baton(["jobs", "wait", "\(idle)", "--timeout", "300ms"], server)
            #expect(timedOut.status == 124, "not 1: the job did not fail, it goes on")
            #expect(timedOut.err.contains("has not finished after 300ms"))
            #expect(try await Self.baton(["jobs", "wait", "999999"], server).status == 5)
        }
    }

    // MARK: queues, lanes, workers

    @Test func queuesArePausedAndResumed() async throws {
        try await withServer { server async throws in
            try await server.enqueue(["queue": "idle", "stages": [["task": "noop"]]])
            let pause = try await Self.baton(["queues", "pause", "idle"], server)
            #expect(pause.status == 0 && pause.out == "paused queue idle\n")
            let queues = try await Self.baton(["queues"], server)
            Self.expectFits(queues.out)
            #expect(queues.lines.first?.hasPrefix("QUEUE  STATUS  WORKERS  AVAIL") == true, "\(queues.out)")
            let row = try #require(queues.lines.first { $0.hasPrefix("idle ") })
            #expect(row.split(separator: " ").prefix(4) == ["idle", "paused", "0", "1"])
            let json = try await Self.baton(["queues", "list", "--json"], server)
            #expect(try json.json(QueueList.self).queues.first { $0.name == "idle" }?.paused == true)
            let resume = try await Self.baton(["queues", "resume", "idle", "--json"], server)
            #expect(try resume.json(QueuePauseState.self) == QueuePauseState(name: "idle", paused: false))
            // Resumed, its job still waits: no live worker serves the queue.
            let unserved = try await Self.baton(["queues"], server)
            let flagged = try #require(unserved.lines.first { $0.hasPrefix("idle ") })
            #expect(flagged.split(separator: " ").prefix(4) == ["idle", "unserved", "0", "1"])
            #expect(
                try unserved.lines.first { $0.hasPrefix("default ") }.map { $0.split(separator: " ")[1] } != "unserved")
            #expect(try await Self.baton(["queues", "pause", "bad\tname"], server).status == 1)

            // A fair queue's keys with stages waiting, below the table; the API's view in --json.
            for key in ["t-1", "t-1", "t-2"] {
                try await server.enqueue(["queue": "tenants", "fair_key": .string(key), "stages": [["task": "noop"]]])
            }
            let fair = try await Self.baton(["queues"], server)
            #expect(fair.lines.contains("queue tenants: 2 fairness keys have stages waiting; most: t-1 2, t-2 1"))
            let derive = try await Self.baton(["queues", "fair-key", "tenants", "metadata.tenant"], server)
            #expect(derive.status == 0, "\(derive.err)")
            #expect(derive.out == "queue tenants takes the fairness keys of jobs naming none from metadata.tenant\n")
            #expect(
                try await Self.baton(["queues"], server).lines.contains(
                    "queue tenants: jobs naming no fairness key take the one at metadata.tenant"))
            let wrong = try await Self.baton(["queues", "fair-key", "tenants", "output.tenant"], server)
            #expect(wrong.status != 0 && wrong.err.contains("from"), "\(wrong.err)")
            let both = try await Self.baton(["queues", "fair-key", "tenants", "metadata.tenant", "--none"], server)
            #expect(both.status == 2)
            let none = try await Self.baton(["queues", "fair-key", "tenants", "--none"], server)
            #expect(none.out == "queue tenants: jobs name their own fairness keys\n", "\(none.err)")
            let fairJSON = try await Self.baton(["queues", "list", "--json"], server)
            let tenants = try #require(try fairJSON.json(QueueList.self).queues.first { $0.name == "tenants" })
            #expect(tenants.fairShare?.keys == 2 && tenants.fairShare?.top.first?.key == "t-1")

            // Each key's share of the stages claimed in the last minutes, once the worker has
            // written its history (every 5 s).
            for key in ["x", "x", "y"] {
                let id = try await server.enqueue(["fair_key": .string(key), "stages": [["task": "noop"]]])
                _ = try await server.job(id) { $0["state"] == "completed" }
            }
            let shares = try await eventually("the claims of x and y in the history") { () async throws -> String? in
                let out = try await Self.baton(["queues"], server).out
                return out.contains("x 67 %, y 33 %") ? out : nil
            }
            #expect(shares.contains("started in the last 5 min: 3; shares: x 67 %, y 33 %"), "\(shares)")
            let recent = try #require(
                try await Self.baton(["queues", "list", "--json"], server).json(QueueList.self).queues.first {
                    $0.name == "default"
                }?.fairShare)
            #expect(recent.recentMinutes == 5 && recent.recentStarts == 3)
            #expect(
                recent.recentTop.map { "\($0.key) \($0.starts) \($0.share)" } == ["x 2 \(2.0 / 3)", "y 1 \(1.0 / 3)"])
        }
    }

    /// `baton audit` shows who changed what, newest first, filtered; its JSON is the API's; a token
    /// that may not read the trail exits 4.
    @Test func auditShowsWhoChangedWhat() async throws {
        try await withServer { server async throws in
            try await server.enqueue(["queue": "idle", "stages": [["task": "noop"]]])
            #expect(try await Self.baton(["queues", "pause", "idle"], server).status == 0)
            #expect(try await Self.baton(["queues", "resume", "idle"], server).status == 0)
            let audit = try await Self.baton(["audit"], server)
            #expect(audit.status == 0, "\(audit.err)")
            Self.expectFits(audit.out)
            #expect(audit.lines.first?.hasPrefix("AT ") == true, "\(audit.out)")
            let rows = audit.lines.dropFirst().map { $0.split(separator: " ", omittingEmptySubsequences: true) }
            #expect(
                rows.map { Array($0.dropFirst(2).prefix(3)) } == [
                    ["admin-1", "resumeQueue", "queue:idle"], ["admin-1", "pauseQueue", "queue:idle"],
                ], "\(audit.out)")
            // The time column is each event's time in UTC to the second, the API's time cut.
            let all = try JSONValue(parsing: try await Self.baton(["audit", "--json"], server).out)
            let times: [String] = (all["events"]?.items ?? []).compactMap { event in
                guard let at = event["at"]?.stringValue else { return nil }
                return "\(at.prefix(10)) \(at.dropFirst(11).prefix(8))Z"
            }
            let shown: [String] = rows.map { $0.prefix(2).joined(separator: " ") }
            #expect(shown == times, "\(audit.out)")
            let json = try await Self.baton(["audit", "--action", "pauseQueue", "--json"], server)
            let page = try JSONValue(parsing: json.out)
            #expect(page["events"]?.items.map { $0["action"] } == ["pauseQueue"])
            #expect(page["events"]?.items.first?["details"] == ["paused": true])
            #expect(try await Self.baton(["audit"], server, token: Token.read).status == 4)
        }
    }

    @Test func lanesShowTheirHolderAndWhichAreBlocked() async throws {
        try await withServer { server async throws in
            // A holder whose request keeps being refused fails and retries: its lane is blocked.
            let stuck = try await server.enqueue([
                "stages": [
                    [
                        "task": "http", "lane": "acct-stuck", "backoff": ["kind": "constant", "initial": "1h"],
                        "args": ["method": "GET", "url": .string("http://127.0.0.1:\(try LocalPostgres.freePort())/")],
                    ]
                ]
            ])
            try await server.enqueue(["stages": [["task": "noop", "lane": "acct-stuck"]]])
            try await server.enqueue(["queue": "idle", "stages": [["task": "noop", "lane": "acct-idle"]]])
            try await eventually("the lane's holder to fail and wait to retry") {
                try await server.call(.GET, "/v1/jobs/\(stuck)")["state"] == "retryable"
            }

            let lanes = try await Self.baton(["lanes"], server)
            #expect(lanes.status == 0, "\(lanes.err)")
            Self.expectFits(lanes.out)
            #expect(lanes.lines.map { $0.split(separator: " ").first } == ["LANE", "acct-idle", "acct-stuck"])
            let row = try #require(lanes.lines.first { $0.hasPrefix("acct-stuck") })
            #expect(row.contains("\(stuck)") && row.contains("retryable") && row.contains("http"))
            #expect(row.contains(" 1/1 "), "held of width")
            let blocked = try await Self.baton(["lanes", "--blocked", "--json"], server)
            let page = try blocked.json(LanePage.self)
            #expect(page.lanes.map(\.lane) == ["acct-stuck"])
            #expect(page.lanes.first?.waiting == 1)
        }
    }

    /// `baton lanes set` widens a lane at once (its waiting job is admitted), `lanes settings`
    /// lists the widths, `lanes unset` deletes one; a bad width is the API's 400, exit 1.
    @Test func laneWidthsAreSetListedAndUnset() async throws {
        try await withServer(worker: nil) { server async throws in
            for _ in 0..<2 {
                try await server.enqueue(
                    ["queue": "idle", "stages": [["task": "noop", "lane": "acct-1"]]], query: "?unchecked=true")
            }
            let set = try await Self.baton(["lanes", "set", "acct-*", "--width", "2"], server)
            #expect(set.status == 0, "\(set.err)")
            #expect(set.out == "lane acct-*: width 2\n")
            let lanes = try await Self.baton(["lanes", "--json"], server)
            #expect(try lanes.json(LanePage.self).lanes.map { "\($0.held)/\($0.width)" } == ["2/2"])
            let settings = try await Self.baton(["lanes", "settings"], server, token: Token.read)
            #expect(settings.status == 0, "\(settings.err)")
            #expect(
                settings.lines.count == 2 && settings.lines[1].hasPrefix("acct-*") && settings.lines[1].contains(" 2 "))
            let bad = try await Self.baton(["lanes", "set", "acct-1", "--width", "0"], server)
            #expect(bad.status == 1)
            #expect(bad.err.contains("1 to 10000"), "\(bad.err)")
            #expect(try await Self.baton(["lanes", "unset", "acct-*"], server).status == 0)
            let none = try await Self.baton(["lanes", "settings"], server)
            #expect(none.err.contains("no lane settings"))
        }
    }

    /// `baton rate-limits set` limits a key, `rate-limits` lists it with its tokens, `unset`
    /// deletes it; a bad period is the API's 400 naming `per`.
    @Test func rateLimitsAreSetListedAndUnset() async throws {
        try await withServer(worker: nil) { server async throws in
            let set = try await Self.baton(
                ["rate-limits", "set", "partner", "--rate", "10", "--per", "1s", "--burst", "20"], server)
            #expect(set.status == 0, "\(set.err)")
            #expect(set.out == "rate limit partner: 10 per 1s, burst 20\n")
            let list = try await Self.baton(["rate-limits"], server, token: Token.read)
            #expect(list.status == 0, "\(list.err)")
            Self.expectFits(list.out)
            #expect(list.lines.count == 2 && list.lines[1].hasPrefix("partner") && list.lines[1].contains("10/1s"))
            let bad = try await Self.baton(["rate-limits", "set", "k", "--rate", "1", "--per", "soon"], server)
            #expect(bad.status == 1)
            #expect(bad.err.contains("per"), "\(bad.err)")
            #expect(try await Self.baton(["rate-limits", "unset", "partner"], server).status == 0)
            #expect(try await Self.baton(["rate-limits"], server).err.contains("no rate limits"))
        }
    }

    @Test func workersShowTheirQueuesAndHeartbeat() async throws {
        try await withServer { server async throws in
            let workers = try await Self.baton(["workers"], server, token: Token.read)
            #expect(workers.status == 0, "\(workers.err)")
            Self.expectFits(workers.out)
            #expect(workers.lines.count == 2)
            #expect(workers.lines[1].contains("default") && workers.lines[1].contains("s ago"))
            #expect(workers.lines[0].contains("STATUS") && workers.lines[1].contains(" live "), "\(workers.out)")
            #expect(workers.lines[0].contains("TASKS") && workers.lines[1].contains("add"), "\(workers.out)")
            let json = try await Self.baton(["workers", "--json"], server)
            let list = try json.json(WorkerList.self)
            #expect(list.workers.map(\.pid) == [Int(ProcessInfo.processInfo.processIdentifier)])
        }
    }

    // MARK: terminals, exit statuses, completions

    @Test func colourAndLiveProgressOnlyOnATerminal() async throws {
        try await withServer { server async throws in
            // The first stage is held running until the CLI has drawn it so.
            let held = "running-\(UUID())"
            let id = try await server.enqueue([
                "stages": [["task": "report", "args": ["gate": .string(held)]], ["task": "noop"]]
            ])
            let waiting = try await Self.startOnTerminal(["jobs", "wait", "\(id)"], server)
            try await eventually("the running stage to be drawn") {
                waiting.standardOutput.contains("1/2 report  \u{1B}[36mrunning")
            }
            await TestGates.shared.open(held)
            let wait = Run(
                status: try await waiting.waitForExit(timeout: .seconds(90)), out: waiting.standardOutput,
                err: waiting.standardError)
            #expect(wait.status == 0, "\(wait.out)")
            #expect(wait.out.contains("\u{1B}[3F\u{1B}[J"), "the progress is redrawn in place")
            #expect(wait.out.contains("2/2 noop  \u{1B}[32mcompleted"))
            // A stage's progress as a bar under it, while it runs (held running until the bar shows).
            let gate = "bar-\(UUID())"
            let reporting = try await server.enqueue([
                "stages": [["task": "report", "args": ["fraction": 0.5, "message": "half", "gate": .string(gate)]]]
            ])
            let drawing = try await Self.startOnTerminal(["jobs", "wait", "\(reporting)"], server)
            try await eventually("the progress bar to be drawn") {
                drawing.standardOutput.contains("    [█████░░░░░] 50% half")
            }
            await TestGates.shared.open(gate)
            #expect(try await drawing.waitForExit(timeout: .seconds(90)) == 0, "\(drawing.standardOutput)")
            let list = try await Self.onTerminal(["jobs", "list"], server)
            #expect(list.out.contains("\u{1B}[32mcompleted"))
            let plain = try await Self.onTerminal(["jobs", "list", "--no-color"], server)
            #expect(plain.status == 0 && !plain.out.contains("\u{1B}") && plain.out.contains("completed"))
        }
    }

    @Test func exitStatusesTellWhatWentWrong() async throws {
        try await withServer { server async throws in
            let unreachable = try await Self.baton(["--url", "http://127.0.0.1:1", "jobs", "list"], server)
            #expect(unreachable.status == 3)
            #expect(unreachable.err.contains("is `baton serve` running at http://127.0.0.1:1? set --url or BATON_URL"))
            #expect(unreachable.err.contains(": connection refused: nothing listens at"), "\(unreachable.err)")
            let unknown = try await Self.baton(["--url", "http://nowhere.invalid:8080", "jobs", "list"], server)
            #expect(unknown.status == 3)
            #expect(unknown.err.contains(": the host name nowhere.invalid does not resolve"), "\(unknown.err)")
            let refused = try await Self.baton(["jobs", "list"], server, token: "not-a-token-at-all")
            #expect(refused.status == 4)
            #expect(refused.err.contains("BATON_TOKEN"))
            #expect(try await Self.baton(["jobs", "list"], server, token: nil).status == 4)
            let readOnly = try await Self.baton(["jobs", "cancel", "1"], server, token: Token.read)
            #expect(readOnly.status == 4)
            #expect(readOnly.err.contains("admin token"))
            #expect(try await Self.baton(["jobs", "show", "424242"], server).status == 5)
            for usage in [
                ["jobs", "show", "abc"], ["jobs", "list", "--bogus"], ["jobs", "list", "--state", "done"],
                ["jobs", "list", "--url", "ftp://example.com"], ["jobs", "cancel"],
            ] {
                let run = try await Self.baton(usage, server)
                #expect(run.status == 2, "\(usage): \(run.err)")
                #expect(!run.err.isEmpty)
            }
        }
    }

    /// What a script or a pager gets: lines as wide as `COLUMNS` (or uncut with `--wide`), a
    /// failure as a problem document on standard output with `--json`, and completions of states
    /// and queue names.
    @Test func pipesAndScriptsGetTheirWidthsProblemsAndCompletions() async throws {
        try await withServer { server async throws in
            let queue = "a-queue-nobody-serves-" + String(repeating: "x", count: 100)
            _ = try await server.enqueue(["queue": .string(queue), "stages": [["task": "noop"]]])
            let list = ["jobs", "list", "--queue", queue]
            Self.expectFits(try await Self.baton(list, server).out)
            let columns = try await server.baton(list, environment: ["COLUMNS": "120"]).out.split(separator: "\n")
            #expect(columns.allSatisfy { $0.count <= 120 } && columns.contains { $0.count > 80 }, "\(columns)")
            let wide = try await Self.baton(list + ["--wide"], server)
            #expect(wide.out.contains(queue), "\(wide.out)")

            let missing = try await Self.baton(["--json", "jobs", "show", "999999"], server)
            #expect(missing.status == 5)
            let problem = try JSONValue(parsing: missing.out)
            #expect(problem["type"] == "urn:baton:problem:not-found")
            #expect(problem["status"] == 404 && problem["exit_status"] == 5)
            let unreachable = try await Self.baton(["--json", "--url", "http://127.0.0.1:1", "jobs", "list"], server)
            #expect(unreachable.status == 3)
            #expect(try JSONValue(parsing: unreachable.out)["type"] == "urn:baton:problem:unreachable")
            let steered = try await Self.baton(["jobs", "cancel", "999999", "--json"], server)
            #expect(steered.status == 5)
            let line = try JSONValue(parsing: steered.out)
            #expect(line["id"] == 999_999 && line["type"] == "urn:baton:problem:not-found", "\(line)")

            // What the shells' completion scripts ask (ArgumentParser's `---completion` call).
            let states = try await Self.baton(
                [
                    "---completion", "jobs", "list", "--", "--state", "4", "11", "baton", "jobs", "list", "--state",
                    "running,ret",
                ], server)
            #expect(states.out == "running,retryable\n", "\(states.err)")
            let queues = try await Self.baton(
                [
                    "---completion", "queues", "pause", "--", "positional@0", "3", "8", "baton", "queues", "pause",
                    "a-queue-",
                ], server)
            #expect(queues.out == queue + "\n", "\(queues.err)")
        }
    }

    @Test func versionAndShellCompletions() async throws {
        try await withServer(worker: nil) { server async throws in
            #expect(try await Self.baton(["--version"], server).out == BatonVersion.current + "\n")
            for shell in ["bash", "zsh", "fish"] {
                let script = try await Self.baton(["--generate-completion-script", shell], server)
                #expect(script.status == 0)
                #expect(
                    script.out.contains("jobs") && script.out.contains("queues") && script.out.contains("blocked"))
            }
        }
    }
}
