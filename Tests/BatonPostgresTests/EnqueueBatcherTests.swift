import Baton
import BatonPostgres
import BatonTestSupport
import Foundation
import LocalPostgres
import PostgresNIO
import Synchronization
import Testing

/// Group commit of enqueues (`EnqueueBatcher`), against PostgreSQL: callers that arrive while a
/// batch is written share the next transaction, each gets its own jobs back, one caller's refused
/// job fails only that caller, and no enqueue is left waiting when the database restarts.
@Suite(.timeLimit(.minutes(3)))
struct EnqueueBatcherTests {
    static func job(_ caller: Int, _ number: Int = 0) -> NewJob {
        NewJob(
            chain: ChainDefinition(
                input: ["caller": .number(JSONNumber(caller)), "n": .number(JSONNumber(number))],
                stages: [.task("noop")]))
    }

    /// The transaction that wrote each job (jobs written together share their row's `xmin`).
    static func transactions(_ ids: [Int64], in db: TestDatabase) async throws -> [Int64: String] {
        let rows = try await db.pool.read(
            "SELECT id, xmin::text FROM \(unescaped: db.configuration.schema).jobs WHERE id = ANY(\(ids))",
            logger: db.logger)
        var transactions: [Int64: String] = [:]
        for row in rows {
            let (id, xmin) = try row.decode((Int64, String).self)
            transactions[id] = xmin
        }
        return transactions
    }

    /// Enqueues `first` through a batcher whose first write is held until the others have queued
    /// behind it, then each of `others`, one at a time in order; the tasks, in that order. `before`
    /// runs before every write but the held one, in the writing task.
    static func enqueueBehindAHeldWrite(
        _ db: TestDatabase, first: [NewJob], others: [[NewJob]],
        before: @escaping @Sendable () throws -> Void = {},
        answer:
            @escaping @Sendable ([ValidJob], [Result<EnqueuedJob, JobVanished>]) -> [Result<EnqueuedJob, JobVanished>] =
            {
                $1
            },
        whileHeld: ([Task<[EnqueuedJob], any Error>]) -> Void = { _ in }
    ) async throws -> [Task<[EnqueuedJob], any Error>] {
        let gate = Gate()
        let writes = Run()
        let batcher = EnqueueBatcher { [store = db.store] jobs in
            if writes.writes.add(1, ordering: .relaxed).newValue == 1 {
                await gate.wait()
            } else {
                try before()
            }
            return answer(jobs, try await store.enqueueEach(jobs))
        }
        let first = try first.map { try $0.validated() }
        var tasks = [Task { try await batcher.enqueue(first) }]
        try await eventually("the first write to start") { gate.isWaited }
        for jobs in others {
            let jobs = try jobs.map { try $0.validated() }
            let waiting = batcher.waitingCallers
            tasks.append(Task { try await batcher.enqueue(jobs) })
            try await eventually("a caller to wait behind the write") { batcher.waitingCallers == waiting + 1 }
        }
        whileHeld(tasks)
        gate.open()
        for task in tasks { _ = await task.result }
        return tasks
    }

