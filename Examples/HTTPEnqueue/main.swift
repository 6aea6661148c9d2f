// A Swift service that enqueues over HTTP, without a connection to PostgreSQL.
// Run `swift run baton dev` first and pass the address and token it prints:
//   swift run BatonHTTPEnqueue http://127.0.0.1:8080 TOKEN
import BatonAPI
import BatonHTTPClient
import Foundation

@main
struct HTTPEnqueue {
    static func main() async throws {
        let arguments = CommandLine.arguments.dropFirst()
        let baton = try BatonHTTPClient(
            url: URL(string: arguments.first ?? "http://127.0.0.1:8080")!, token: arguments.dropFirst().first)
        // A job as the API's JSON describes it: here the built-in `sleep`, then `noop`.
        let request = BatonHTTPClient.JobRequest(
            input: ["order": 9_007_199_254_740_993],
            stages: [
                .TaskStageRequest(.init(task: "sleep", args: ["ms": 100])),
                .TaskStageRequest(.init(task: "noop")),
            ])
        do {
            let enqueued = try await baton.enqueue(request, idempotencyKey: "order-9007199254740993")
            let job = try await baton.waitUntilFinished(enqueued.job.id)
            print(job.state, job.output.jsonText)  // completed {"order":9007199254740993}
        } catch BatonHTTPError.refused(let problem) where problem.kind == .unknownTask {
            print("no worker serves", problem.tasks)
        }
    }
}
