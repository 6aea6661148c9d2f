import Baton
import BatonPostgres
import BatonTestSupport
import Foundation
import PostgresNIO
import Testing

/// Lanes as the database enforces them, without a worker.
@Suite(.timeLimit(.minutes(3)))
struct LaneTests {
    func laned(_ lane: String, _ input: Int) -> NewJob {
        NewJob(chain: ChainDefinition(input: .number(input), stages: [.task("t", lane: lane)]))
    }

    func states(_ db: TestDatabase, _ ids: [Int64]) async throws -> [JobState] {
        var states: [JobState] = []
        for id in ids { states.append(try #require(try await db.store.job(id)).state) }
        return states
    }

    @Test func oneJobHoldsALaneAndTheRestWaitInOrder() async throws {
        try await TestDatabase.with { db async throws in
            let ids = try await db.store.enqueue((0..<4).map { laned("a", $0) }).map(\.id)
            let other = try await db.store.enqueue([laned("b", 9)])[0].id
            #expect(try await states(db, ids + [other]) == [.available, .waiting, .waiting, .waiting, .available])

            // Complete the holder: the oldest waiting job takes the lane.
            let claimed = try await db.store.claim(queue: "default", limit: 10, worker: "w")
            #expect(Set(claimed.map(\.id)) == [ids[0], other])
            _ = try await db.store.apply(
                [Outcome(jobID: ids[0], stage: 0, attempt: 1, transition: .complete(output: "0"))], worker: "w")
            #expect(try await states(db, ids) == [.completed, .available, .waiting, .waiting])
        }
    }

    @Test func aRetryingHolderKeepsItsLaneAndADiscardReleasesIt() async throws {
        try await TestDatabase.with { db async throws in
            let ids = try await db.store.enqueue((0..<3).map { laned("a", $0) }).map(\.id)
            _ = try await db.store.claim(queue: "default", limit: 10, worker: "w")
            _ = try await db.store.apply(
                [Outcome(jobID: ids[0], stage: 0, attempt: 1, transition: .retry(error: "e", delay: .zero))],
                worker: "w")
            #expect(try await states(db, ids) == [.retryable, .waiting, .waiting])
            _ = try await db.store.promoteDue(limit: 10, within: nil)
            #expect(try await states(db, ids) == [.available, .waiting, .waiting])
            _ = try await db.store.claim(queue: "default", limit: 10, worker: "w")
            _ = try await db.store.apply(
                [Outcome(jobID: ids[0], stage: 0, attempt: 2, transition: .discard(error: "e"))], worker: "w")
            #expect(try await states(db, ids) == [.discarded, .available, .waiting])
        }
    }

    @Test func cancellingTheHolderOrAWaiterKeepsTheLaneMoving() async throws {
        try await TestDatabase.with { db async throws in
            let ids = try await db.store.enqueue((0..<3).map { laned("a", $0) }).map(\.id)
            try await db.store.cancel(ids[1])
            #expect(try await states(db, ids) == [.available, .cancelled, .waiting])
            _ = try await db.store.claim(queue: "default", limit: 10, worker: "w")
            try await db.store.cancel(ids[0])
            #expect(try await states(db, ids) == [.cancelled, .cancelled, .available])
            #expect(try await db.store.cancel(ids[0]).isEmpty)
            await #expect(throws: BatonError.jobNotFound(999_999)) { try await db.store.cancel(999_999) }
        }
    }

    @Test func aStageEnteringALaneQueuesBehindTheJobsAlreadyThere() async throws {
        try await TestDatabase.with { db async throws in
            let chain = ChainDefinition(stages: [.task("render"), .task("deliver", lane: "a")])
            let first = try await db.store.enqueue([NewJob(chain: chain)])[0].id
            let holder = try await db.store.enqueue([laned("a", 1)])[0].id
            let claimed = try await db.store.claim(queue: "default", limit: 10, worker: "w")
            #expect(Set(claimed.map(\.id)) == [first, holder])
            _ = try await db.store.apply(
                [Outcome(jobID: first, stage: 0, attempt: 1, transition: .advance(output: "1", lane: "a"))], worker: "w"
            )
            #expect(try await states(db, [holder, first]) == [.running, .waiting])
            _ = try await db.store.apply(
                [Outcome(jobID: holder, stage: 0, attempt: 1, transition: .complete(output: "1"))], worker: "w")
            #expect(try await states(db, [holder, first]) == [.completed, .available])
        }
    }

    @Test func concurrentTransitionsOnManyLanesKeepOneHolderEach() async throws {
        try await TestDatabase.with { db async throws in
            let jobs = (0..<200).map { laned("lane-\($0 % 10)", $0) }
            for slice in stride(from: 0, to: 200, by: 20) {
                _ = try await db.store.enqueue(Array(jobs[slice..<slice + 20]))
            }
            // Four "workers" claim and complete until everything is done.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for worker in 0..<4 {
                    group.addTask {
                        var idle = 0
                        while idle < 50 {
                            let claimed = try await db.store.claim(queue: "default", limit: 5, worker: "w\(worker)")
                            if claimed.isEmpty {
                                idle += 1
                                try await Task.sleep(for: .milliseconds(5))
                                continue
                            }
                            idle = 0
                            _ = try await db.store.apply(
                                claimed.map {
                                    Outcome(
                                        jobID: $0.id, stage: 0, attempt: $0.attempt,
                                        transition: .complete(output: $0.input))
                                }, worker: "w\(worker)")
                        }
                    }
                }
                try await group.waitForAll()
            }
            let schema = db.configuration.schema
            #expect(
                try await db.values(
                    "SELECT count(*)::int FROM \(unescaped: schema).jobs WHERE state = 'completed'", as: Int.self) == [
                        200
                    ])
            // FIFO per lane: completion order follows enqueue order.
            let disorder = try await db.values(
                """
                SELECT count(*)::int FROM (
                    SELECT id, lag(id) OVER (PARTITION BY lane ORDER BY finished_at, id) AS previous
                    FROM \(unescaped: schema).jobs) x
                WHERE previous > id
                """, as: Int.self)
            #expect(disorder == [0])
        }
    }

    // MARK: width

    func complete(_ db: TestDatabase, _ id: Int64, attempt: Int = 1) async throws -> AppliedOutcomes {
        try await db.store.apply(
            [Outcome(jobID: id, stage: 0, attempt: attempt, transition: .complete(output: "0"))], worker: "w")
    }

    func slots(_ db: TestDatabase, _ ids: [Int64]) async throws -> [Int] {
        try await db.values(
            """
            SELECT lane_slot::int FROM \(unescaped: db.configuration.schema).jobs
            WHERE id = ANY(\(ids)) ORDER BY id
            """, as: Int.self)
    }

    @Test func aWiderLaneAdmitsItsWidthInOrderAndTheNextAsEachLeaves() async throws {
        try await TestDatabase.with { db async throws in
            try await db.store.setLaneWidth(3, lane: "w")
            let ids = try await db.store.enqueue((0..<6).map { laned("w", $0) }).map(\.id)
            #expect(try await states(db, ids) == [.available, .available, .available, .waiting, .waiting, .waiting])
            #expect(try await slots(db, Array(ids[0..<3])) == [0, 1, 2])
            // The second holder leaves: the oldest waiting job takes its slot.
            _ = try await db.store.claim(queue: "default", limit: 3, worker: "w")
            _ = try await complete(db, ids[1])
            #expect(try await states(db, ids) == [.running, .completed, .running, .available, .waiting, .waiting])
            #expect(try await slots(db, [ids[3]]) == [1])
            let lane = try #require(try await db.store.lanes().first)
            #expect((lane.lane, lane.held, lane.width, lane.waiting, lane.head?.id) == ("w", 3, 3, 2, ids[0]))
        }
    }

    /// A worker finishing a stage of a wider lane is handed the lane's oldest holder still waiting
    /// for a worker before the stage just admitted: a lane's stages start in the order admitted.
    @Test func aHandOverStartsTheOldestHolderWaitingForAWorkerFirst() async throws {
        try await TestDatabase.with { db async throws in
            try await db.store.setLaneWidth(2, lane: "w")
            let ids = try await db.store.enqueue((0..<4).map { laned("w", $0) }).map(\.id)
            // Only the first is claimed; the second holds the lane, available.
            _ = try await db.store.claim(queue: "default", limit: 1, worker: "w")
            let applied = try await db.store.apply(
                [Outcome(jobID: ids[0], stage: 0, attempt: 1, transition: .complete(output: "0"))], worker: "w",
                slots: ["default": 1])
            #expect(applied.claimed.map(\.id) == [ids[1]])
            #expect(try await states(db, ids) == [.completed, .running, .available, .waiting])
            // With no older holder waiting, the stage admitted is the one handed over.
            _ = try await db.store.claim(queue: "default", limit: 1, worker: "w")
            let next = try await db.store.apply(
                [Outcome(jobID: ids[1], stage: 0, attempt: 1, transition: .complete(output: "0"))], worker: "w",
                slots: ["default": 5])
            #expect(next.claimed.map(\.id) == [ids[3]])
            #expect(try await states(db, ids) == [.completed, .completed, .running, .running])
        }
    }

    @Test func aRetryingHolderKeepsItsSlotInAWiderLane() async throws {
        try await TestDatabase.with { db async throws in
            try await db.store.setLaneWidth(2, lane: "w")
            let ids = try await db.store.enqueue((0..<3).map { laned("w", $0) }).map(\.id)
            _ = try await db.store.claim(queue: "default", limit: 2, worker: "w")
            _ = try await db.store.apply(
                [Outcome(jobID: ids[0], stage: 0, attempt: 1, transition: .retry(error: "e", delay: .seconds(60)))],
                worker: "w")
            #expect(try await states(db, ids) == [.retryable, .running, .waiting])
            _ = try await complete(db, ids[1])
            #expect(try await states(db, ids) == [.retryable, .completed, .available])
            #expect(try await slots(db, [ids[0], ids[2]]) == [0, 1])
            #expect(try await db.store.lanes(blocked: true).map(\.head?.id) == [ids[0]])
            #expect(try await db.store.laneCounts() == (1, 1))
        }
    }

    /// Widening admits at once; narrowing lets the holders finish and admits again only when fewer
    /// hold the lane than its new width, in order.
    @Test func changingAWidthWithJobsInFlightKeepsOrder() async throws {
        try await TestDatabase.with { db async throws in
            let ids = try await db.store.enqueue((0..<6).map { laned("c", $0) }).map(\.id)
            #expect(try await states(db, ids) == [.available] + Array(repeating: .waiting, count: 5))
            try await db.store.setLaneWidth(3, lane: "c")
            #expect(try await states(db, ids) == [.available, .available, .available, .waiting, .waiting, .waiting])
            _ = try await db.store.claim(queue: "default", limit: 3, worker: "w")
            try await db.store.setLaneWidth(1, lane: "c")
            _ = try await complete(db, ids[0])
            _ = try await complete(db, ids[2])
            #expect(try await states(db, ids) == [.completed, .running, .completed, .waiting, .waiting, .waiting])
            _ = try await complete(db, ids[1])
            #expect(try await states(db, ids) == [.completed, .completed, .completed, .available, .waiting, .waiting])
            // Deleting the setting: width 1 again, as for every lane without one.
            try await db.store.setLaneWidth(nil, lane: "c")
            #expect(try await db.store.laneSettings().isEmpty)
        }
    }

    /// A prefix sets every lane it starts; a lane's own setting, then the longest prefix, win.
    @Test func aPrefixSetsTheLanesItStartsAndTheMostSpecificSettingWins() async throws {
        try await TestDatabase.with { db async throws in
            let a = try await db.store.enqueue((0..<4).map { laned("customer-a", $0) }).map(\.id)
            let b = try await db.store.enqueue((0..<4).map { laned("customer-b", $0) }).map(\.id)
            let vip = try await db.store.enqueue((0..<4).map { laned("customer-vip-1", $0) }).map(\.id)
            try await db.store.setLaneWidth(1, lane: "customer-b")
            try await db.store.setLaneWidth(3, lane: "customer-vip-*")
            try await db.store.setLaneWidth(2, lane: "customer-*")
            func admitted(_ ids: [Int64]) async throws -> Int {
                try await states(db, ids).filter { $0 == .available }.count
            }
            #expect(try await admitted(a) == 2)
            #expect(try await admitted(b) == 1)
            #expect(try await admitted(vip) == 3)
            #expect(
                try await db.store.lanes().map { "\($0.lane):\($0.width)" } == [
                    "customer-a:2", "customer-b:1", "customer-vip-1:3",
                ])
            #expect(
                try await db.store.laneSettings().map { "\($0.lane):\($0.width)" } == [
                    "customer-*:2", "customer-b:1", "customer-vip-*:3",
                ])
        }
    }

    @Test func concurrentTransitionsNeverExceedALanesWidth() async throws {
        try await TestDatabase.with { db async throws in
            let schema = db.configuration.schema
            try await db.store.setLaneWidth(3, lane: "lane-*")
            let jobs = (0..<300).map { laned("lane-\($0 % 5)", $0) }
            for slice in stride(from: 0, to: 300, by: 30) {
                _ = try await db.store.enqueue(Array(jobs[slice..<slice + 30]))
            }
            // Four "workers" claim and complete until everything is done, each checking after its
            // claim that no lane has more than three holders.
            let most = try await withThrowingTaskGroup(of: Int.self) { group in
                for worker in 0..<4 {
                    group.addTask {
                        var most = 0
                        while try await db.values(
                            "SELECT count(*)::int FROM \(unescaped: schema).jobs WHERE state <> 'completed'",
                            as: Int.self) != [0]
                        {
                            let claimed = try await db.store.claim(queue: "default", limit: 4, worker: "w\(worker)")
                            let held = try await db.values(
                                """
                                SELECT coalesce(max(n), 0)::int FROM (
                                    SELECT count(*) AS n FROM \(unescaped: schema).jobs
                                    WHERE state IN ('available', 'running', 'retryable') GROUP BY lane) x
                                """, as: Int.self)[0]
                            most = max(most, held)
                            _ = try await db.store.apply(
                                claimed.map {
                                    Outcome(
                                        jobID: $0.id, stage: 0, attempt: $0.attempt,
                                        transition: .complete(output: $0.input))
                                }, worker: "w\(worker)")
                        }
                        return most
                    }
                }
                return try await group.reduce(0, max)
            }
            #expect(most == 3)
            // Admitted in order: each lane's jobs left `waiting` in the order they entered it, so
            // no job was claimed before one that entered its lane three or more places earlier.
            let overtaken = try await db.values(
                """
                SELECT count(*)::int FROM \(unescaped: schema).jobs a JOIN \(unescaped: schema).jobs b
                    ON a.lane = b.lane AND b.lane_ready_at > a.lane_ready_at
                WHERE b.attempted_at < a.attempted_at
                  AND (SELECT count(*) FROM \(unescaped: schema).jobs c
                       WHERE c.lane = a.lane AND c.lane_ready_at > a.lane_ready_at AND c.lane_ready_at < b.lane_ready_at) >= 2
                """, as: Int.self)
            #expect(overtaken == [0])
        }
    }

    // MARK: floors

    /// The id of the job a lane's admissions probe from (`lane_floors`), if it has one.
    func floor(_ db: TestDatabase, _ lane: String) async throws -> Int64? {
        try await db.values(
            "SELECT id FROM \(unescaped: db.configuration.schema).lane_floors WHERE lane = \(lane)", as: Int64.self
        ).first
    }

    /// Puts a lane's floor at a job, as an admission of the job before it would have.
    func setFloor(_ db: TestDatabase, _ lane: String, at id: Int64) async throws {
        let schema = db.configuration.schema
        try await db.pool.execute(
            """
            INSERT INTO \(unescaped: schema).lane_floors (lane, ready_at, id)
            SELECT lane, lane_ready_at, id FROM \(unescaped: schema).jobs WHERE id = \(id)
            ON CONFLICT (lane) DO UPDATE SET ready_at = excluded.ready_at, id = excluded.id
            """)
    }

    /// Through a deep lane's whole run, its floor moves up with its admissions and never passes a
    /// job waiting in it, and the lane runs in order.
    @Test func aLanesFloorMovesUpAndNeverPassesAWaitingJob() async throws {
        try await TestDatabase.with { db async throws in
            let schema = db.configuration.schema
            let ids = try await db.store.enqueue((0..<64).map { laned("a", $0) }).map(\.id)
            var order: [Int64] = []
            var floors: Set<Int64> = []
            while order.count < ids.count {
                let claimed = try await db.store.claim(queue: "default", limit: 10, worker: "w")
                try #require(claimed.count == 1)
                order.append(claimed[0].id)
                _ = try await complete(db, claimed[0].id)
                if let floor = try await floor(db, "a") { floors.insert(floor) }
                let passed = try await db.values(
                    """
                    SELECT count(*)::int FROM \(unescaped: schema).jobs j
                    JOIN \(unescaped: schema).lane_floors f ON f.lane = j.lane
                    WHERE j.state = 'waiting' AND (j.lane_ready_at, j.id) < (f.ready_at, f.id)
                    """, as: Int.self)
                #expect(passed == [0], "after \(order.count) jobs")
            }
            #expect(order == ids)
            #expect(floors.count > 1, "the floor moved: \(floors.sorted())")
            // An emptied lane keeps its last floor: the maintenance leader's review deletes it once
            // the lane admitted nothing for an hour.
            #expect(try await floor(db, "a") != nil)
            #expect(try await db.store.reviewLaneFloors() == 0)
            #expect(try await floor(db, "a") != nil)
            try await db.pool.execute(
                "UPDATE \(unescaped: schema).lane_floors SET ready_at = ready_at - interval '61 minutes'")
            #expect(try await db.store.reviewLaneFloors() == 1)
            #expect(try await floor(db, "a") == nil)
        }
    }

    /// A scheduled job entering its lane at its due time goes before the jobs that entered after
    /// that time, above the lane's floor: the floor comes down to it (deleted, the next admission
    /// would probe the lane whole, past every dead entry a held horizon keeps).
    @Test func aScheduledJobEntersItsLaneAtItsDueTimeBelowTheFloor() async throws {
        try await TestDatabase.with { db async throws in
            let schema = db.configuration.schema
            let scheduled = try await db.store.enqueue([
                NewJob(
                    chain: ChainDefinition(stages: [.task("t", lane: "a")]), runAt: Date().addingTimeInterval(3600))
            ])[0].id
            let ids = try await db.store.enqueue((0..<3).map { laned("a", $0) }).map(\.id)
            try await setFloor(db, "a", at: ids[1])
            // Its due time comes (set, not waited for): before the others entered the lane.
            try await db.pool.execute(
                """
                UPDATE \(unescaped: schema).jobs SET run_at = (SELECT lane_ready_at - interval '1 second'
                    FROM \(unescaped: schema).jobs WHERE id = \(ids[0]))
                WHERE id = \(scheduled)
                """)
            _ = try await db.store.promoteDue(limit: 10, within: nil)
            #expect(try await states(db, [scheduled] + ids) == [.waiting, .available, .waiting, .waiting])
            #expect(try await floor(db, "a") == scheduled)
            _ = try await db.store.claim(queue: "default", limit: 10, worker: "w")
            _ = try await complete(db, ids[0])
            #expect(try await states(db, [scheduled] + ids) == [.available, .completed, .waiting, .waiting])
        }
    }

    /// A stage repeated in its lane keeps its place ahead of the jobs waiting behind it, above the
    /// lane's floor, which comes down to it.
    @Test func aRepeatedStageGoesBeforeTheJobsAboveItsLanesFloor() async throws {
        try await TestDatabase.with { db async throws in
            let ids = try await db.store.enqueue((0..<3).map { laned("a", $0) }).map(\.id)
            try await setFloor(db, "a", at: ids[1])
            _ = try await db.store.claim(queue: "default", limit: 10, worker: "w")
            _ = try await db.store.apply(
                [Outcome(jobID: ids[0], stage: 0, attempt: 1, transition: .advance(output: "1", lane: "a", to: 0))],
                worker: "w")
            #expect(try await states(db, ids) == [.available, .waiting, .waiting])
            // The floor came down to it rather than going (as for a delayed job entering its lane).
            #expect(try await floor(db, "a") == ids[0])
        }
    }

    /// Were a job to wait below its lane's floor (the database's clock stepped back as it entered),
    /// it would be late, not lost: the maintenance leader's review of the floors admits it.
    @Test func aJobBelowItsLanesFloorIsLateNotLost() async throws {
        try await TestDatabase.with { db async throws in
            let ids = try await db.store.enqueue((0..<4).map { laned("a", $0) }).map(\.id)
            try await setFloor(db, "a", at: ids[2])
            var order: [Int64] = []
            while true {
                let claimed = try await db.store.claim(queue: "default", limit: 10, worker: "w")
                guard let job = claimed.first else { break }
                order.append(job.id)
                _ = try await complete(db, job.id)
            }
            #expect(order == [ids[0], ids[2], ids[3]])
            #expect(try await states(db, [ids[1]]) == [.waiting])
            #expect(try await db.store.reviewLaneFloors(batch: 1) == 1)
            #expect(try await states(db, [ids[1]]) == [.available])
            #expect(try await floor(db, "a") == nil)
        }
    }
}
