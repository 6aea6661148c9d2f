import Baton
import BatonPostgres
import BatonServerTestSupport
import BatonTestSupport
import LocalPostgres
import NIOHTTP1
import Testing

/// The control plane and a worker through a stop of PostgreSQL, as an operator's restart or a
/// crash makes it.
@Suite struct OutageTests {
    /// While the database is away every route that needs it answers 503 at once: after the pool's
    /// patience (1 s) and a refused probe, well before a lease would time out (10 s), whatever the
    /// load of the machine (bounded at half that); `database-unavailable` with `Retry-After`,
    /// `/readyz` not ready. Soon after its return (within the same bound; PostgresNIO's own pool
    /// goes on failing for up to 13 s after a minute away) requests succeed again and the worker
    /// runs jobs.
    @Test(arguments: [(5, "fast"), (5, "immediate"), (60, "fast"), (60, "immediate")])
    func anOutageIsAnsweredAtOnceAndOverAtOnce(seconds: Int, mode: String) async throws {
        // Default durability: with asynchronous commit (the fast test setting) an immediate
        // shutdown loses the last transactions, which no Baton process could answer for.
        try await withLocalPostgres(LocalPostgres.Options()) { cluster in
            try await withServer(baseURL: cluster.url) { server async throws in
                let job: JSONValue = ["stages": [["task": "noop"]]]
                let before = try await server.enqueue(job, query: "?unchecked=true")
                _ = try await server.job(before) { $0["state"] == "completed" }

                try await cluster.stopServer(mode: mode)
                let over = ContinuousClock.now + .seconds(seconds)
                var asked = 0
                while ContinuousClock.now < over {
                    for (method, target, body) in [
                        (HTTPMethod.GET, "/v1/queues", nil), (.POST, "/v1/jobs?unchecked=true", job),
                        (.GET, "/v1/jobs/\(before)", nil), (.GET, "/readyz", nil),
                    ] as [(HTTPMethod, String, JSONValue?)] {
                        let sent = ContinuousClock.now
                        let reply = try await server.call(method, target, body: body)
                        let took = sent.duration(to: .now)
                        asked += 1
                        #expect(reply.status == 503, "\(method) \(target): \(reply.status) \(reply.text)")
                        #expect(took < DatabasePool.leaseTimeout / 2, "\(method) \(target) answered after \(took)")
                        if target == "/readyz" {
                            #expect(reply["type"] == "urn:baton:problem:not-ready")
                        } else {
                            #expect(reply["type"] == "urn:baton:problem:database-unavailable", "\(reply.text)")
                            #expect(reply.headers.first(name: "Retry-After") == "1")
                        }
                    }
                }
                #expect(asked >= 4)

                try await cluster.startServer()
                let back = ContinuousClock.now
                var status = 0
                while status != 200 {
                    status = try await server.call(.GET, "/v1/queues").status
                    #expect(status == 200 || status == 503)
                }
                #expect(
                    back.duration(to: .now) < DatabasePool.leaseTimeout / 2,
                    "the first success came \(back.duration(to: .now)) after")
                #expect(try await server.call(.GET, "/readyz").status == 200)
                let after = try await server.enqueue(job, query: "?unchecked=true")
                _ = try await server.job(after) { $0["state"] == "completed" }
            }
        }
    }
}
