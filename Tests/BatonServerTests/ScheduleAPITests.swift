import Baton
import BatonServerTestSupport
import BatonTestSupport
import Foundation
import Testing

/// `/v1/schedules` and `baton schedules`: saved, shown with their next runs, run by hand, paused,
/// refused when malformed, deleted.
@Suite(.timeLimit(.minutes(3)))
struct ScheduleAPITests {
    static let request: JSONValue = [
        "cron": "0 2 * * *", "time_zone": "Europe/Paris", "misfire": "latest",
        "job": [
            "input": ["id": .number(JSONNumber("12345678901234567890123")!)], "stages": [["task": "noop"]],
            "fair_key": "tenant-3", "fair_weight": 0.25,
        ],
    ]

    @Test func aScheduleIsSavedShownRunAndPaused() async throws {
        try await withServer { server async throws in
            let saved = try await server.call(.PUT, "/v1/schedules/nightly", body: Self.request)
            #expect(saved.status == 200, "\(saved.text)")
            #expect(saved["source"] == "api")
            #expect(saved["time_zone"] == "Europe/Paris")
            #expect(saved["upcoming"]?.items.count == 5)
            #expect(saved.text.contains("12345678901234567890123"), "the job as given, numbers exact")
            let first = try #require(saved["upcoming"]?.items.first?.stringValue.flatMap(RFC3339.parse))
            #expect(Calendar.current.dateComponents(in: TimeZone(identifier: "Europe/Paris")!, from: first).hour == 2)
            #expect(
                try await server.call(.GET, "/v1/schedules", token: Token.read)["schedules"]?.items.map {
                    $0["name"]
                } == ["nightly"])

            let run = try await server.call(.POST, "/v1/schedules/nightly/run")
            #expect(run.status == 201, "\(run.text)")
            let id = try #require(run["id"]?.int64)
            let done = try await server.job(id) { $0["state"] == "completed" }
            #expect(done["output"]?["id"]?.numberValue == JSONNumber("12345678901234567890123"))
            #expect(done["fair_key"] == "tenant-3", "the schedule's job keeps its fairness key")
            #expect(done["fair_weight"] == 0.25, "and its weight")
            #expect(try await server.call(.GET, "/v1/schedules/nightly")["last_job_id"]?.int64 == id)

            #expect(try await server.call(.POST, "/v1/schedules/nightly/pause")["paused"] == true)
            let listed = try await server.baton(["schedules"])
            #expect(listed.status == 0, "\(listed.err)")
            #expect(listed.lines.contains { $0.hasPrefix("nightly") && $0.contains("paused") })
            let resumed = try await server.baton(["schedules", "resume", "nightly"])
            #expect(resumed.lines.first?.hasPrefix("resumed schedule nightly; next run ") == true, "\(resumed.out)")
            let shown = try await server.baton(["schedules", "show", "nightly"])
            #expect(shown.lines.contains("next runs:"), "\(shown.out)")
            let now = try await server.baton(["schedules", "run-now", "nightly"])
            #expect(Int64(now.lines.first ?? "").map { $0 > id } == true, "\(now.out)")

            #expect(
                try await server.call(.PUT, "/v1/schedules/nightly", token: Token.read, body: Self.request).status
                    == 403)
            #expect(try await server.call(.DELETE, "/v1/schedules/nightly").status == 204)
            #expect(try await server.call(.GET, "/v1/schedules/nightly").status == 404)
            #expect(try await server.baton(["schedules", "show", "nightly"]).status == 5)
        }
    }

    /// What cannot run is refused naming the field, and nothing is saved.
    @Test func malformedSchedulesAreRefusedNamingTheField() async throws {
        try await withServer { server async throws in
            func with(_ value: JSONValue, _ key: String, _ new: JSONValue) -> JSONValue {
                guard case .object(var object) = value else { return value }
                object[key] = new
                return .object(object)
            }
            var cases: [(JSONValue, Int, String)] = [
                (with(Self.request, "cron", "61 * * * *"), 400, "cron"),
                (with(Self.request, "time_zone", "Mars/Olympus"), 400, "time_zone"),
                (with(Self.request, "misfire", "often"), 400, "misfire"),
                (with(Self.request, "colour", "red"), 400, "colour"),
            ]
            let job = Self.request["job"] ?? [:]
            cases.append((with(Self.request, "job", with(job, "delay", "5m")), 400, "job.delay"))
            cases.append(
                (with(Self.request, "job", with(job, "stages", [["task": "no-such-task"]])), 422, "job.stages[0].task"))
            for (body, status, path) in cases {
                let refused = try await server.call(.PUT, "/v1/schedules/bad", body: body)
                #expect(refused.status == status, "\(path): \(refused.text)")
                #expect(refused["path"]?.stringValue == path, "\(refused.text)")
            }
            #expect(try await server.call(.GET, "/v1/schedules/bad").status == 404)
        }
    }
}
