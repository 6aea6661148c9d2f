import Baton
import BatonServerTestSupport
import Foundation
import Testing

/// `?wait=` long polls as a caller sees them.
@Suite struct LongPollTests {
    /// A wait longer than the server's `--max-wait` is cut to it: the answer comes then, with the
    /// job as it is, for an enqueue and for a read alike.
    @Test func aWaitIsCutToTheServersMaximum() async throws {
        try await withServer(configure: { $0.maxWait = .seconds(1) }) { server async throws in
            let clock = ContinuousClock()
            let job: JSONValue = ["stages": [["task": "sleep", "args": ["ms": 30_000]]]]
            var enqueued = Reply(status: 0, headers: [:], text: "", json: nil)
            let enqueueTook = try await clock.measure {
                enqueued = try await server.call(.POST, "/v1/jobs?wait=20s", body: job)
            }
            #expect(enqueued.status == 201)
            #expect(enqueued["state"] != "completed")
            #expect(enqueueTook >= .seconds(1) && enqueueTook < .seconds(10), "answered after \(enqueueTook)")
            let id = try #require(enqueued["id"]?.int64)

            var read = Reply(status: 0, headers: [:], text: "", json: nil)
            let readTook = try await clock.measure { read = try await server.call(.GET, "/v1/jobs/\(id)?wait=20s") }
            #expect(read.status == 200)
            #expect(read["state"] == "running" || read["state"] == "available")
            #expect(readTook >= .seconds(1) && readTook < .seconds(10), "answered after \(readTook)")
            try await server.call(.POST, "/v1/jobs/\(id)/cancel")
        }
    }
}
