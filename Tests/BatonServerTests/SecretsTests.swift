import Baton
import BatonPostgres
import BatonServerTestSupport
import BatonTestSupport
import Foundation
import Testing

/// What a caller sends stays out of the logs: tokens, `Authorization` and `Cookie` headers and
/// bodies never reach a log line, at any level, whatever goes wrong with the request.
@Suite struct SecretsTests {
    /// Each class of error a request can meet, provoked in turn with a token, a cookie and a body
    /// marked so that they can be found: a body cut short by the client, the database refusing a
    /// statement (a function gone), a handler failing on what it read (a stored chain it cannot
    /// decode), the database away. Every line the pool, the server and the client logged, down
    /// to trace, and `/metrics`, are then searched for the marks.
    @Test func noErrorPathLogsATokenACookieOrABody() async throws {
        let logs = LogCapture()
        let marker = "body-marker-\(UUID().uuidString)"
        let cookie = "cookie-marker-\(UUID().uuidString)"
        let job: JSONValue = [
            "input": ["note": .string(marker)], "metadata": ["note": .string(marker)],
            "stages": [["task": "noop", "args": ["note": .string(marker)]]],
        ]
        let headers = [("Cookie", "baton_session=\(cookie)")]
        try await withServer(worker: nil, logger: logs.logger("baton")) { server async throws in
            let schema = server.db.configuration.schema
            let database = try #require(server.db.configuration.database)

            // A body cut short: 100 bytes announced, 40 sent, then the connection closed.
            let raw = try await RawConnection(base: server.base)
            try await raw.send(
                "POST /v1/jobs?unchecked=true HTTP/1.1\r\nHost: baton\r\nAuthorization: Bearer \(Token.admin)\r\n"
                    + "Cookie: baton_session=\(cookie)\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
                    + "{\"metadata\": {\"note\": \"\(marker)\"")
            await raw.close()
            try await eventually("the server to notice the client left") {
                logs.text.contains("the client left before its request was complete")
            }

            // The database refuses: the function an enqueue calls is gone.
            try await server.db.pool.execute("ALTER FUNCTION \(unescaped: schema).enqueue(jsonb) RENAME TO gone")
            let refused = try await server.call(.POST, "/v1/jobs?unchecked=true", body: job, headers: headers)
            #expect(refused.status == 500, "\(refused.text)")
            try await server.db.pool.execute("ALTER FUNCTION \(unescaped: schema).gone(jsonb) RENAME TO enqueue")

            // A handler fails on what it read: a stored attempt that is not one.
            let id = try await server.enqueue(job, query: "?unchecked=true")
            try await server.db.pool.execute(
                "UPDATE \(unescaped: schema).jobs SET errors = '[{\"stage\": \"not a number\"}]' WHERE id = \(id)")
            let unreadable = try await server.call(.GET, "/v1/jobs/\(id)", headers: headers)
            #expect(unreadable.status == 500, "\(unreadable.text)")

            // The database away: its connections refused and its sessions ended.
            try await server.db.administer { connection in
                try await connection.execute(
                    "ALTER DATABASE \(unescaped: database) ALLOW_CONNECTIONS false", logger: server.db.logger)
                try await connection.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = \(database)",
                    logger: server.db.logger)
            }
            let away = try await server.call(.POST, "/v1/jobs?unchecked=true", body: job, headers: headers)
            #expect(away.status == 503, "\(away.text)")
            try await server.db.administer { connection in
                try await connection.execute(
                    "ALTER DATABASE \(unescaped: database) ALLOW_CONNECTIONS true", logger: server.db.logger)
            }
            try await eventually("the database to take requests again") {
                try await server.call(.GET, "/v1/queues").status == 200
            }

            let metrics = try await server.call(.GET, "/metrics", headers: headers)
            for secret in [Token.admin, marker, cookie] {
                #expect(!metrics.text.contains(secret))
                #expect(!refused.text.contains(secret) && !unreadable.text.contains(secret))
            }
        }
        let text = logs.text
        #expect(text.contains("request failed"), "the 500s were logged")
        for secret in [Token.admin, marker, cookie] {
            let leaks = text.split(separator: "\n").filter { $0.contains(secret) }
            #expect(leaks.isEmpty, "logged: \(leaks.prefix(3).joined(separator: "\n"))")
        }
    }

    /// A client that gives up mid-body is not a server failure: no 500 in the request log and no
    /// line at `error`.
    @Test func aClientThatLeavesMidBodyIsNotAServerError() async throws {
        let logs = LogCapture()
        try await withServer(worker: nil, logger: logs.logger("baton")) { server async throws in
            let raw = try await RawConnection(base: server.base)
            try await raw.send(
                "POST /v1/jobs HTTP/1.1\r\nHost: baton\r\nAuthorization: Bearer \(Token.admin)\r\n"
                    + "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"stages\": ")
            await raw.close()
            try await eventually("the request to be logged") { logs.text.contains("\"method\": POST") }
        }
        let lines = logs.text.split(separator: "\n")
        #expect(!lines.contains { $0.hasPrefix("error") }, "\(lines.filter { $0.hasPrefix("error") })")
        #expect(!lines.contains { $0.contains("\"status\": 500") })
        #expect(lines.contains { $0.contains("\"status\": 400") })
    }
}
