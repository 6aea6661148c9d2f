import BatonPostgres
import Synchronization

/// The running attempts' timeouts, watched by one task: a heap of deadlines and one sleep until
/// the earliest. A sleeping child task per attempt cost a task, a timer and their cancellation on
/// every stage, about a tenth of a busy worker's CPU (docs/benchmarks.md, "One watch for every
/// timeout").
///
/// The sleeper is woken only when a deadline comes before the one it sleeps until: with timeouts
/// alike (the common case), each new deadline is later than those before it, and an attempt
/// costs an insertion and a removal in a heap as large as the attempts running.
final class Deadlines: Sendable {
    /// An attempt being watched: ``watch(_:until:)`` gives it, ``forget(_:)`` takes it back.
    struct Watch: Hashable, Sendable {
        fileprivate let id: UInt64
    }

    private struct State {
        var heap = DeadlineHeap<RunControl>()
        var nextID: UInt64 = 0
        /// When the sleeper wakes next of itself; nil while it waits for a deadline to come.
        var wakesAt: ContinuousClock.Instant?
    }

    private let state = Mutex(State())
    private let wake = Signal()

    /// Times `control`'s attempt out at `deadline` (``RunControl/timeOut(_:)``), unless forgotten
    /// first.
    func watch(_ control: RunControl, until deadline: ContinuousClock.Instant) -> Watch {
        let (watch, wakeSleeper) = state.withLock { state -> (Watch, Bool) in
            state.nextID += 1
            state.heap.insert(control, id: state.nextID, at: deadline)
            guard state.wakesAt.map({ deadline < $0 }) ?? true else { return (Watch(id: state.nextID), false) }
            state.wakesAt = deadline
            return (Watch(id: state.nextID), true)
        }
        if wakeSleeper { wake.signal() }
        return watch
    }

    /// Stops watching an attempt that ended (its deadline may have passed meanwhile: the control
    /// then knows, and the attempt's own id tells that signal apart from a later attempt's).
    func forget(_ watch: Watch) {
        state.withLock { _ = $0.heap.remove(watch.id) }
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
            for entry in expired { entry.value.timeOut(Watch(id: entry.id)) }
            if let next {
                await wake.wait(timeout: next - now)
            } else {
                await wake.wait()
            }
        }
    }
}

/// A binary min-heap of values by deadline, each with an id by which it can be removed in
/// O(log n) (`positions` says where each id sits).
struct DeadlineHeap<Value: Sendable>: Sendable {
    struct Entry: Sendable {
        let deadline: ContinuousClock.Instant
        let id: UInt64
        let value: Value
    }

    private var heap: [Entry] = []
    private var positions: [UInt64: Int] = [:]

    var count: Int { heap.count }
    /// The entry with the earliest deadline.
    var first: Entry? { heap.first }

    mutating func insert(_ value: Value, id: UInt64, at deadline: ContinuousClock.Instant) {
        heap.append(Entry(deadline: deadline, id: id, value: value))
        positions[id] = heap.count - 1
        siftUp(heap.count - 1)
    }

    /// Removes the entry `id`, if it is here.
    @discardableResult
    mutating func remove(_ id: UInt64) -> Entry? {
        guard let index = positions.removeValue(forKey: id) else { return nil }
        let entry = heap[index]
        let last = heap.removeLast()
        if index < heap.count {
            heap[index] = last
            positions[last.id] = index
            siftDown(index)
            siftUp(index)
        }
        return entry
    }

    /// Removes and returns the entries due by `instant`, earliest first.
    mutating func removeAll(through instant: ContinuousClock.Instant) -> [Entry] {
        var due: [Entry] = []
        while let first = heap.first, first.deadline <= instant, let entry = remove(first.id) {
            due.append(entry)
        }
        return due
    }

    private mutating func swapAt(_ a: Int, _ b: Int) {
        heap.swapAt(a, b)
        positions[heap[a].id] = a
        positions[heap[b].id] = b
    }

    private mutating func siftUp(_ index: Int) {
        var child = index
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].deadline < heap[parent].deadline else { return }
            swapAt(child, parent)
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
            swapAt(parent, first)
            parent = first
        }
    }
}
