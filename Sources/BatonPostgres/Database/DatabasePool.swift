import Logging
import Metrics
import NIOCore
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// Baton's connections to PostgreSQL: a PostgresNIO `PostgresClient` that answers at once while
/// the database is away and is replaced the moment the database is back.
///
/// Run it in the `ServiceGroup` before the services that use it:
///
/// ```swift
/// let pool = DatabasePool(configuration: database, logger: logger)
/// let worker = Worker(pool: pool, tasks: tasks, logger: logger)
/// try await ServiceGroup(services: [pool, worker], gracefulShutdownSignals: [.sigterm], logger: logger).run()
/// ```
///
/// Why not a `PostgresClient` alone: while the database cannot be reached, PostgresNIO 1.33's pool
/// - keeps a statement waiting for a connection for as long as the outage lasts, for its first
///   minute (then its circuit breaker fails every statement at once);
/// - tries one connection at a time, 100 ms × 1.25ⁿ apart up to a minute, none of it configurable:
///   after an outage of a minute it goes on failing for up to 13 s after the database is back,
///   after five minutes for up to a minute.
///
/// So this pool watches. A statement that has waited ``patience`` for a connection asks whether
/// the database accepts connections: one probe connection answers everyone who asks meanwhile. If
/// it does not, the statement fails as ``DatabaseUnavailable`` (the control plane's 503 with
/// `Retry-After`, a retry in the worker's loops); statements keep being given a connection for
/// ``patience`` in case the pool still holds live ones. While the database is away, the probe
/// tries again every ``probeInterval``; on its first success a fresh `PostgresClient` takes over
/// and the old one is closed (a statement still waiting in it is asked again of the new one),
/// unless the old one served a statement meanwhile: then only new connections were refused.
///
/// `Tests/BatonPostgresTests/DatabasePoolTests.swift` shows PostgresNIO's behaviour and this
/// pool's through real outages of PostgreSQL.
public final class DatabasePool: Service, Sendable {
    /// Where the pool connects; its `schema` is where Baton's tables are.
    public let configuration: DatabaseConfiguration
    package let logger: Logger
    private let state: Mutex<State>
    private let events: AsyncStream<Event>
    private let eventSink: AsyncStream<Event>.Continuation
    private let metrics = MadeMetrics()

    /// How long a statement waits for a connection before the pool asks whether the database is
    /// there at all.
    public static let patience = Duration.seconds(1)
    /// How long a statement waits for a connection from a pool whose database answers (all its
    /// connections busy).
    public static let leaseTimeout = Duration.seconds(10)
    /// How often an absent database is tried.
    public static let probeInterval = Duration.milliseconds(250)
    /// How long a new connection may take (TCP, TLS, start-up, authentication) before the database
    /// is judged not to answer: the pool's connections, single ones and the probe alike. A probe
    /// may not be quicker to give up than the pool: a server busy starting a hundred backends at
    /// once on two cores took over 2 s to accept one (the test suite's start, 2026-11-26), and a
    /// busy database is not an absent one.
    public static let connectTimeout = Duration.seconds(5)

    public init(configuration: DatabaseConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        self.state = Mutex(State(current: Generation(configuration.makePostgresClient(logger: logger), number: 1)))
        (events, eventSink) = AsyncStream.makeStream()
    }

    /// Whether the database refused or did not answer a new connection the last time the pool
    /// tried one (it tries while a statement waits for a connection, and every ``probeInterval``
    /// while this is true).
    public var isDatabaseAway: Bool { state.withLock { $0.away != nil } }

    // MARK: running

    public func run() async {
        let first = state.withLock { $0.current }
        await withDiscardingTaskGroup { group in
            // Immediate: `PostgresClient.run()` is entered before anyone leases (PostgresNIO warns
            // about a lease before it), as long as this `run()` was entered so too.
            group.addImmediateTask { await first.run() }
            await withGracefulShutdownHandler {
                for await event in events {
                    switch event {
                    case .probe: group.addTask { await self.probeUntilReachable() }
                    case .reachable: replaceIfAway(in: &group)
                    }
                }
            } onGracefulShutdown: {
                self.eventSink.finish()
            }
            group.cancelAll()
        }
        let waiters = state.withLock { state in
            state.closed = true
            return state.takeWaiters()
        }
        for waiter in waiters { waiter.resume(returning: false) }
    }

