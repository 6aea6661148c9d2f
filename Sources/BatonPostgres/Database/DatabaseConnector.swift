import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import Synchronization

/// Opens Baton's connections the way libpq does: the hosts of the connection string in order, each
/// within `connect_timeout`, TLS as `sslmode` says (``PostgresTLSChannel``), and the first server
/// that `target_session_attrs` accepts; `prefer-standby` takes a standby first, anything after.
///
/// Unlike libpq, the host that worked last is tried first (a pool's connections then all go to one
/// server, and the list is walked only when that one stops answering or changes its role); a
/// `prefer-standby` connection walks the list each time, so that a standby back from a restart is
/// preferred again.
package final class DatabaseConnector: Sendable {
    package let configuration: DatabaseConfiguration
    /// Which endpoints: the pool's, or the LISTEN connection's (``DatabaseConfiguration/listenEndpoints``).
    private let endpoints: [ConnectionString.Endpoint]
    private let lastGood = Mutex<Int?>(nil)

    package init(configuration: DatabaseConfiguration, listening: Bool = false) {
        self.configuration = configuration
        self.endpoints = listening ? configuration.listenEndpoints ?? configuration.endpoints : configuration.endpoints
    }

    /// No server of the list would do: each one's reason, in order.
    package struct NoServer: Error, CustomStringConvertible {
        package var failures: [(ConnectionString.Endpoint, String)]
        /// The errors behind the failures, where a server failed rather than had the wrong role.
        package var errors: [any Error] = []
        package var description: String {
            if failures.count == 1 { return failures[0].1 }
            return "no server would do: "
                + failures.map { "\($0.0): \($0.1)" }.joined(separator: "; ")
        }
        /// Whether every server answered but none had the role asked for (a standby and no primary yet).
        package var onlyWrongRoles = false
    }

    /// A connection to the first server that will do; throws ``NoServer`` with every host's reason.
    package func connect(id: Int, logger: Logger) async throws -> PostgresConnection {
        let target = configuration.targetSessionAttributes
        var order = Array(endpoints.indices)
        if target != .preferStandby, let first = lastGood.withLock({ $0 }) {
            order.removeAll { $0 == first }
            order.insert(first, at: 0)
        }
        var failures: [(ConnectionString.Endpoint, String)] = []
        var errors: [any Error] = []
        var wrongRoles = 0
        var fallback: (Int, PostgresConnection)?
        for index in order {
            let endpoint = endpoints[index]
            let connection: PostgresConnection
            do {
                connection = try await connect(to: endpoint, id: id, logger: logger)
            } catch {
                failures.append((endpoint, DatabaseConfiguration.describe(error)))
                errors.append(error)
                continue
            }
            guard target.needsCheck else {
                lastGood.withLock { $0 = index }
                return connection
            }
            do {
                let state = try await Self.serverState(of: connection, logger: logger)
                if target.accepts(state) {
                    if let (_, spare) = fallback { try? await spare.close() }
                    lastGood.withLock { $0 = index }
                    return connection
                }
                wrongRoles += 1
                failures.append((endpoint, target.refusal(state)))
                if target.hasSecondPass, fallback == nil {
                    fallback = (index, connection)
                } else {
                    try? await connection.close()
                }
            } catch {
                try? await connection.close()
                failures.append((endpoint, DatabaseConfiguration.describe(error)))
                errors.append(error)
            }
        }
        // prefer-standby's second pass: any server that answered (the first kept for it).
        if let (index, connection) = fallback {
            lastGood.withLock { $0 = index }
            return connection
        }
        var failure = NoServer(failures: failures, errors: errors)
        failure.onlyWrongRoles = wrongRoles == failures.count && wrongRoles > 0
        throw failure
    }

    /// A connection to `endpoint`, within `connect_timeout` from the first packet to the end of
    /// authentication.
    package func connect(to endpoint: ConnectionString.Endpoint, id: Int, logger: Logger) async throws
        -> PostgresConnection
    {
        let timeout = configuration.connectTimeout
        let eventLoop = MultiThreadedEventLoopGroup.singleton.any()
        var postgres: PostgresConnection.Configuration
        switch endpoint {
        case .socket:
            postgres = .init(
                unixSocketPath: endpoint.socketPath!, username: configuration.username,
                password: configuration.password, database: configuration.database)
            postgres.options.connectTimeout = TimeAmount(timeout)
        case .tcp(let host, let port):
            let start = ContinuousClock.now
            let plan = PostgresTLSChannel.Plan(
                attempt: configuration.tls.first, host: host, checkName: configuration.tls.mode == .verifyFull)
            let channel = try await PostgresTLSChannel.open(
                host: host, port: port, plan: plan, timeout: timeout, on: eventLoop)
            postgres = .init(
                establishedChannel: channel, username: configuration.username, password: configuration.password,
                database: configuration.database)
            // What is left of the timeout for the start-up and authentication.
            postgres.options.connectTimeout = TimeAmount(max(timeout - start.duration(to: .now), .milliseconds(1)))
        }
        postgres.options.additionalStartupParameters = [("application_name", configuration.applicationName)]
        // PostgresNIO traces every message it receives, rows included: what jobs hold stays out
        // of the log even at Baton's trace level.
        var quieter = logger
        quieter.logLevel = max(logger.logLevel, .debug)
        do {
            return try await PostgresConnection.connect(
                on: eventLoop, configuration: postgres, id: id, logger: quieter
            ).get()
        } catch let error as PSQLError {
            // PostgresNIO names the budget it was given, which for TCP is only what opening the
            // channel left of `connect_timeout` ("no answer within 0 s"): name the whole
            // (``connect(id:logger:)`` tells it as ``NoServer``).
            guard case .connectTimeout? = error.underlying as? ChannelError else { throw error }
            throw ChannelError.connectTimeout(TimeAmount(timeout))
        }
    }

    /// What the server says of itself: `pg_is_in_recovery()` and the new session's
    /// `transaction_read_only` (one statement, one round trip).
    package static func serverState(of connection: PostgresConnection, logger: Logger) async throws
        -> TargetSessionAttributes.ServerState
    {
        // `read`: a statement written to a connection that has just closed would wait forever
        // (PostgresConnection+CommitCheck.swift), and a new connection is often just closed here.
        let rows = try await connection.read(
            "SELECT pg_is_in_recovery(), current_setting('transaction_read_only') = 'on'", logger: logger)
        let (inRecovery, readOnly) = try rows[0].decode((Bool, Bool).self)
        return .init(inRecovery: inRecovery, readOnly: readOnly)
    }
}
