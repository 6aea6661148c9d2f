import Baton
import BatonServerTestSupport
import BatonTestSupport
import Foundation
import Testing

/// What the overview, `GET /v1/queues` and `GET /v1/workers` flag besides queues nobody serves: a
/// task no live worker of its queue runs, a worker gone silent, a schedule whose run is overdue.
@Suite(.timeLimit(.minutes(2)))
struct OperatorFlagsTests {
    @Test func aMissingTaskASilentWorkerAndALateScheduleAreFlagged() async throws {
        // No worker of the test's own: the workers are rows, one live, one silent; and nothing runs
        // the schedules, so one can be late.
        try await withServer(worker: nil) { server async throws in
            let schema = server.db.configuration.schema
            try await server.db.pool.execute(
                """
                INSERT INTO \(unescaped: schema).workers (id, host, pid, queues, tasks, heartbeat_at, lease)
                VALUES ('live', 'here', 1, '{default}', '{noop}', now(), interval '1 hour'),
                       ('gone', 'there', 2, '{default}', '{noop}', now() - interval '10 minutes', interval '15 seconds')
                """)
            _ = try await server.enqueue(["stages": [["task": "resize"]]], query: "?unchecked=true")
            _ = try await server.enqueue(["stages": [["task": "noop"]]], query: "?unchecked=true")
            let schedule: JSONValue = ["cron": "@daily", "job": ["stages": [["task": "noop"]]]]
            #expect(try await server.call(.PUT, "/v1/schedules/nightly", body: schedule).status == 200)
            try await server.db.pool.execute(
                """
                UPDATE \(unescaped: schema).schedules SET next_run_at = now() - interval '5 minutes'
                WHERE name = 'nightly'
                """)

            let queues = try await server.call(.GET, "/v1/queues")["queues"]?.items ?? []
            let queue = try #require(queues.first { $0["name"] == "default" })
            #expect(queue["unserved_tasks"] == ["resize"], "\(queue)")
            #expect(queue["unserved"] == false)
            let workers = try await server.call(.GET, "/v1/workers")["workers"]?.items ?? []
            #expect(
                workers.map { "\($0["id"]?.stringValue ?? "") \($0["alive"] == true)" } == ["gone false", "live true"])

            try await Browser.with { browser in
                try await DashboardBrowserTests.signIn(browser, server, token: Token.read)
                try await browser.waitForText("h1") { $0 == "Overview" }
                let trouble = try await browser.run(
                    "return [...document.querySelectorAll('.trouble li')].map(li => li.textContent.trim())")
                let lines = trouble.items.compactMap(\.stringValue)
                #expect(lines.count == 3, "\(lines)")
                #expect(lines.contains { $0.hasPrefix("Queue default: its oldest available jobs include task resize") })
                #expect(lines.contains { $0.hasPrefix("Worker there (pid 2) has been silent for") })
                #expect(lines.contains { $0.hasPrefix("Schedule nightly is late") && $0.hasSuffix("Schedules") })
                #expect(try await browser.text(".stats li:first-child") == "1 live workers")
                // The workers page marks the silent one.
                try await browser.open(server.base + "/ui/workers")
                try await browser.waitForText("h1") { $0 == "Workers" }
                #expect(try await browser.count("table.workers .badge.unserved") == 1)
                #expect(try await browser.text("table.workers tbody tr:has(.badge) th") == "there")
            }
        }
    }
}
