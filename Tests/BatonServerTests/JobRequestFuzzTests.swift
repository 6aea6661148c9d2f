import Baton
import BatonAPI
import BatonHTTPTask
import BatonTestSupport
import Foundation
import PropertyBased
import Testing

@testable import BatonServer

/// The control plane's reading of `POST /v1/jobs` bodies (the generated types, then the checks no
/// schema states) fed thousands of mutated jobs: each is a job that validates, or a refusal naming
/// where; nothing else, no crash.
@Suite(.timeLimit(.minutes(1)))
struct JobRequestFuzzTests {
    static let corpus: [String] = [
        #"{"queue": "q", "priority": -3, "delay": "1.5s", "idempotency_key": "k", "metadata": {"m": [1]}, "input": {"id": 1}, "stages": [{"task": "noop", "name": "a", "lane": "l-1", "max_attempts": 3, "backoff": {"kind": "linear", "initial": "10ms", "max": "1s", "jitter": 0.5}, "timeout": "30s"}, {"group": [{"task": "noop"}, {"task": "sleep", "args": {"ms": 5}}]}]}"#,
        #"{"run_at": "2030-01-01T00:00:00.5Z", "stages": [{"task": "http", "args": {"method": "PUT", "url": "{{input.u}}", "headers": {"X": "{{secrets.T}}"}, "body": "b", "expect": {"5xx": "fail"}}}]}"#,
    ]

    @Test func mutatedJobsAreReadOrRefusedWithAPath() async {
        await propertyCheck(
            count: 4000, input: Gen.int(in: 0...(Self.corpus.count - 1)), Gen.int(in: 0...(1 << 40)).array(of: 1...8)
        ) { index, edits in
            let bytes = Mutations.apply(edits, to: Array(Self.corpus[index].utf8))
            guard let body = try? JSONValue(parsing: bytes) else { return }
            let request: Components.Schemas.JobRequest
            do {
                request = try RequestBody.decode(Components.Schemas.JobRequest.self, from: body)
            } catch {
                return
            }
            do {
                let reader = JobReader()
                let job = try reader.validated(reader.job(request), checkingArgs: HTTPRequestArgs.check).job
                #expect(try JSONValue(encoding: job.chain.stages).decode(as: [StageSpec].self) == job.chain.stages)
            } catch let problem as Problem {
                #expect(problem.status.code == 400)
                #expect(problem.path != nil)
            } catch {
                Issue.record("\(String(decoding: bytes, as: UTF8.self)) → \(error)")
            }
        }
    }
}
