import BatonPostgres
import Synchronization

/// The running attempts' timeouts, watched by one task: a heap of deadlines and one sleep until
/// the earliest. A sleeping child task per attempt cost a task, a timer and their cancellation on
/// every stage (docs/benchmarks.md#watching-attempts-timeouts).
///
/// The sleeper is woken only when a deadline comes before the one it sleeps until: with timeouts
/// alike (the common case), each new deadline is later than those before it, and an attempt
/// costs an insertion that stops at the bottom of the heap and a removal that marks its entry.
final class Deadlines: Sendable {
    /// An attempt being watched: ``watch(_:until:)`` gives it, ``forget(_:)`` takes it back.
    struct Watch: Equatable, Sendable {
        fileprivate let entry: DeadlineHeap<RunControl>.Entry

        static func == (lhs: Watch, rhs: Watch) -> Bool { lhs.entry === rhs.entry }
    }

    private struct State {
        var heap = DeadlineHeap<RunControl>()
        /// When the sleeper wakes next of itself; nil while it waits for a deadline to come.
        var wakesAt: ContinuousClock.Instant?
    }

    private let state = Mutex(State())
    private let wake = WakeUp()

    /// Times `control`'s attempt out at `deadline` (``RunControl/timeOut(_:)``), unless forgotten
    /// first (``RunControl/attempt(until:watchedBy:_:)`` does both).
    func watch(_ control: RunControl, until deadline: ContinuousClock.Instant) -> Watch {
        let (watch, wakeSleeper) = state.withLock { state -> (Watch, Bool) in
            let watch = Watch(entry: state.heap.insert(control, at: deadline))
            guard state.wakesAt.map({ deadline < $0 }) ?? true else { return (watch, false) }
            state.wakesAt = deadline
            return (watch, true)
        }
        if wakeSleeper { wake.signal() }
        return watch
    }

    /// Stops watching an attempt that ended (should its deadline have passed meanwhile, the
    /// control ignores a watch that is not its running attempt's).
    func forget(_ watch: Watch) {
        state.withLock { _ = $0.heap.remove(watch.entry) }
    }

    /// How many attempts are watched.
    var count: Int { state.withLock { $0.heap.count } }

    /// Times out each attempt whose deadline passed, then sleeps until the next deadline or until
    /// an earlier one is set; returns when cancelled.
    func run() async {
        while !Task.isCancelled {
            let now = ContinuousClock.now
            let (expired, next) = state.withLock { state in
                let expired = state.heap.removeAll(through: now)
                state.wakesAt = state.heap.first?.deadline
                return (expired, state.wakesAt)
            }
            for entry in expired { entry.value.timeOut(Watch(entry: entry)) }
            if let next {
                await wake.wait(timeout: next - now)
            } else {
                await wake.wait()
            }
        }
    }
}

/// A binary min-heap of values by deadline, whose removals are lazy: a removed entry is marked
/// and stays until it comes to the top or removed entries make up half the heap, when the heap is
/// rebuilt without them. Timeouts alike give deadlines in the order attempts start, so an
/// insertion stops at once at the bottom; a removal then costs a mark, and the rebuilds, each of
/// the entries left, a constant per removal. (Removing in place, each entry knowing where it sat,
/// sifted down from where the attempt ended at every stage: a measurable part of a busy worker's
/// CPU; docs/benchmarks.md#watching-attempts-timeouts.) Entries are shared with whoever holds them,
/// so a heap has one owner, which serialises every use of it and its entries.
struct DeadlineHeap<Value: Sendable>: @unchecked Sendable {
    final class Entry: @unchecked Sendable {
        let deadline: ContinuousClock.Instant
        let value: Value
        /// Removed, or taken out as due: no longer the heap's.
        fileprivate(set) var isRemoved = false

        fileprivate init(deadline: ContinuousClock.Instant, value: Value) {
            self.deadline = deadline
            self.value = value
        }
    }

    private var heap: [Entry] = []
    /// Entries in `heap` marked removed.
    private var removed = 0

    /// The entries not removed.
    var count: Int { heap.count - removed }

    /// The entry with the earliest deadline.
    var first: Entry? {
        mutating get {
            dropRemovedAtTop()
            return heap.first
        }
    }

    mutating func insert(_ value: Value, at deadline: ContinuousClock.Instant) -> Entry {
        let entry = Entry(deadline: deadline, value: value)
        heap.append(entry)
        siftUp(heap.count - 1)
        return entry
    }

    /// Removes `entry`; false if it was removed (or taken out as due) before.
    @discardableResult
    mutating func remove(_ entry: Entry) -> Bool {
        guard !entry.isRemoved else { return false }
        entry.isRemoved = true
        removed += 1
        if removed > 32, removed * 2 > heap.count { rebuild() }
        return true
    }

    /// Removes and returns the entries due by `instant`, earliest first.
    mutating func removeAll(through instant: ContinuousClock.Instant) -> [Entry] {
        var due: [Entry] = []
        while let first = self.first, first.deadline <= instant {
            popTop()
            first.isRemoved = true
            due.append(first)
        }
        return due
    }

    private mutating func dropRemovedAtTop() {
        while let top = heap.first, top.isRemoved {
            popTop()
            removed -= 1
        }
    }

    private mutating func popTop() {
        let last = heap.removeLast()
        guard !heap.isEmpty else { return }
        heap[0] = last
        siftDown(0)
    }

    /// The heap again without its removed entries (Floyd's construction: linear in its size).
    private mutating func rebuild() {
        heap.removeAll { $0.isRemoved }
        removed = 0
        for index in stride(from: heap.count / 2 - 1, through: 0, by: -1) { siftDown(index) }
    }

    private mutating func siftUp(_ index: Int) {
        var child = index
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].deadline < heap[parent].deadline else { return }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ index: Int) {
        var parent = index
        while true {
            let (left, right) = (2 * parent + 1, 2 * parent + 2)
            var first = parent
            if left < heap.count, heap[left].deadline < heap[first].deadline { first = left }
            if right < heap.count, heap[right].deadline < heap[first].deadline { first = right }
            guard first != parent else { return }
            heap.swapAt(parent, first)
            parent = first
        }
    }
}
