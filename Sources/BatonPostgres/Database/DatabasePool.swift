import Logging
import Metrics
import NIOCore
import PostgresNIO
import ServiceLifecycle
import Synchronization
import _ConnectionPoolModule

/// Baton's connections to PostgreSQL: PostgresNIO's connection pool, fed by a
/// ``DatabaseConnector`` (several hosts, `target_session_attrs`, TLS host names as libpq checks
/// them), that answers at once while the database is away, is replaced the moment the database
/// is back, and looks for the writable server again when the one it had starts refusing writes.
///
/// Run it in the `ServiceGroup` before the services that use it:
///
/// ```swift
/// let pool = DatabasePool(configuration: database, logger: logger)
/// let worker = Worker(pool: pool, tasks: tasks, logger: logger)
/// try await ServiceGroup(services: [pool, worker], gracefulShutdownSignals: [.sigterm], logger: logger).run()
/// ```
///
/// Why not PostgresNIO's pool alone: while the database cannot be reached, PostgresNIO 1.33's pool
/// - keeps a statement waiting for a connection for as long as the outage lasts, for its first
///   minute (then its circuit breaker fails every statement at once);
/// - tries one connection at a time, 100 ms × 1.25ⁿ apart up to a minute, none of it configurable:
///   after an outage of a minute it goes on failing for up to 13 s after the database is back,
///   after five minutes for up to a minute.
///
/// So this pool watches (its decisions are ``PoolStateMachine``'s). A statement that has waited ``patience`` for a connection asks whether
/// the database accepts connections: one probe connection answers everyone who asks meanwhile. If
/// it does not, the statement fails as ``DatabaseUnavailable`` (the control plane's 503 with
/// `Retry-After`, a retry in the worker's loops); statements keep being given a connection for
/// ``patience`` in case the pool still holds live ones. While the database is away, the probe
/// tries again every ``probeInterval``; on its first success a fresh pool takes over and the old
/// one is closed (a statement still waiting in it is asked again of the new one), unless the old
/// one served a statement meanwhile: then only new connections were refused.
///
/// A failover: the primary goes away (a probe then finds the promoted standby among the hosts),
/// or it stays up but refuses writes (SQLSTATE 25006: demoted, fenced read-only). That statement
/// fails as ``DatabaseUnavailable``, and the pool is replaced at once: its connections all went
/// to the server that now only reads, and the new pool's connector skips it.
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

    /// Opens every connection: the pools', the probe's.
    private let connector: DatabaseConnector

    public init(configuration: DatabaseConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        let connector = DatabaseConnector(configuration: configuration)
        self.connector = connector
        self.state = Mutex(
            State(
                machine: PoolStateMachine(patience: Self.patience),
                current: Generation(connector: connector, logger: logger, number: 1)))
        (events, eventSink) = AsyncStream.makeStream()
    }

    /// Whether the database refused or did not answer a new connection the last time the pool
    /// tried one (it tries while a statement waits for a connection, and every ``probeInterval``
    /// while this is true).
    public var isDatabaseAway: Bool { state.withLock { $0.machine.away != nil } }

    // MARK: running

    public func run() async {
        let first = state.withLock { $0.current }
        await withDiscardingTaskGroup { group in
            // Immediate: the pool's `run()` is entered before anyone leases (PostgresNIO warns
            // about a lease before it), as long as this `run()` was entered so too.
            group.addImmediateTask { await first.run() }
            await withGracefulShutdownHandler {
                for await event in events {
                    switch event {
                    case .probe: group.addTask { await self.probeUntilReachable() }
                    case .reachable: reconnected(in: &group)
                    case .readOnly(let number): replace(number, in: &group)
                    }
                }
            } onGracefulShutdown: {
                self.eventSink.finish()
            }
            group.cancelAll()
        }
        for waiter in state.withLock({ $0.machine.close() }) { waiter.resume(returning: false) }
    }

    /// A probe connected: after an outage, a new pool (``PoolStateMachine/probeSucceeded(now:poolIdle:)``
    /// says when), running before it is handed out, then the old one closed.
    private func reconnected(in group: inout DiscardingTaskGroup) {
        let (decision, old) = state.withLock { state in
            let idle =
                state.current.leased.load(ordering: .relaxed) == 0
                && !state.current.servedWhileAway.load(ordering: .relaxed)
            return (state.machine.probeSucceeded(now: .now, poolIdle: idle), state.current)
        }
        if let number = decision.newGeneration {
            let new = Generation(connector: connector, logger: logger, number: number)
            group.addImmediateTask { await new.run() }
            state.withLock { $0.current = new }
            old.retire()
        }
        for waiter in decision.waiters { waiter.resume(returning: true) }
        if let away = decision.away {
            logger.notice(
                "the database is back",
                metadata: [
                    "away_for": "\(away.since.duration(to: .now))",
                    "pool": "\(decision.newGeneration.map { "new pool \($0)" } ?? "kept; it still served")",
                ])
        }
    }

    /// After a write refused for read-only: a new pool, whose connector skips the server that only
    /// reads now, unless pool `number` was already replaced.
    private func replace(_ number: Int, in group: inout DiscardingTaskGroup) {
        guard let next = state.withLock({ $0.machine.serverOnlyReads(generation: number) }) else { return }
        let new = Generation(connector: connector, logger: logger, number: next)
        group.addImmediateTask { await new.run() }
        let old = state.withLock { state in
            defer { state.current = new }
            return state.current
        }
        old.retire()
        logger.warning(
            "the database server only reads now (a standby, or a primary demoted by a failover); connecting again",
            metadata: [
                "database": "\(configuration.displayAddress)",
                "target_session_attrs": "\(configuration.targetSessionAttributes.rawValue)",
            ])
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
            try await connection.transaction(logger: logger ?? self.logger) { try await body($0) }
        }
    }

    /// Runs `query`, which may change data, on a pooled connection and returns all its rows once
    /// its transaction has committed (``PostgresConnection/execute(_:logger:)``).
    @discardableResult
    package func execute(_ query: PostgresQuery, logger: Logger? = nil) async throws -> [PostgresRow] {
        try await withConnection { connection in try await connection.execute(query, logger: logger ?? self.logger) }
    }

    /// Runs `query`, which changes nothing, and returns all its rows
    /// (``PostgresConnection/read(_:logger:)``: no commit to confirm).
    ///
    /// PostgresNIO's pool learns that a connection closed (terminated by the server, a restart) only
    /// as it handles the close, and may lease it once more meanwhile: the statement then fails
    /// unsent (``DatabaseUnavailable/closed``). A read is asked again on another connection, as
    /// many times as the pool has connections, rather than answering a 503 for a database that is
    /// there (ReconnectTests, whose connections are all killed ten times a second, met it).
    package func read(_ query: PostgresQuery, logger: Logger) async throws -> [PostgresRow] {
        var tries = 0
        while true {
            do {
                return try await withConnection { connection in try await connection.read(query, logger: logger) }
            } catch let error as DatabaseUnavailable where error.unsent && tries < configuration.maximumConnections {
                tries += 1
            }
        }
    }

    /// Calls a procedure that commits before it answers (``PostgresConnection/call(_:logger:)``).
    package func call(_ query: PostgresQuery, logger: Logger) async throws -> [PostgresRow] {
        try await withConnection { connection in try await connection.call(query, logger: logger) }
    }

    /// Fails as ``DatabaseUnavailable`` unless the server the pool's connections go to takes
    /// writes now (`/readyz`); one that only reads makes the pool look for the writable one, as a
    /// refused write does.
    public func requireWritable(logger: Logger? = nil) async throws {
        try await withConnection { connection in
            let state = try await DatabaseConnector.serverState(of: connection, logger: logger ?? self.logger)
            if state.readOnly { throw ReadOnlyServer() }
        }
    }

    private func withConnection<Result: Sendable>(
        from generation: Generation, _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        let leased = Flag()
        let asked = ContinuousClock.now
        return try await withThrowingTaskGroup(of: Result?.self) { group in
            group.addTask {
                do {
                    return try await generation.pool.withConnection { connection in
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
                        } catch  where error.isReadOnlyServer {
                            generation.servedWhileAway.store(true, ordering: .relaxed)
                            throw self.readOnly(generation)
                        } catch {
                            generation.servedWhileAway.store(true, ordering: .relaxed)
                            throw error
                        }
                    }
                } catch let error as ConnectionPoolError where error == .requestCancelled {
                    throw CancellationError()
                } catch let error
                    where !leased.isSet && !(error is PSQLError || error is StoreError || error is CancellationError)
                {
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

    /// The failure of a statement refused for read-only; asks for a new pool when the connector
    /// would skip such a server (`target_session_attrs` asking for writes).
    private func readOnly(_ generation: Generation) -> DatabaseUnavailable {
        let target = configuration.targetSessionAttributes
        let reconnects = target == .readWrite || target == .primary
        if reconnects { eventSink.yield(.readOnly(generation: generation.number)) }
        return DatabaseUnavailable(
            description: "the database server only reads now (a standby, or a primary demoted by a failover)"
                + (reconnects ? "; looking for the writable one" : " (target_session_attrs=\(target.rawValue))"))
    }

    // MARK: watching the database

    /// Starts a probe unless one is under way or the database answered a moment ago.
    private func suspect() {
        if state.withLock({ $0.machine.connectionLost(now: .now) }) { eventSink.yield(.probe) }
    }

    /// nil if the database accepts connections now (probing, or trusting a probe of the last
    /// moment); else why not.
    private func awayNow() async -> String? {
        let id = state.withLock { $0.machine.makeWaiterID() }
        let reachable = await withTaskCancellationHandler {
            await withCheckedContinuation { (waiter: CheckedContinuation<Bool, Never>) in
                let answer = state.withLock { state -> PoolStateMachine.Answer in
                    Task.isCancelled ? .reachable : state.machine.ask(id, waiter: waiter, now: .now)
                }
                switch answer {
                case .reachable: waiter.resume(returning: true)
                case .away: waiter.resume(returning: false)
                case .wait(let startProbe): if startProbe { eventSink.yield(.probe) }
                }
            }
        } onCancel: {
            state.withLock { $0.machine.withdraw(id) }?.resume(returning: true)
        }
        if reachable { return nil }
        return state.withLock { $0.machine.away?.description } ?? "the pool has closed"
    }

    /// Waits `delay` before a loop tries a failed statement again, or less: until the database
    /// is back, if it is taken to be away now. A worker claims again within a ``probeInterval``
    /// of a failover or a restart, not at the end of a backoff grown during the outage.
    public func waitToRetry(after delay: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await Task.sleep(for: delay) }
            group.addTask {
                if await !self.waitForReturn() { try? await Task.sleep(for: delay) }
            }
            await group.next()
            group.cancelAll()
        }
    }

    /// Returns once a probe connects, true; false at once if the database is not taken to be away.
    private func waitForReturn() async -> Bool {
        let id = state.withLock { $0.machine.makeWaiterID() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (waiter: CheckedContinuation<Bool, Never>) in
                let waits = state.withLock { state in
                    !Task.isCancelled && state.machine.waitForReturn(id, waiter: waiter)
                }
                if !waits { waiter.resume(returning: false) }
            }
        } onCancel: {
            state.withLock { $0.machine.withdraw(id) }?.resume(returning: true)
        }
    }

    /// Connects, once per ``probeInterval``, until a server that will do answers.
    private func probeUntilReachable() async {
        while !Task.isCancelled {
            do {
                let connection = try await connector.connect(id: 0, logger: logger)
                try? await connection.close()
                eventSink.yield(.reachable)
                return
            } catch {
                let cause = DatabaseConfiguration.describe(error)
                let onlyReads = (error as? DatabaseConnector.NoServer)?.onlyWrongRoles == true
                let description =
                    onlyReads
                    ? "the database at \(configuration.displayAddress) only reads now (\(cause)): no server takes writes"
                    : "the database at \(configuration.displayAddress) cannot be reached: \(cause)"
                let (first, waiters) = state.withLock { state in
                    // Served since the last failed probe: a pool whose connections were still
                    // answering when the first probe failed (a fast shutdown terminates sessions
                    // after it refuses new ones) has not shown that it still serves.
                    state.current.servedWhileAway.store(false, ordering: .relaxed)
                    return state.machine.probeFailed(now: .now, description: description)
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
        /// Pool `generation`'s server refused a write: it only reads now.
        case readOnly(generation: Int)
    }

    /// A statement was waiting in a pool that has been replaced: ask the new one.
    private struct Replaced: Error {}

    private struct State {
        var machine: PoolStateMachine<CheckedContinuation<Bool, Never>>
        var current: Generation
    }

    typealias Pool = ConnectionPool<
        PostgresConnection, Int, ConnectionIDGenerator, ConnectionRequest<PostgresConnection>, Int, KeepAlive,
        NoOpConnectionPoolMetrics<Int>, ContinuousClock
    >

    /// One pool of connections, from its start to its retirement.
    private final class Generation: Sendable {
        let pool: Pool
        let number: Int
        /// Connections leased through Baton now.
        let leased = Atomic(0)
        /// Whether a connection was leased since the database was last found away.
        let servedWhileAway = Atomic(false)
        private let retired = Atomic(false)
        private let retirement: AsyncStream<Never>
        private let retirementSink: AsyncStream<Never>.Continuation

        init(connector: DatabaseConnector, logger: Logger, number: Int) {
            var configuration = ConnectionPoolConfiguration()
            configuration.maximumConnectionSoftLimit = connector.configuration.maximumConnections
            configuration.maximumConnectionHardLimit = connector.configuration.maximumConnections
            self.pool = Pool(
                configuration: configuration, keepAliveBehavior: KeepAlive(logger: logger),
                observabilityDelegate: NoOpConnectionPoolMetrics(connectionIDType: Int.self)
            ) { id, _ in
                ConnectionAndMetadata(
                    connection: try await connector.connect(id: id, logger: logger), maximalStreamsOnConnection: 1)
            }
            self.number = number
            (retirement, retirementSink) = AsyncStream.makeStream()
        }

        var isRetired: Bool { retired.load(ordering: .relaxed) }

        /// Runs the pool until it is retired or the task cancelled.
        func run() async {
            await withDiscardingTaskGroup { group in
                group.addImmediateTask { await self.pool.run() }
                for await _ in retirement {}
                group.cancelAll()
            }
        }

        /// Closes the pool: statements waiting in it fail (and are asked again elsewhere).
        func retire() {
            retired.store(true, ordering: .relaxed)
            retirementSink.finish()
        }
    }

    /// `SELECT 1` on a connection idle for 30 s, as PostgresNIO's own pool does: a connection a
    /// firewall dropped is found out before a statement needs it.
    struct KeepAlive: ConnectionKeepAliveBehavior {
        let logger: Logger
        var keepAliveFrequency: Duration? { .seconds(30) }
        func runKeepAlive(for connection: PostgresConnection) async throws {
            _ = try await connection.read("SELECT 1", logger: logger)
        }
    }
}

/// The server answered that it only reads (a standby, or `default_transaction_read_only`).
struct ReadOnlyServer: Error {}

/// Set once, read from other tasks.
private final class Flag: Sendable {
    private let value = Atomic(false)
    func set() { value.store(true, ordering: .relaxed) }
    var isSet: Bool { value.load(ordering: .relaxed) }
}
