import Baton
import BatonServerTestSupport
import BatonTestSupport
import Foundation
import Testing

/// What a running stage reports is seen on every surface: `GET /v1/jobs/{id}`, `baton jobs show`
/// and the dashboard's job page.
@Suite(.timeLimit(.minutes(3)))
struct ProgressTests {
    @Test func aRunningStagesProgressAndCheckpointAreShownEverywhere() async throws {
        try await withServer { server async throws in
            let cursor = JSONValue.number(JSONNumber("12345678901234567890.000001")!)
            let id = try await server.enqueue([
                "stages": [
                    [
                        "task": "report",
                        "args": [
                            "fraction": 0.4, "message": "page 4 of 10", "checkpoint": ["page": 4, "cursor": cursor],
                            "hold_ms": 60_000,
                        ],
                    ]
                ]
            ])
            let job = try await server.job(id) { $0["stages"]?.items.first?["progress"]?["fraction"] == 0.4 }
            let progress = job["stages"]?.items.first?["progress"]
            #expect(progress?["message"] == "page 4 of 10")
            #expect(progress?["checkpoint"] == ["page": 4, "cursor": cursor])
            #expect(progress?["attempt"] == 1)
            #expect(job["state"] == "running")

            let shown = try await server.baton(["jobs", "show", "\(id)"])
            #expect(shown.status == 0, "\(shown.err)")
            #expect(shown.out.contains("[████░░░░░░] 40% page 4 of 10 (checkpoint saved)"), "\(shown.out)")

            var visitor = DashboardTests.Visitor(base: server.base)
            try await visitor.signIn(Token.read)
            let page = try await visitor.get("/ui/jobs/\(id)").html
            #expect(page.contains(#"<progress max="1" value="0.4" aria-label="Progress of stage 1">40%</progress>"#))
            #expect(page.contains("page 4 of 10"))
            #expect(page.contains("12345678901234567890.000001"), "the checkpoint, exact")

            #expect(try await server.call(.POST, "/v1/jobs/\(id)/cancel").status == 200)
        }
    }
}
