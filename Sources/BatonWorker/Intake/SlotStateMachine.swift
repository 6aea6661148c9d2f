/// The worker's slot accounting, as a value that takes events and returns what to do: how many
/// stages each queue may claim, when its fetch loop should look again, when a drain is over.
/// Pure (no clock, no locks, no I/O), in the manner of PostgresNIO's `PoolStateMachine`: ``Intake``
/// holds it under a lock and performs its actions.
///
/// Work enters a queue's slots through one door, ``received(_:queue:via:)``, whether the fetch loop
/// claimed it or an outcome batch handed a lane on to this worker. A slot is *busy* from the moment
/// a claim asks for it or a hand-over reserves it until its stage ends (a claim or reservation
/// that brings fewer jobs frees the rest), so that the two together never exceed the capacity.
struct SlotStateMachine: Sendable, Equatable {
    /// How jobs reached the worker.
    enum Delivery: Sendable, Equatable {
        /// The fetch loop asked for `asked` stages.
        case claim(asked: Int)
        /// An outcome batch claimed lane holders on `reserved` slots it had reserved.
        case handOver(reserved: Int)
    }

    /// What the fetch loop of a queue does next.
    enum FetchAction: Sendable, Equatable {
        /// Claim up to this many stages, then report with `received` or `claimFailed`.
        case claim(Int)
        /// Wait for a wake-up (or the poll interval).
        case wait
        /// The queue drains: claim no more, ever.
        case stop
    }

    /// What to do after an event.
    enum Action: Sendable, Equatable {
        case none
        /// Wake this queue's fetch loop: it may claim (slots freed), or must stop (drain).
        case wakeFetcher(String)
        /// The drain is over: no stage runs, no claim or hand-over is under way. Said once.
        case finish
    }

    struct Queue: Sendable, Equatable {
        let capacity: Int
        /// Free slots that make a refill worth a claim: a quarter of them, not slot by slot.
        let refill: Int
        /// Slots taken: stages received and not ended, plus slots asked for by the claim under way
        /// or reserved for hand-overs.
        var busy = 0
        /// Reservations made and not yet delivered.
        var reservations = 0
        /// The slots asked for by the claim under way, if one is.
        var claiming: Int?
        /// The queue may hold more than the last claim took.
        var backlog = true
        /// No more claims or reservations.
        var draining = false

        init(capacity: Int) {
            self.capacity = max(1, capacity)
            self.refill = max(1, self.capacity / 4)
        }

        var free: Int { capacity - busy }
        var idle: Bool { busy == 0 && reservations == 0 && claiming == nil }
    }

    private(set) var queues: [String: Queue]
    /// The whole worker drains (every queue), and waits to be told when nothing is left.
    private(set) var stopping = false
    private(set) var finished = false

    init(capacities: [String: Int]) {
        queues = capacities.mapValues(Queue.init(capacity:))
    }

    /// Whether stages of `queue` should not hop to the next one here: the worker is leaving.
    func isDraining(_ queue: String) -> Bool {
        stopping || queues[queue]?.draining ?? true
    }

    /// The fetch loop of `queue` asks what to do.
    mutating func fetch(_ queue: String) -> FetchAction {
        guard var slots = queues[queue], !slots.draining else { return .stop }
        precondition(slots.claiming == nil, "one fetch loop per queue")
        guard slots.backlog, slots.free > 0 else { return .wait }
        let asked = slots.free
        slots.claiming = asked
        slots.busy += asked
        queues[queue] = slots
        return .claim(asked)
    }

    /// Jobs are (or may be) available in `queue`.
    mutating func wake(_ queue: String) -> Action {
        guard queues[queue] != nil else { return .none }
        queues[queue]!.backlog = true
        return .wakeFetcher(queue)
    }

    /// Jobs arrived, by claim or hand-over: they all start (they are this worker's in the database,
    /// even while it drains).
    mutating func received(_ count: Int, queue: String, via delivery: Delivery) -> Action {
        guard var slots = queues[queue] else { preconditionFailure("unknown queue \(queue)") }
        switch delivery {
        case .claim(let asked):
            precondition(slots.claiming == asked && count <= asked, "a claim reported that was not asked for")
            slots.claiming = nil
            slots.busy -= asked - count
            slots.backlog = count == asked
        case .handOver(let reserved):
            precondition(slots.reservations > 0 && count <= reserved, "a hand-over beyond its reservation")
            slots.reservations -= 1
            slots.busy -= reserved - count
            // Slots reserved and not used are free again: a fetch loop that found none while
            // they were reserved waits for them, as for a stage that ended.
            if count < reserved, !slots.draining, !stopping, slots.backlog, slots.claiming == nil,
                slots.free >= slots.refill
            {
                queues[queue] = slots
                return .wakeFetcher(queue)
            }
        }
        queues[queue] = slots
        return finishIfDone()
    }

    /// The claim asked for by `fetch` failed; nothing arrived.
    mutating func claimFailed(_ queue: String) -> Action {
        guard let asked = queues[queue]?.claiming else { preconditionFailure("no claim under way in \(queue)") }
        queues[queue]!.claiming = nil
        queues[queue]!.busy -= asked
        return finishIfDone()
    }

    /// Reserves up to `count` free slots of `queue` for lane holders an outcome batch may hand over;
    /// returns how many. Report what came with `received(_:queue:via: .handOver(reserved:))`.
    mutating func reserve(_ count: Int, in queue: String) -> Int {
        guard var slots = queues[queue], !slots.draining, !stopping else { return 0 }
        let reserved = max(0, min(count, slots.free))
        guard reserved > 0 else { return 0 }
        slots.busy += reserved
        slots.reservations += 1
        queues[queue] = slots
        return reserved
    }

    /// A stage of `queue` (with the hops after it) has ended and its outcome is submitted.
    mutating func stageEnded(in queue: String) -> Action {
        guard var slots = queues[queue], slots.busy > 0 else { preconditionFailure("no stage running in \(queue)") }
        slots.busy -= 1
        queues[queue] = slots
        if slots.draining || stopping { return finishIfDone() }
        return slots.backlog && slots.free >= slots.refill ? .wakeFetcher(queue) : .none
    }

    /// `queue` stops claiming and reserving; its fetch loop is woken to see it.
    mutating func drain(_ queue: String) -> Action {
        guard queues[queue] != nil else { return .none }
        queues[queue]!.draining = true
        return .wakeFetcher(queue)
    }

    /// Every queue drains, and `finish` is said once nothing runs or is on its way.
    mutating func drainAll() -> Action {
        for queue in queues.keys { queues[queue]!.draining = true }
        stopping = true
        return finishIfDone()
    }

    private mutating func finishIfDone() -> Action {
        guard stopping, !finished, queues.values.allSatisfy(\.idle) else { return .none }
        finished = true
        return .finish
    }
}