    @Test func callersArrivingDuringAWriteShareTheNextTransactionAndEachGetsItsOwnJobs() async throws {
        try await TestDatabase.with { db async throws in
            let tasks = try await Self.enqueueBehindAHeldWrite(
                db, first: [Self.job(0)], others: (1...3).map { caller in (0..<caller).map { Self.job(caller, $0) } })
            var ids: [[Int64]] = []
            for task in tasks { ids.append(try await task.value.map(\.id)) }
            // Each caller has its own jobs, in its order.
            for (caller, own) in ids.enumerated() {
                #expect(own.count == max(caller, 1))
                for (number, id) in own.enumerated() {
                    #expect(
                        try await db.store.job(id)?.input == [
                            "caller": .number(JSONNumber(caller)), "n": .number(JSONNumber(number)),
                        ])
                }
            }
            // The first alone; the three that waited together, in one transaction.
            let written = try await Self.transactions(ids.flatMap { $0 }, in: db)
            let shared = Set(ids.dropFirst().flatMap { $0 }.map { written[$0] })
            #expect(shared.count == 1)
            #expect(!shared.contains(written[ids[0][0]]))
        }
    }

    @Test func aRefusedJobFailsOnlyItsCaller() async throws {
        try await TestDatabase.with { db async throws in
            var owned = Self.job(9)
            owned.idempotencyKey = "taken"
            owned.enqueuedBy = "someone"
            _ = try await db.store.enqueue([owned])
            // Refused by PostgreSQL: the key names another owner's job.
            var other = Self.job(2)
            other.idempotencyKey = "taken"
            other.enqueuedBy = "someone-else"
            other.keyOwners = ["someone-else"]
            // Refused before it reaches a batch: the batcher takes only checked jobs.
            var invalid = Self.job(3)
            invalid.priority = 40_000
            #expect(throws: BatonError.self) { try invalid.validated() }

            let tasks = try await Self.enqueueBehindAHeldWrite(
                db, first: [Self.job(0)],
                others: [[Self.job(1, 0)], [Self.job(2, 0), other], [Self.job(4)]])
            #expect(try await tasks[0].value.count == 1)
            #expect(try await tasks[3].value.count == 1)
            let first = try await tasks[1].value
            #expect(try await db.store.job(first[0].id)?.input == ["caller": 1, "n": 0])
            // Its index is its own caller's, not the shared batch's.
            let taken = await #expect(throws: IdempotencyKeyTaken.self) { try await tasks[2].value }
            #expect(taken?.index == 1)
            #expect(
                try await db.values(
                    "SELECT count(*)::int FROM \(unescaped: db.configuration.schema).jobs", as: Int.self) == [4])
        }
    }

    /// A job a key named that vanished between the insert and its look-up (the store answers it
    /// apart): only the caller that sent it is told to try again; the others have their jobs.
    @Test func aVanishedJobFailsOnlyItsCaller() async throws {
        try await TestDatabase.with { db async throws in
            let tasks = try await Self.enqueueBehindAHeldWrite(
                db, first: [Self.job(0)], others: [[Self.job(1)], [Self.job(2)], [Self.job(3)]],
                answer: { jobs, results in
                    // As the store answers a NULL id: the job of caller 2.
                    zip(jobs, results).map { job, result in
                        job.job.chain.input["caller"] == 2 ? .failure(JobVanished()) : result
                    }
                })
            await #expect(throws: JobVanished.self) { try await tasks[2].value }
            for caller in [0, 1, 3] {
                let id = try #require(try await tasks[caller].value.first?.id)
                #expect(try await db.store.job(id)?.input == ["caller": .number(JSONNumber(caller)), "n": 0])
            }
        }
    }

    /// A caller cancelled while it waits for a connection to write the batch it leads: the others'
    /// jobs are written by their own tasks.
    @Test func aCancelledWriterFailsOnlyItself() async throws {
        try await TestDatabase.with { db async throws in
            // `DatabasePool` throws `CancellationError` from a cancelled task waiting for a connection.
            let tasks = try await Self.enqueueBehindAHeldWrite(
                db, first: [Self.job(0)], others: [[Self.job(1)], [Self.job(2)], [Self.job(3)]],
                before: { try Task.checkCancellation() }, whileHeld: { $0[1].cancel() })
            #expect(try await tasks[0].value.count == 1)
            await #expect(throws: CancellationError.self) { try await tasks[1].value }
            #expect(try await tasks[2].value.count == 1)
            #expect(try await tasks[3].value.count == 1)
            #expect(
                try await db.values(
                    "SELECT count(*)::int FROM \(unescaped: db.configuration.schema).jobs", as: Int.self) == [3])
        }
    }
}