    /// After an outage: a new `PostgresClient`, running before it is handed out, then the old one
    /// closed. Not if the old one has served a statement since the last failed probe, or has
    /// connections in use: it has not lost them all (the server refused only new connections, as
    /// when `max_connections` is reached), and its connections will do.
    private func replaceIfAway(in group: inout DiscardingTaskGroup) {
        let new: Generation? = state.withLock { state in
            guard state.away != nil, state.current.leased.load(ordering: .relaxed) == 0,
                !state.current.servedWhileAway.load(ordering: .relaxed)
            else { return nil }
            return Generation(configuration.makePostgresClient(logger: logger), number: state.current.number + 1)
        }
        if let new { group.addImmediateTask { await new.run() } }
        let (old, away, waiters) = state.withLock { state in
            let old = state.current
            if let new { state.current = new }
            let away = state.away
            state.away = nil
            state.lastReachable = .now
            state.probing = false
            return (old, away, state.takeWaiters())
        }
        if new != nil { old.retire() }
        for waiter in waiters { waiter.resume(returning: true) }
        if let away {
            logger.notice(
                "the database is back",
                metadata: [
                    "away_for": "\(away.since.duration(to: .now))",
                    "pool": "\(new.map { "new pool \($0.number)" } ?? "kept; it still served")",
                ])
        }
    }

    // MARK: statements

    /// Runs `body` with a connection of the pool, which goes back when `body` returns.
    ///
    /// Fails as ``DatabaseUnavailable`` if no connection could be had: the database is away
    /// (after ``patience`` and a probe), or every connection stayed busy for ``leaseTimeout``.
    public func withConnection<Result: Sendable>(
        _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        while true {
            let generation = state.withLock { $0.current }
            do {
                return try await withConnection(from: generation, body)
            } catch is Replaced {
                continue
            }
        }
    }

    /// Runs `body` in a transaction on a pooled connection: committed if `body` returns, rolled
    /// back if it throws.
    public func withTransaction<Result: Sendable>(
        logger: Logger? = nil, _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await withConnection { connection in
            try await connection.withTransaction(logger: logger ?? self.logger) { try await body($0) }
        }
    }

    /// Runs `query` on a pooled connection and returns all its rows once its transaction has
    /// committed (``PostgresConnection/rows(_:logger:)``). Every statement of Baton's goes through
    /// here or a connection's `rows`.
    package func rows(_ query: PostgresQuery, logger: Logger) async throws -> [PostgresRow] {
        try await withConnection { connection in try await connection.rows(query, logger: logger) }
    }

    /// Runs `query`, which changes nothing, and returns all its rows
    /// (``PostgresConnection/read(_:logger:)``: no commit to confirm).
    package func read(_ query: PostgresQuery, logger: Logger) async throws -> [PostgresRow] {
        try await withConnection { connection in try await connection.read(query, logger: logger) }
    }

    /// Runs a statement whose rows do not matter.
    package func perform(_ query: PostgresQuery, logger: Logger? = nil) async throws {
        _ = try await rows(query, logger: logger ?? self.logger)
    }

    private func withConnection<Result: Sendable>(
        from generation: Generation, _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        let leased = Flag()
        let asked = ContinuousClock.now
        return try await withThrowingTaskGroup(of: Result?.self) { group in
            group.addTask {
                do {
                    return try await generation.client.withConnection { connection in
                        leased.set()
                        // Pool use: `baton_db_connection_wait_seconds` (time to get a connection)
                        // and `baton_db_connections_in_use` (connections leased now).
                        self.metrics.timer("baton_db_connection_wait_seconds")
                            .record(duration: ContinuousClock.now - asked)
                        let inUse = self.metrics.meter("baton_db_connections_in_use")
                        inUse.increment()
                        generation.leased.add(1, ordering: .relaxed)
                        defer {
                            generation.leased.subtract(1, ordering: .relaxed)
                            inUse.decrement()
                        }
                        // Served: the database answered on this pool's connection. Not merely
                        // leased: a connection the pool does not yet know is dead is leased too,
                        // and the pool would then be kept after an outage (see `replaceIfAway`).
                        do {
                            let result = try await body(connection)
                            generation.servedWhileAway.store(true, ordering: .relaxed)
                            return result
                        } catch  where error.isConnectionLoss {
                            self.suspect()
                            throw error
                        } catch {
                            generation.servedWhileAway.store(true, ordering: .relaxed)
                            throw error
                        }
                    }
                } catch let error where !leased.isSet && !(error is PSQLError || error is CancellationError) {
                    // The pool's own errors: closed (replaced after an outage), or its circuit
                    // breaker, open after a minute of failing to connect.
                    if generation.isRetired { throw Replaced() }
                    self.suspect()
                    throw DatabaseUnavailable(description: "no connection to the database: \(error)")
                }
            }
            group.addTask {
                try await Task.sleep(for: Self.patience)
                guard !leased.isSet else { return nil }
                if let away = await self.awayNow() { throw DatabaseUnavailable(description: away) }
                try await Task.sleep(until: asked + Self.leaseTimeout)
                guard !leased.isSet else { return nil }
                throw DatabaseUnavailable(
                    description:
                        "no connection to the database within \(Self.leaseTimeout): all \(self.configuration.maximumConnections) are busy"
                )
            }
            // The deadlines are for getting a connection; a statement under way is waited for.
            while let result = try await group.next() {
                if let result {
                    group.cancelAll()
                    return result
                }
            }
            throw CancellationError()
        }
    }

    // MARK: watching the database

