import Logging

/// Checks once, when the listener first connects, that a notification sent through the pool
/// reaches it, and warns with the fix when it does not.
///
/// Through PgBouncer in transaction mode, LISTEN runs on a server connection PgBouncer hands to
/// someone else after the statement: notifications then never arrive, and every wake-up waits for
/// the workers' poll and every `?wait=` for its fallback (PgBouncer logs it; nothing of Baton's
/// did). The fix is `database.listen-url` naming PostgreSQL itself.
package struct ListenCheck: Sendable {
    let listener: Listener
    let waker: Waker
    let logger: Logger
    /// How long the check may take to come back before it is judged lost.
    let patience: Duration

    package init(listener: Listener, waker: Waker, logger: Logger, patience: Duration = .seconds(3)) {
        self.listener = listener
        self.waker = waker
        self.logger = logger
        self.patience = patience
    }

    /// Whether the check came back; nil if cancelled first. Waits for the listener's first
    /// connection, however long the database is away.
    @discardableResult
    package func run() async -> Bool? {
        let nonce = String(UInt64.random(in: 1...UInt64.max), radix: 36)
        let (events, sink) = AsyncStream.makeStream(of: Listener.Event.self)
        let subscription = listener.subscribe { sink.yield($0) }
        defer {
            subscription.cancel()
            sink.finish()
        }
        var iterator = events.makeAsyncIterator()
        if !listener.isListening {
            while let event = await iterator.next(), event != .listening {}
        }
        guard !Task.isCancelled else { return nil }
        waker.probe(nonce)
        return await withTaskGroup(of: Void.self) { group in
            // The end of patience, as an event of its own.
            group.addTask {
                try? await Task.sleep(for: patience)
                sink.yield(.probe(""))
            }
            defer { group.cancelAll() }
            while let event = await iterator.next() {
                switch event {
                case .probe(nonce):
                    logger.debug("notifications sent through the pool reach the LISTEN connection")
                    return true
                case .probe(""):
                    logger.warning(
                        "notifications sent through the pool do not reach the LISTEN connection: is database.url a PgBouncer in transaction mode? Set database.listen-url to PostgreSQL itself; until then wake-ups wait for the poll and ?wait= answers for their fallback",
                        metadata: [
                            "waited": "\(patience)", "database": "\(listener.configuration.displayAddress)",
                            "listening": "\(listener.configuration.listenDisplayAddress)",
                        ])
                    return false
                default:
                    continue
                }
            }
            return nil
        }
    }
}
