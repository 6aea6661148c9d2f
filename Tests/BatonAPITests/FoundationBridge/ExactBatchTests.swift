import Baton
import Foundation
import Testing

@testable import BatonAPI

/// A batch's jobs are made without `Codable` when they have the common shape, and its answer is
/// written by Baton (`ExactBatchRequest.swift`, `ExactBatchResponse.swift`): both must give what
/// the generated `Codable` code gives.
struct ExactBatchTests {
    /// Values of every JSON kind for a field, valid or not.
    static let values: [String] = [
        #""text""#, #""""#, "7", "-32768", "32768", "1.5", "1e2", "2147483648", "null", "true", "{}",
        #"{"a": [1, 0.1]}"#, "[]", #""2026-01-31T09:30:00.123Z""#, #""2026-01-31T09:30:00+05:30""#,
        #""2026-13-01T00:00:00Z""#, #""1s""#,
    ]
    static let jobFields = ["queue", "priority", "run_at", "delay", "idempotency_key", "metadata", "input", "unique"]
    static let stageFields = ["name", "args", "lane", "max_attempts", "timeout", "backoff", "group", "await"]

    /// Jobs whose fields each take every value in turn, beside the common shapes.
    static func jobs() -> [String] {
        var jobs = [
            #"{"stages": [{"task": "noop"}]}"#,
            #"{"input": {"n": 12345678901234567890123, "x": 1e-400}, "stages": [{"task": "a", "args": {"d": 0.1}}, {"task": "b", "lane": "l", "name": "second", "max_attempts": 3, "timeout": "30s"}]}"#,
            #"{"queue": "billing", "priority": -3, "run_at": "2026-01-31T09:30:00Z", "idempotency_key": "k", "metadata": {"t": 1}, "stages": [{"task": "noop"}]}"#,
            #"{"stages": [{"group": [{"task": "a"}, {"task": "b"}]}]}"#,
            #"{"stages": [{"await": "paid", "timeout": "2h"}]}"#,
            #"{"stages": []}"#, #"{"stages": null}"#, #"{"input": 1}"#, "[]", #"{"stages": [{"task": null}]}"#,
            #"{"stages": [{"task": "a", "colour": "red"}]}"#, #"{"colour": 1, "stages": [{"task": "a"}]}"#,
        ]
        for field in jobFields {
            for value in values { jobs.append(#"{"\#(field)": \#(value), "stages": [{"task": "noop"}]}"#) }
        }
        for field in stageFields {
            for value in values { jobs.append(#"{"stages": [{"task": "noop", "\#(field)": \#(value)}]}"#) }
        }
        for value in values { jobs.append(#"{"stages": [{"task": \#(value)}]}"#) }
        return jobs
    }

    @Test func aJobReadQuicklyIsTheJobCodableReads() throws {
        var quick = 0
        for text in Self.jobs() {
            let batch = try JSONValue(parsing: #"{"jobs": [\#(text)]}"#)
            let decoded = try? batch.decode(as: ExactBatchRequest.self)
            guard let read = ExactBatchRequest(quickly: batch) else { continue }
            quick += 1
            #expect(read == decoded, "\(text)")
        }
        #expect(quick >= 60, "the common shapes are read quickly (\(quick))")
    }

    /// `POST /v1/jobs`: the server hands Foundation `null` for the body
    /// (`ExactJSONServerMiddleware.readByBaton`); the job is what Baton's decoder makes of the body,
    /// or the same refusal.
    @Test func aSingleJobIsMadeFromBatonsReadingAlone() throws {
        for text in Self.jobs() {
            let document = try JSONValue(parsing: text)
            let expected = try? document.decode(as: Components.Schemas.JobRequest.self)
            let read = try? ForeignJSON.$current.withValue(ForeignJSON(document: document)) {
                try JSONDecoder().decode(ExactJobRequest.self, from: Data("null".utf8))
            }
            #expect(read?.job == expected, "\(text)")
        }
    }

    @Test func theCommonShapesAreReadQuickly() throws {
        for text in Self.jobs().prefix(3) {
            #expect(ExactBatchRequest(quickly: try JSONValue(parsing: #"{"jobs": [\#(text), \#(text)]}"#)) != nil)
        }
        #expect(ExactBatchRequest(quickly: try JSONValue(parsing: #"{"jobs": [], "more": 1}"#)) == nil)
    }

    @Test func theAnswerIsWhatFoundationWrites() throws {
        let until = Date(timeIntervalSince1970: 1_785_000_000.125)
        let jobs: [Components.Schemas.EnqueuedJob] = [
            .init(id: 1, queue: "default", state: .available, inserted: true),
            .init(
                id: Int64.max, queue: "q \"quoted\" \\ \n é", state: .scheduled, inserted: false,
                waitingFor: [
                    .init(reason: .scheduled, message: "due at…", until: until),
                    .init(reason: .lane, message: "behind", until: until, job: 42),
                    .init(reason: .noWorker, message: ""),
                ]),
            .init(id: 3, queue: "x", state: .waiting, inserted: true, waitingFor: []),
        ]
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(RFC3339.format(date))
        }
        let foundation = try JSONValue(parsing: Array(try encoder.encode(jobs)))
        var bytes: [UInt8] = []
        ExactBatchResponse.write(jobs, into: &bytes)
        #expect(try JSONValue(parsing: bytes) == foundation)

        // Under the server's bridge, through Foundation, the answer is the same.
        let bridge = ForeignJSON()
        let body = try ForeignJSON.$current.withValue(bridge) {
            try JSONEncoder().encode(ExactBatchResponse(jobs: jobs))
        }
        #expect(try JSONValue(parsing: bridge.restoringNumbers(in: Array(body))) == ["jobs": foundation])

        // The writer knows every field: a field the document gains fails here until it is written.
        #expect(
            Mirror(reflecting: jobs[0]).children.map(\.label) == ["id", "queue", "state", "inserted", "waitingFor"])
        #expect(
            Mirror(reflecting: jobs[1].waitingFor![0]).children.map(\.label) == ["reason", "message", "until", "job"])
    }
}