    /// Starts a probe unless one is under way or the database answered a moment ago.
    private func suspect() {
        let start = state.withLock { state in
            if state.away == nil, let last = state.lastReachable, last.duration(to: .now) < Self.patience {
                return false
            }
            return state.startProbe()
        }
        if start { eventSink.yield(.probe) }
    }

    /// nil if the database accepts connections now (probing, or trusting a probe of the last
    /// moment); else why not.
    private func awayNow() async -> String? {
        let id = state.withLock { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        let reachable = await withTaskCancellationHandler {
            await withCheckedContinuation { (waiter: CheckedContinuation<Bool, Never>) in
                let (answer, start) = state.withLock { state -> (Bool?, Bool) in
                    if state.closed || state.away != nil { return (false, false) }
                    if Task.isCancelled { return (true, false) }
                    if let last = state.lastReachable, last.duration(to: .now) < Self.patience { return (true, false) }
                    state.waiters[id] = waiter
                    return (nil, state.startProbe())
                }
                if let answer { waiter.resume(returning: answer) }
                if start { eventSink.yield(.probe) }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume(returning: true)
        }
        if reachable { return nil }
        return state.withLock { $0.away?.description } ?? "the pool has closed"
    }

    /// Connects, once per ``probeInterval``, until the database answers.
    private func probeUntilReachable() async {
        var probe: PostgresConnection.Configuration
        do {
            probe = try configuration.connectionConfiguration
        } catch {
            logger.error("cannot probe the database", metadata: ["error": "\(error)"])
            return
        }
        while !Task.isCancelled {
            do {
                let connection = try await PostgresConnection.connect(configuration: probe, id: 0, logger: logger)
                try? await connection.close()
                eventSink.yield(.reachable)
                return
            } catch {
                let cause = DatabaseConfiguration.describe(error)
                let (first, waiters) = state.withLock { state in
                    let first = state.away == nil
                    // Served since the last failed probe: a pool whose connections were still
                    // answering when the first probe failed (a fast shutdown terminates sessions
                    // after it refuses new ones) has not shown that it still serves.
                    state.current.servedWhileAway.store(false, ordering: .relaxed)
                    // The latest cause: "shutting down" at first, "connection refused" once it has.
                    state.away = Away(
                        since: state.away?.since ?? .now,
                        description: "the database at \(configuration.displayAddress) cannot be reached: \(cause)")
                    return (first, state.takeWaiters())
                }
                for waiter in waiters { waiter.resume(returning: false) }
                if first {
                    logger.warning(
                        "the database cannot be reached; statements fail until it is back",
                        metadata: ["database": "\(configuration.displayAddress)", "error": "\(cause)"])
                }
                try? await Task.sleep(for: Self.probeInterval)
            }
        }
    }
}

extension DatabasePool {
    private enum Event: Sendable {
        /// Someone suspects the database is away: look.
        case probe
        /// A probe connected.
        case reachable
    }

    /// A statement was waiting in a pool that has been replaced: ask the new one.
    private struct Replaced: Error {}

    private struct Away {
        var since: ContinuousClock.Instant
        var description: String
    }

    private struct State {
        var current: Generation
        var away: Away?
        var lastReachable: ContinuousClock.Instant?
        var probing = false
        var closed = false
        var nextWaiter = 0
        var waiters: [Int: CheckedContinuation<Bool, Never>] = [:]

        mutating func takeWaiters() -> [CheckedContinuation<Bool, Never>] {
            defer { waiters = [:] }
            return Array(waiters.values)
        }

        /// Whether the caller is to start a probe: none is under way and the pool runs.
        mutating func startProbe() -> Bool {
            guard !probing, !closed else { return false }
            probing = true
            return true
        }
    }

    /// One `PostgresClient`, from its start to its retirement.
    private final class Generation: Sendable {
        let client: PostgresClient
        let number: Int
        /// Connections leased through Baton now.
        let leased = Atomic(0)
        /// Whether a connection was leased since the database was last found away.
        let servedWhileAway = Atomic(false)
        private let retired = Atomic(false)
        private let retirement: AsyncStream<Never>
        private let retirementSink: AsyncStream<Never>.Continuation

        init(_ client: PostgresClient, number: Int) {
            self.client = client
            self.number = number
            (retirement, retirementSink) = AsyncStream.makeStream()
        }

        var isRetired: Bool { retired.load(ordering: .relaxed) }

        /// Runs the client until it is retired or the task cancelled.
        func run() async {
            await withDiscardingTaskGroup { group in
                group.addImmediateTask { await self.client.run() }
                for await _ in retirement {}
                group.cancelAll()
            }
        }

        /// Closes the client: statements waiting in it fail (and are asked again elsewhere).
        func retire() {
            retired.store(true, ordering: .relaxed)
            retirementSink.finish()
        }
    }
}

/// Set once, read from other tasks.
private final class Flag: Sendable {
    private let value = Atomic(false)
    func set() { value.store(true, ordering: .relaxed) }
    var isSet: Bool { value.load(ordering: .relaxed) }
}
