/// What ``DatabasePool`` decides, as a value that takes events and returns what to do: whether to
/// probe the database, what to tell statements waiting on a probe, when to put a new pool of
/// connections in place of the current one. Pure (no clock, no locks, no I/O), as PostgresNIO's
/// `PoolStateMachine` and Baton's `SlotStateMachine`: the pool holds it under its lock, gives it
/// the time with each event, and performs its actions. `Waiter` is whatever the pool resumes (a
/// continuation; a number in the tests).
///
/// The pool's generations are numbered from 1: each replacement makes the next.
struct PoolStateMachine<Waiter> {
    /// Why the database is taken to be away, and since when.
    struct Away: Equatable {
        var since: ContinuousClock.Instant
        var description: String
    }

    /// What a statement that waited ``DatabasePool/patience`` for a connection is told.
    enum Answer {
        /// The database accepts connections (or did a moment ago): go on waiting for one.
        case reachable
        /// It does not: fail now, with ``PoolStateMachine/away``'s description.
        case away
        /// Wait for the probe's answer (``probeSucceeded(now:poolIdle:)``,
        /// ``probeFailed(now:description:)``), starting one if `startProbe`.
        case wait(startProbe: Bool)
    }

    /// What a successful probe changes.
    struct Reconnected {
        /// Put a new pool, numbered so, in place of the current one (and retire that).
        var newGeneration: Int?
        /// The outage that ended, if the database was taken to be away.
        var away: Away?
        /// Resume each: the database accepts connections.
        var waiters: [Waiter]
    }

    /// How long a probe's success is trusted, and how long after one a connection lost starts none.
    let patience: Duration
    /// The generation whose connections statements get now.
    private(set) var generation = 1
    /// Set from the first failed probe to the next successful one.
    private(set) var away: Away?
    private(set) var closed = false
    private var lastReachable: ContinuousClock.Instant?
    private var probing = false
    private var nextWaiter = 0
    private var waiters: [Int: Waiter] = [:]
    /// Those waiting for the database to be back (``waitForReturn(_:waiter:)``), told by a
    /// successful probe only.
    private var returning: [Int: Waiter] = [:]

    init(patience: Duration) {
        self.patience = patience
    }

    /// A connection was lost, or the pool could not make one: start a probe, unless one is under
    /// way or the database answered a moment ago.
    mutating func connectionLost(now: ContinuousClock.Instant) -> Bool {
        if away == nil, answeredRecently(now) { return false }
        return startProbe()
    }

    /// The id of a statement about to ask (``ask(_:waiter:now:)``), to withdraw it by if cancelled.
    mutating func makeWaiterID() -> Int {
        nextWaiter += 1
        return nextWaiter
    }

    /// A statement that has waited ``patience`` for a connection asks whether the database is
    /// there at all. `waiter` is kept when the answer is `.wait`.
    mutating func ask(_ id: Int, waiter: Waiter, now: ContinuousClock.Instant) -> Answer {
        if closed || away != nil { return .away }
        if answeredRecently(now) { return .reachable }
        waiters[id] = waiter
        return .wait(startProbe: startProbe())
    }

    /// Someone (a worker's loop between two tries) waits for the database to be back: `waiter`
    /// is kept until a probe connects, unless the database is not taken to be away (false: go on).
    mutating func waitForReturn(_ id: Int, waiter: Waiter) -> Bool {
        guard away != nil, !closed else { return false }
        returning[id] = waiter
        return true
    }

    /// `id` stopped waiting (cancelled): its waiter, if it was still kept.
    mutating func withdraw(_ id: Int) -> Waiter? {
        waiters.removeValue(forKey: id) ?? returning.removeValue(forKey: id)
    }

    /// A probe could not connect (or found only servers of the wrong role). Returns whether the
    /// outage starts now (to be told once) and the waiters to resume with "away". The probe goes
    /// on, ``DatabasePool/probeInterval`` later.
    mutating func probeFailed(now: ContinuousClock.Instant, description: String) -> (
        outageStarts: Bool, waiters: [Waiter]
    ) {
        let starts = away == nil
        // The latest cause: "shutting down" at first, "connection refused" once it has.
        away = Away(since: away?.since ?? now, description: description)
        return (starts, takeWaiters())
    }

    /// A probe connected. After an outage, a new pool takes over, unless the current one is not
    /// `poolIdle` (it served a statement since the last failed probe, or has connections in use):
    /// it has not lost them all (the server refused only new connections, as when
    /// `max_connections` is reached), and its connections will do.
    mutating func probeSucceeded(now: ContinuousClock.Instant, poolIdle: Bool) -> Reconnected {
        var reconnected = Reconnected(away: away, waiters: takeWaiters() + takeReturning())
        if away != nil, poolIdle, !closed {
            generation += 1
            reconnected.newGeneration = generation
        }
        away = nil
        lastReachable = now
        probing = false
        return reconnected
    }

    /// Pool `failed`'s server refused a write for read-only. Returns the number of the pool to put
    /// in its place (its connector skips a server that only reads), nil if it was replaced already.
    mutating func serverOnlyReads(generation failed: Int) -> Int? {
        guard failed == generation, !closed else { return nil }
        generation += 1
        return generation
    }

    /// The pool shuts down: the waiters to resume with "away".
    mutating func close() -> [Waiter] {
        closed = true
        return takeWaiters() + takeReturning()
    }

    private func answeredRecently(_ now: ContinuousClock.Instant) -> Bool {
        guard let lastReachable else { return false }
        return lastReachable.duration(to: now) < patience
    }

    private mutating func startProbe() -> Bool {
        guard !probing, !closed else { return false }
        probing = true
        return true
    }

    private mutating func takeWaiters() -> [Waiter] {
        defer { waiters = [:] }
        return Array(waiters.values)
    }

    private mutating func takeReturning() -> [Waiter] {
        defer { returning = [:] }
        return Array(returning.values)
    }
}

extension PoolStateMachine: Sendable where Waiter: Sendable {}
