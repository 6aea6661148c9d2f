import Logging
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// Listens on Baton's channel over a connection of its own and hands each event to subscribers.
/// Reconnects with backoff when the connection drops; after each (re)connect subscribers get
/// `.listening`, since notifications sent meanwhile are lost and state must be read again.
package final class Listener: Service, Sendable {
    package enum Event: Sendable, Hashable {
        /// Jobs became available in this queue.
        case available(queue: String)
        /// This job was cancelled; stop running it.
        case cancel(jobID: Int64)
        /// This watched job finished.
        case finished(jobID: Int64)
        /// The listener is (again) connected: anything may have happened meanwhile.
        case listening
        /// A delivery check came through (``ListenCheck``).
        case probe(String)
    }

    /// Ends a subscription when cancelled or deinitialised.
    package final class Subscription: Sendable {
        private let cancelAction: @Sendable () -> Void
        init(_ cancel: @escaping @Sendable () -> Void) { cancelAction = cancel }
        package func cancel() { cancelAction() }
        deinit { cancelAction() }
    }

    private struct State {
        var nextID = 0
        var handlers: [Int: @Sendable (Event) -> Void] = [:]
        var connected = false
    }

    let configuration: DatabaseConfiguration
    let channel: String
    let logger: Logger
    private let state = Mutex(State())
    /// To the LISTEN connection's servers (`database.listen-url`, else the pool's), the
    /// writable one: a standby refuses LISTEN.
    private let connector: DatabaseConnector

    package init(configuration: DatabaseConfiguration, logger: Logger) {
        self.configuration = configuration
        self.connector = DatabaseConnector(configuration: configuration, listening: true)
        self.channel = "\(configuration.schema)_events"
        self.logger = logger
    }

    /// Whether LISTEN is in effect now.
    package var isListening: Bool { state.withLock { $0.connected } }

    /// Calls `handler` for every event until the subscription ends. The handler must not block.
    package func subscribe(_ handler: @escaping @Sendable (Event) -> Void) -> Subscription {
        let id = state.withLock { state in
            state.nextID += 1
            state.handlers[state.nextID] = handler
            return state.nextID
        }
        return Subscription { [weak self] in
            _ = self?.state.withLock { $0.handlers.removeValue(forKey: id) }
        }
    }

    private func publish(_ event: Event) {
        let handlers = state.withLock { Array($0.handlers.values) }
        for handler in handlers { handler(event) }
    }

    static func parse(_ payload: String) -> Event? {
        let body = String(payload.dropFirst(2))
        switch payload.prefix(2) {
        case "q:": return .available(queue: body)
        case "c:": return Int64(body).map { .cancel(jobID: $0) }
        case "f:": return Int64(body).map { .finished(jobID: $0) }
        case "p:": return .probe(body)
        default: return nil
        }
    }

    package func run() async throws {
        await cancelWhenGracefulShutdown { await self.listenUntilCancelled() }
        state.withLock { $0.connected = false }
    }

    /// Reconnects at most a second apart, so that wake-ups and `?wait=` answers resume within
    /// about a second of the database's return; says so once per loss, not once per attempt.
    private func listenUntilCancelled() async {
        var backoff = Duration.milliseconds(100)
        var lost = false
        while !Task.isCancelled {
            do {
                let connection = try await connector.connect(id: 1, logger: logger)
                do {
                    try await connection.listen(on: channel) { notifications in
                        backoff = .milliseconds(100)
                        if lost { logger.notice("listener reconnected", metadata: ["channel": "\(channel)"]) }
                        lost = false
                        state.withLock { $0.connected = true }
                        logger.debug("listening", metadata: ["channel": "\(channel)"])
                        publish(.listening)
                        for try await notification in notifications {
                            if let event = Self.parse(notification.payload) { publish(event) }
                        }
                    }
                    try? await connection.close()
                } catch {
                    try? await connection.close()
                    throw error
                }
            } catch {
                if Task.isCancelled { break }
                logger.log(
                    level: lost ? .debug : .warning, "listener lost its connection; reconnecting",
                    metadata: [
                        "database": "\(configuration.listenDisplayAddress)", "error": "\(error.logDescription)",
                        "retry_in": "\(backoff)",
                    ])
                lost = true
            }
            state.withLock { $0.connected = false }
            try? await Task.sleep(for: backoff)
            backoff = min(backoff * 2, .seconds(1))
        }
    }
}
