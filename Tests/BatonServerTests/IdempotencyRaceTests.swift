import Baton
import BatonServerTestSupport
import Testing

/// Enqueues with one idempotency key racing each other over HTTP.
@Suite struct IdempotencyRaceTests {
    /// Twenty requests at once with the same key, from two `enqueue` tokens, single and batch
    /// alike: one job exists; the token that made it is answered with that job every time (one 201,
    /// the rest 200 with `inserted: false`); the other token is refused with 409 every time and
    /// never learns the job. A refused batch writes nothing: its other, keyless job is not stored.
    @Test(arguments: [false, true])
    func oneKeyRacedFromTwoTokensMakesOneJob(batch: Bool) async throws {
        try await withServer(worker: nil) { server async throws in
            let key = "race-\(batch)"
            let job: JSONValue = ["stages": [["task": "noop"]], "queue": "idle", "idempotency_key": .string(key)]
            let body: JSONValue = batch ? ["jobs": [job, ["stages": [["task": "noop"]], "queue": "idle"]]] : job
            let target = batch ? "/v1/jobs/batch?unchecked=true" : "/v1/jobs?unchecked=true"
            let replies = try await withThrowingTaskGroup(of: (String, Reply).self) { group in
                for index in 0..<20 {
                    let token = index % 2 == 0 ? Token.enqueue : Token.otherEnqueue
                    group.addTask { (token, try await server.call(.POST, target, token: token, body: body)) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            func entry(_ reply: Reply) -> JSONValue? { batch ? reply["jobs"]?.items.first : reply.json }
            // The keyed job was made by this request (a batch also makes its keyless job each time).
            func made(_ reply: Reply) -> Bool { batch ? entry(reply)?["inserted"] == true : reply.status == 201 }
            let created = replies.filter { made($0.1) }
            #expect(created.count == 1, "\(replies.map(\.1.status))")
            let owner = try #require(created.first?.0)
            let id = try #require(created.first.flatMap { entry($0.1)?["id"] })
            for (token, reply) in replies where !made(reply) {
                if token == owner {
                    #expect(reply.status == (batch ? 201 : 200), "\(reply.text)")
                    #expect(entry(reply)?["id"] == id)
                    if batch { #expect(entry(reply)?["inserted"] == false) }
                } else {
                    #expect(reply.status == 409, "\(reply.text)")
                    #expect(reply["type"] == "urn:baton:problem:idempotency-key-taken")
                    #expect(reply["id"] == nil && reply["jobs"] == nil, "\(reply.text)")
                }
            }
            let jobs = try await server.db.values(
                "SELECT count(*)::int FROM \(unescaped: server.db.configuration.schema).jobs", as: Int.self)
            // The keyed job, and in a batch one keyless job per request of its owner (ten).
            #expect(jobs == [batch ? 11 : 1])
        }
    }
}
