import Baton
import BatonServerTestSupport
import BatonTestSupport
import Foundation
import Testing

@testable import BatonWorker

/// Await stages over HTTP: a chain that waits for the outside world, the signal delivered with an
/// admin token or the stage's one-time token, and every refusal as a problem.
@Suite(.timeLimit(.minutes(3)))
struct SignalAPITests {
    static let chain: JSONValue = [
        "input": 1,
        "stages": [
            ["task": "echo", "name": "start"],
            ["await": "payment-confirmed", "timeout": "2h", "name": "payment"],
            ["task": "echo"],
        ],
    ]

    @Test func aJobWaitsForItsSignalAndGoesOnWithThePayloadExactly() async throws {
        try await withServer { server async throws in
            let id = try await server.enqueue(Self.chain)
            let waiting = try await server.job(id) { $0["state"] == "waiting" }
            let stage = waiting["stages"]?.items[1]
            #expect(stage?["await"] == "payment-confirmed")
            #expect(stage?["state"] == "waiting")
            #expect(waiting["waiting_for"]?.items.first?["reason"] == "signal")
            #expect(waiting["waiting_for"]?.items.first?["until"] != nil)

            let path = "/v1/jobs/\(id)/signals/payment-confirmed"
            let payload = #"{"amount": 12345678901234567890.01, "provider_id": "pay_7"}"#
            #expect(try await server.call(.POST, path, token: nil, raw: payload).status == 401)
            #expect(try await server.call(.POST, path, token: Token.read, raw: payload).status == 403)
            let forged = try await server.call(
                .POST, path + "?token=" + String(repeating: "A", count: 43), token: nil, raw: payload)
            #expect(forged.status == 401)
            #expect(forged.headers.first(name: "Content-Type") == "application/problem+json")

            // The stage's one-time token, as a callback URL carries it: no API token needed.
            let token = try await server.client.signalToken(job: id, signal: "payment-confirmed")
            let delivered = try await server.call(.POST, path + "?token=" + token, token: nil, raw: payload)
            #expect(delivered.status == 200, "\(delivered.text)")
            #expect(delivered["outcome"] == "resumed")
            #expect(delivered["job"]?.int64 == id)
            // The token opens that signal of that job only.
            let otherJob = try await server.enqueue(Self.chain)
            let elsewhere = try await server.call(
                .POST, "/v1/jobs/\(otherJob)/signals/payment-confirmed?token=" + token, token: nil, raw: payload)
            #expect(elsewhere.status == 401)

            let done = try await server.job(id) { $0["state"] == "completed" }
            #expect(done["stages"]?.items[1]["output"] == (try JSONValue(parsing: payload)))
            let raw = try await server.call(.GET, "/v1/jobs/\(id)").text
            #expect(raw.contains("12345678901234567890.01"), "the payload's number as it was sent")

            let again = try await server.call(.POST, path, raw: #"{"amount": 1}"#)
            #expect(again.status == 200)
            #expect(again["outcome"] == "duplicate")
        }
    }

    @Test func refusalsAreProblems() async throws {
        try await withServer { server async throws in
            let id = try await server.enqueue(Self.chain)
            let unknown = try await server.call(.POST, "/v1/jobs/\(id)/signals/payment-failed", body: 1)
            #expect(unknown.status == 409)
            #expect(unknown["detail"]?.stringValue?.contains("awaits a signal \"payment-failed\"") == true)
            #expect(try await server.call(.POST, "/v1/jobs/424242/signals/payment-confirmed", body: 1).status == 404)
            #expect(try await server.call(.POST, "/v1/jobs/\(id)/signals/bad~name", body: 1).status == 400)
            let huge = "\"" + String(repeating: "x", count: 1 << 20) + "\""
            let tooLarge = try await server.call(.POST, "/v1/jobs/\(id)/signals/payment-confirmed", raw: huge)
            #expect(tooLarge.status == 413)
            #expect(tooLarge.headers.first(name: "Content-Type") == "application/problem+json")

            for (stages, path) in [
                ([["await": "x", "lane": "l"]], "stages[0]"),
                ([["group": [["await": "x"]]]], "stages[0].group[0].await"),
                ([["await": "x"], ["await": "x"]], "stages[1].await"),
                ([["await": "a b"]], "stages[0].await"),
                ([["await": "x", "timeout": "0s"]], "stages[0].timeout"),
            ] as [(JSONValue, String)] {
                let refused = try await server.call(.POST, "/v1/jobs", body: ["stages": stages])
                #expect(refused.status == 400, "\(stages): \(refused.text)")
                #expect(refused["path"]?.stringValue?.hasPrefix(path) == true, "\(stages): \(refused.text)")
            }
            // Cancelled while it waits: a signal then comes too late.
            _ = try await server.job(id) { $0["state"] == "waiting" }
            #expect(try await server.call(.POST, "/v1/jobs/\(id)/cancel").status == 200)
            let late = try await server.call(.POST, "/v1/jobs/\(id)/signals/payment-confirmed", body: 1)
            #expect(late.status == 409)
            #expect(late["detail"]?.stringValue?.contains("cancelled") == true)
        }
    }

    /// The README's chain: an `http` stage hands a third party a callback URL carrying the
    /// signal's token; the third party (here Baton itself, called back at once, before the stage
    /// has even finished) delivers the signal; the await stage finds it and the chain goes on.
    @Test func anHTTPStageHandsOnACallbackURLWithTheSignalsToken() async throws {
        var tasks = serverTestTasks
        tasks.register(HTTPTask(configuration: HTTPTaskConfiguration()))
        try await withServer(worker: tasks) { server async throws in
            let id = try await server.enqueue([
                "input": ["order": 42],
                "stages": [
                    [
                        "task": "http",
                        "args": [
                            "method": "POST",
                            "url": .string(
                                server.base + "/v1/jobs/{{job.id}}/signals/paid?token={{signals.paid.token}}"),
                            "json": ["order": "{{input.order}}", "status": "paid"],
                        ],
                    ],
                    ["await": "paid", "timeout": "1m"],
                    ["task": "echo"],
                ],
            ])
            let done = try await server.job(id) { $0["state"] == "completed" || $0["state"] == "discarded" }
            #expect(done["state"] == "completed", "\(done)")
            #expect(done["stages"]?.items[0]["output"]?["body"]?["outcome"] == "kept")
            #expect(done["stages"]?.items[1]["output"] == ["order": 42, "status": "paid"])
        }
    }
}