extension EnqueueBatcherTests {
    /// Sixteen callers enqueue without pause through `BatonClient` while PostgreSQL restarts: every
    /// call returns (a job or an error), every job a call returned is stored, and calls did share
    /// transactions. (Group commit was once withdrawn for an enqueue that never returned across a
    /// restart: a statement dropped on a closing connection, before every statement went through
    /// `DatabasePool`'s watched leases and the commit check.)
    @Test(arguments: ["fast", "immediate"])
    func everyEnqueueReturnsAcrossARestartAndNoneIsLost(mode: String) async throws {
        try await withLocalPostgres { server in
            try await TestDatabase.with(baseURL: server.url) { db async throws in
                let baton = BatonClient(pool: db.pool, logger: db.logger)
                let run = Run()
                let calls = try await withThrowingTaskGroup(of: [Int64].self) { group in
                    for caller in 0..<16 {
                        group.addTask {
                            var ids: [Int64] = []
                            var number = 0
                            while !run.stop.load(ordering: .relaxed) {
                                number += 1
                                do {
                                    ids += try await baton.enqueue([Self.job(caller, number)]).map(\.id)
                                    if run.restarted.load(ordering: .relaxed) {
                                        run.enqueuedAfterRestart.add(1, ordering: .relaxed)
                                    }
                                } catch {
                                    // The database is away: as a client would, try again shortly.
                                    try await Task.sleep(for: .milliseconds(10))
                                }
                            }
                            return ids
                        }
                    }
                    try await eventually("jobs to be enqueued") {
                        try await db.values(
                            "SELECT count(*)::int FROM \(unescaped: db.configuration.schema).jobs", as: Int.self)[0]
                            > 500
                    }
                    try await server.restart(mode: mode)
                    run.restarted.store(true, ordering: .relaxed)
                    try await eventually("enqueues to succeed again") {
                        run.enqueuedAfterRestart.load(ordering: .relaxed) > 500
                    }
                    run.stop.store(true, ordering: .relaxed)
                    var calls: [[Int64]] = []
                    for try await ids in group { calls.append(ids) }
                    return calls
                }
                let ids = calls.flatMap { $0 }
                #expect(Set(ids).count == ids.count)
                let stored = try await Self.transactions(ids, in: db)
                #expect(stored.count == ids.count, "jobs answered with an id and not stored")
                #expect(Set(stored.values).count < ids.count, "no two calls shared a transaction")
            }
        }
    }
}

extension EnqueueBatcherTests {
    /// A batch of up to 100 jobs wakes its queue's workers from inside its own transaction (the
    /// NOTIFY leaves at the commit); a larger one leaves it to its caller, which `BatonClient` does.
    @Test func aSmallEnqueueWakesWorkersFromItsTransactionAndALargeOneThroughItsCaller() async throws {
        try await TestDatabase.with { db async throws in
            let connection = try await db.configuration.connect(id: 9, logger: db.logger)
            let baton = BatonClient(pool: db.pool, logger: db.logger)
            @Sendable func jobs(_ count: Int, queue: String) -> [NewJob] {
                (0..<count).map {
                    NewJob(
                        chain: ChainDefinition(input: .number(JSONNumber($0)), stages: [.task("noop")]), queue: queue)
                }
            }
            let payloads = try await withRunningServices([baton], logger: db.logger) {
                try await connection.listen(on: db.store.channel) { notifications in
                    _ = try await db.store.enqueue(jobs(1, queue: "small"))
                    _ = try await db.store.enqueue(jobs(101, queue: "large"))
                    _ = try await baton.enqueue(jobs(101, queue: "announced"))
                    var payloads: [String] = []
                    // (`p:` is the client's check that its LISTEN hears what the pool sends.)
                    for try await notification in notifications where !notification.payload.hasPrefix("p:") {
                        payloads.append(notification.payload)
                        if payloads.count == 2 { break }
                    }
                    return payloads
                }
            }
            try await connection.close()
            #expect(payloads == ["q:small", "q:announced"])
        }
    }
}

/// What the callers of a test share.
final class Run: Sendable {
    let stop = Atomic(false)
    let restarted = Atomic(false)
    let enqueuedAfterRestart = Atomic(0)
    let writes = Atomic(0)
}

/// A gate a test opens once; `wait()` returns when it is open.
final class Gate: Sendable {
    private let state = Mutex<(open: Bool, waited: Bool, waiters: [CheckedContinuation<Void, Never>])>(
        (false, false, []))

    var isWaited: Bool { state.withLock { $0.waited } }

    func wait() async {
        await withCheckedContinuation { continuation in
            let open = state.withLock { state in
                state.waited = true
                if !state.open { state.waiters.append(continuation) }
                return state.open
            }
            if open { continuation.resume() }
        }
    }

    func open() {
        let waiters = state.withLock { state in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}
