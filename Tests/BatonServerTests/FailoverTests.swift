import Baton
import BatonPostgres
import BatonServerTestSupport
import BatonTestSupport
import Foundation
import LocalPostgres
import NIOHTTP1
import Testing

/// The control plane and a worker through what a production PostgreSQL does: a standby
/// promoted when its primary dies, a server that only reads, a host of the list that is down.
/// They are given every host, as libpq is, and are never restarted.
@Suite(.serialized) struct FailoverTests {
    /// Both servers of a primary and its standby, in that order.
    static func url(_ primary: LocalPostgres, _ standby: LocalPostgres) -> String {
        "postgres://postgres@127.0.0.1:\(primary.port),127.0.0.1:\(standby.port)/postgres?sslmode=disable"
    }

    /// A synchronous standby promoted after its primary crashed: nothing acknowledged is lost, the
    /// API answers `201` again and the worker runs jobs within 5 s of the promotion, and until
    /// then every request is a `503` (never a `500`), `/readyz` not ready.
    @Test func aPromotedStandbyIsFoundWithoutARestartAndLosesNothing() async throws {
        try await withLocalPostgres(LocalPostgres.Options(settings: ["synchronous_standby_names": "standby"])) {
            primary in
            try await withStandby(of: primary, name: "standby") { standby in
                try await withServer(baseURL: Self.url(primary, standby)) { server async throws in
                    let job: JSONValue = ["stages": [["task": "noop"]]]
                    var acknowledged: [Int64] = []
                    for _ in 0..<20 { acknowledged.append(try await server.enqueue(job)) }
                    _ = try await server.job(acknowledged.last!) { $0["state"] == "completed" }

                    try await primary.stopServer(mode: "immediate")
                    let during = try await server.call(.POST, "/v1/jobs", body: job)
                    #expect(during.status == 503, "\(during.text)")
                    #expect(try await server.call(.GET, "/readyz").status == 503)

                    try await standby.promote()
                    let promoted = ContinuousClock.now
                    var id: Int64?
                    try await eventually(timeout: .seconds(10), "an enqueue to succeed on the new primary") {
                        let reply = try await server.call(.POST, "/v1/jobs", body: job)
                        #expect([201, 503].contains(reply.status), "\(reply.text)")
                        id = reply["id"]?.int64
                        return reply.status == 201
                    }
                    _ = try await server.job(try #require(id)) { $0["state"] == "completed" }
                    let took = promoted.duration(to: .now)
                    #expect(took < .seconds(5), "serving and running again \(took) after the promotion")
                    #expect(try await server.call(.GET, "/readyz").status == 200)
                    for acknowledged in acknowledged {
                        #expect(try await server.call(.GET, "/v1/jobs/\(acknowledged)").status == 200)
                    }
                }
            }
        }
    }

    /// Enqueues from 32 clients at once through the failover: every request is answered (`201`, or
    /// `503` while no server takes writes), none is left hanging, and all succeed again after the
    /// promotion.
    @Test func everyRequestInFlightThroughAFailoverIsAnswered() async throws {
        try await withLocalPostgres(LocalPostgres.Options(settings: ["synchronous_standby_names": "standby"])) {
            primary in
            try await withStandby(of: primary, name: "standby") { standby in
                try await withServer(worker: nil, baseURL: Self.url(primary, standby)) { server async throws in
                    let job: JSONValue = ["stages": [["task": "noop"]]]
                    let stop = ContinuousClock.now + .seconds(12)
                    let statuses = try await withThrowingTaskGroup(of: [Int].self) { group in
                        for client in 0..<32 {
                            group.addTask {
                                var statuses: [Int] = []
                                var number = 0
                                while ContinuousClock.now < stop {
                                    number += 1
                                    let reply = try await server.call(
                                        .POST, "/v1/jobs?unchecked=true", body: job,
                                        headers: [("Idempotency-Key", "c\(client)-\(number)")])
                                    statuses.append(reply.status)
                                }
                                return statuses
                            }
                        }
                        try await Task.sleep(for: .seconds(3))
                        try await primary.stopServer(mode: "immediate")
                        try await Task.sleep(for: .seconds(1))
                        try await standby.promote()
                        return try await group.reduce(into: [[Int]]()) { $0.append($1) }
                    }
                    #expect(Set(statuses.joined()).isSubset(of: [201, 503]), "\(Set(statuses.joined()))")
                    // Each client's last request, seconds after the promotion, was written.
                    #expect(statuses.map(\.last) == Array(repeating: 201, count: 32), "\(statuses.map(\.last))")
                }
            }
        }
    }

    /// An asynchronous standby that missed the last writes (its WAL receiver stopped, as a lagging
    /// standby's would be behind) is promoted after its primary crashed: the jobs it never saw are
    /// lost, as asynchronous replication allows, but none of their ids is given to a new job.
    @Test func idsLostInAFailoverAreNotGivenOutAgain() async throws {
        try await withLocalPostgres { primary in
            try await withStandby(of: primary, name: "standby") { standby in
                try await withServer(worker: nil, baseURL: Self.url(primary, standby)) { server async throws in
                    let job: JSONValue = ["stages": [["task": "noop"]]]
                    let kept = try await server.enqueue(job, query: "?unchecked=true")
                    let database = try #require(server.db.configuration.database)
                    _ = try await eventually("the standby to have the first job") {
                        // (Until the standby has replayed the database's creation, psql fails.)
                        try? await standby.psql(
                            "SELECT count(*) FROM baton.jobs WHERE id = \(kept)", database: database)
                            == "1"
                    }
                    // The standby stops receiving: what the primary writes now, it will never have.
                    try await standby.configure(["primary_conninfo": ""])
                    try await eventually("the WAL receiver to stop") {
                        try await standby.psql("SELECT count(*) FROM pg_stat_wal_receiver") == "0"
                    }
                    var lost: [Int64] = []
                    for _ in 0..<30 { lost.append(try await server.enqueue(job, query: "?unchecked=true")) }

                    try await primary.stopServer(mode: "immediate")
                    try await standby.promote()
                    var after: [Int64] = []
                    try await eventually(timeout: .seconds(20), "enqueues to succeed on the new primary") {
                        let reply = try await server.call(.POST, "/v1/jobs?unchecked=true", body: job)
                        if let id = reply["id"]?.int64, reply.status == 201 { after.append(id) }
                        return after.count == 30
                    }
                    #expect(try await server.call(.GET, "/v1/jobs/\(kept)").status == 200)
                    #expect(try await server.call(.GET, "/v1/jobs/\(lost[0])").status == 404, "lost, as documented")
                    #expect(Set(after).isDisjoint(with: lost))
                }
            }
        }
    }

    /// A primary that starts refusing writes (a failover manager fencing it read-only) with the
    /// pool's connections open: a write is a `503 database-unavailable` with `Retry-After` (never a
    /// `500`), `/readyz` is not ready, and once it takes writes again so do requests.
    @Test func aServerThatOnlyReadsIsUnavailableAndNotReady() async throws {
        try await withLocalPostgres(LocalPostgres.Options(fast: true)) { cluster in
            try await withServer(worker: nil, baseURL: cluster.url) { server async throws in
                let job: JSONValue = ["stages": [["task": "noop"]]]
                _ = try await server.enqueue(job, query: "?unchecked=true")
                try await cluster.configure(["default_transaction_read_only": "on"])
                try await eventually("the write to be refused") {
                    try await server.call(.POST, "/v1/jobs?unchecked=true", body: job).status == 503
                }
                let refused = try await server.call(.POST, "/v1/jobs?unchecked=true", body: job)
                #expect(refused.status == 503, "\(refused.text)")
                #expect(refused["type"] == "urn:baton:problem:database-unavailable")
                #expect(refused.headers.first(name: "Retry-After") == "1")
                let ready = try await server.call(.GET, "/readyz")
                #expect(ready.status == 503)
                #expect(ready["detail"]?.stringValue?.contains("only reads") == true, "\(ready.text)")

                try await cluster.configure(["default_transaction_read_only": "off"])
                try await eventually("writes to be taken again") {
                    try await server.call(.POST, "/v1/jobs?unchecked=true", body: job).status == 201
                }
                #expect(try await server.call(.GET, "/readyz").status == 200)
            }
        }
    }

    /// The first host of the list does not answer: the next one is used, for the pool, the
    /// LISTEN connection (a `?wait=` is answered as the job finishes) and the worker.
    @Test func aHostThatIsDownIsPassedOver() async throws {
        try await withLocalPostgres(LocalPostgres.Options(fast: true)) { cluster in
            let down = try LocalPostgres.freePort()
            let url = "postgres://postgres@127.0.0.1:\(down),127.0.0.1:\(cluster.port)/postgres?sslmode=disable"
            try await withServer(baseURL: url) { server async throws in
                let reply = try await server.call(.POST, "/v1/jobs?wait=10s", body: ["stages": [["task": "noop"]]])
                #expect(reply.status == 201, "\(reply.text)")
                #expect(reply["state"] == "completed")
            }
        }
    }
}
