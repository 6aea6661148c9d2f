import Baton
import BatonPostgres
import BatonTestSupport
import Foundation
import PostgresNIO
import Testing

/// Finding jobs by what they carry: their metadata and their stages' args (`job_tags`).
@Suite(.timeLimit(.minutes(2)))
struct JobSearchTests {
    func job(metadata: JSONValue = [:], _ stages: [StageSpec] = [.task("noop")]) -> NewJob {
        var job = NewJob(chain: ChainDefinition(input: nil, stages: stages))
        job.metadata = metadata
        return job
    }

    func ids(_ filter: JobFilter, in db: TestDatabase) async throws -> [Int64] {
        try await db.store.jobs(filter).jobs.map(\.id)
    }

    /// A metadata or args key matches a string as it is, a number as it was written and a boolean as
    /// `true`; any stage's or group member's args count; several filters must all hold; a value
    /// longer than the index keeps is compared whole; objects are not searched.
    @Test func jobsAreFoundByTheirMetadataAndArgsNewestFirst() async throws {
        try await TestDatabase.with { db async throws in
            let long = String(repeating: "x", count: 300)
            let enqueued = try await db.store.enqueue([
                job(metadata: ["tenant": "42", "region": "eu"], [.task("noop", args: ["customer": 7])]),
                job(metadata: ["tenant": 42, "amount": .number(JSONNumber("1.50")!)]),
                job(metadata: ["tenant": "43", "note": .string(long)]),
                job([.task("noop"), .group([.task("noop", args: ["customer": "7"]), .task("noop")])]),
                job([.task("noop", args: ["customer": 8, "flag": true]), .task("noop", args: ["customer": 7])]),
                job(metadata: ["nested": ["tenant": "42"], "list": ["42"], "none": nil]),
            ]).map(\.id)
            let (a, b, c, d, e, _) = (enqueued[0], enqueued[1], enqueued[2], enqueued[3], enqueued[4], enqueued[5])

            #expect(try await ids(JobFilter(metadata: ["tenant": "42"]), in: db) == [b, a])
            #expect(try await ids(JobFilter(metadata: ["tenant": "42", "region": "eu"]), in: db) == [a])
            #expect(try await ids(JobFilter(metadata: ["amount": "1.50"]), in: db) == [b])
            #expect(try await ids(JobFilter(metadata: ["amount": "1.5"]), in: db) == [], "as written")
            #expect(try await ids(JobFilter(args: ["customer": "7"]), in: db) == [e, d, a])
            #expect(try await ids(JobFilter(args: ["flag": "true"]), in: db) == [e])
            #expect(try await ids(JobFilter(metadata: ["tenant": "42"], args: ["customer": "7"]), in: db) == [a])
            #expect(try await ids(JobFilter(metadata: ["note": long]), in: db) == [c])
            #expect(try await ids(JobFilter(metadata: ["note": String(long.prefix(200)) + "y"]), in: db) == [])
            #expect(try await ids(JobFilter(metadata: ["customer": "7"]), in: db) == [], "args are not metadata")
            #expect(try await ids(JobFilter(metadata: ["nested": #"{"tenant": "42"}"#]), in: db) == [])
            #expect(try await ids(JobFilter(states: [.available], metadata: ["tenant": "42"]), in: db) == [b, a])
            #expect(try await ids(JobFilter(states: [.completed], metadata: ["tenant": "42"]), in: db) == [])
            #expect(try await ids(JobFilter(queue: "elsewhere", args: ["customer": "7"]), in: db) == [])

            // Group members carry their parent's metadata and are not listed themselves.
            let members = try await db.values(
                "SELECT count(*)::int FROM \(unescaped: db.configuration.schema).job_tags WHERE job_id <> ALL (\(enqueued))",
                as: Int.self)
            #expect(members == [0])
        }
    }

    /// Pages of a search follow one another newest first, each job once, and a search that also
    /// filters by what the tags do not hold says where its bounded scan stopped.
    @Test func aSearchPagesThroughItsMatches() async throws {
        try await TestDatabase.with { db async throws in
            var matching: [Int64] = []
            for index in 0..<30 {
                let new = job(metadata: ["tenant": index.isMultiple(of: 3) ? "a" : "b"])
                let id = try await db.store.enqueue([new])[0].id
                if index.isMultiple(of: 3) { matching.append(id) }
            }
            var found: [Int64] = []
            var filter = JobFilter(metadata: ["tenant": "a"], limit: 4)
            while true {
                let page = try await db.store.jobs(filter)
                #expect(page.scannedTo == nil)
                found += page.jobs.map(\.id)
                guard page.jobs.count == 4, let last = page.jobs.last?.id else { break }
                filter.before = last
            }
            #expect(found == matching.reversed())

            // Ten jobs of tenant "a", the scan bounded to three of them at a time, only the
            // cancelled ones wanted: every page examines three, and the matches come out in order.
            let cancelled = [matching[1], matching[4], matching[8]]
            for id in cancelled { _ = try await db.store.cancel(id) }
            var scan = JobFilter(states: [.cancelled], metadata: ["tenant": "a"], limit: 10)
            scan.scanLimit = 3
            var seen: [Int64] = []
            var pages = 0
            while true {
                let page = try await db.store.jobs(scan)
                pages += 1
                seen += page.jobs.map(\.id)
                guard let next = page.scannedTo else { break }
                scan.before = next
            }
            #expect(seen == cancelled.reversed())
            #expect(pages == 4, "ten jobs examined three at a time")
        }
    }

    /// A job's tags are deleted with it, by each way jobs are deleted: one at a time, in bulk and
    /// by retention.
    @Test func aJobsTagsLeaveWithIt() async throws {
        try await TestDatabase.with { db async throws in
            let schema = db.configuration.schema
            let jobs = (0..<6).map { job(metadata: ["tenant": .string("t\($0)")], [.task("noop", args: ["n": 1])]) }
            let enqueued = try await db.store.enqueue(jobs).map(\.id)
            func tags() async throws -> Int {
                try await db.values("SELECT count(*)::int FROM \(unescaped: schema).job_tags", as: Int.self)[0]
            }
            #expect(try await tags() == 12)
            for id in enqueued { _ = try await db.store.cancel(id) }

            #expect(try await db.store.delete(enqueued[0]))
            #expect(try await tags() == 10)
            _ = try await db.store.bulk(.delete, JobFilter(ids: [enqueued[1], enqueued[2]]), dryRun: false)
            #expect(try await tags() == 6)
            try await db.pool.execute(
                "UPDATE \(unescaped: schema).jobs SET finished_at = now() - interval '1 day' WHERE id = ANY (\(enqueued))"
            )
            #expect(try await db.store.prune(.cancelled, retention: .seconds(60), limit: 100) == 3)
            #expect(try await tags() == 0)
            #expect(try await ids(JobFilter(metadata: ["tenant": "t5"]), in: db) == [])
        }
    }
}
