import Testing

@testable import BatonWorker

/// The one watch over every running attempt's timeout (``Deadlines``) and its heap.
@Suite(.timeLimit(.minutes(1)))
struct DeadlinesTests {
    /// Whatever was inserted and removed, what is left comes out earliest first, each once.
    @Test func theHeapGivesWhatIsLeftEarliestFirst() {
        var heap = DeadlineHeap<Int>()
        let start = ContinuousClock.now
        var left: [Int: DeadlineHeap<Int>.Entry] = [:]
        var random = SystemRandomNumberGenerator()
        for value in 1...2000 {
            let deadline = start + .milliseconds(Int.random(in: 0..<500, using: &random))
            left[value] = heap.insert(value, at: deadline)
            if Bool.random(using: &random), let gone = left.keys.randomElement(using: &random) {
                let (removed, again) = (heap.remove(left[gone]!), heap.remove(left[gone]!))
                #expect(removed && !again)
                left[gone] = nil
            }
        }
        #expect(heap.count == left.count)
        let early = heap.removeAll(through: start + .milliseconds(250))
        let late = heap.removeAll(through: start + .seconds(1))
        #expect(early.allSatisfy { $0.deadline <= start + .milliseconds(250) })
        #expect(late.allSatisfy { $0.deadline > start + .milliseconds(250) })
        let out = early + late
        #expect(out.map(\.deadline) == out.map(\.deadline).sorted())
        #expect(Set(out.map(\.value)) == Set(left.keys) && out.count == left.count)
        #expect(heap.count == 0)
    }

    /// A deadline earlier than the one the watch sleeps until wakes it, and cancels its attempt's
    /// task; an attempt that ended is forgotten and never timed out; each attempt of a run has
    /// its own deadline; a stop cancels the attempt running, before it starts or after.
    @Test func anEarlierDeadlineCancelsItsAttemptAndAnEndedOneIsForgotten() async throws {
        let deadlines = Deadlines()
        let watching = Task { await deadlines.run() }
        defer { watching.cancel() }
        /// An attempt that ends only when cancelled: whether it was, and whether by its deadline.
        func hang(_ control: RunControl, for duration: Duration) async -> (cancelled: Bool, timedOut: Bool) {
            let (cancelled, timedOut) = await control.attempt(until: .now + duration, watchedBy: deadlines) {
                (try? await Task.sleep(for: .seconds(3600))) == nil
            }
            return (cancelled, timedOut)
        }
        let (patient, quick, hurried) = (RunControl(), RunControl(), RunControl())
        async let stopped = hang(patient, for: .seconds(3600))
        let ended = await quick.attempt(until: .now + .seconds(3600), watchedBy: deadlines) { 7 }
        #expect(ended.value == 7 && !ended.timedOut)
        let first = await hang(hurried, for: .milliseconds(50))
        #expect(first.cancelled && first.timedOut)
        // The same run's next attempt has a deadline of its own.
        let next = await hang(hurried, for: .milliseconds(10))
        #expect(next.cancelled && next.timedOut)
        patient.stop(.cancelled)
        let stop = await stopped
        #expect(stop.cancelled && !stop.timedOut)
        let late = RunControl()
        late.stop(.cancelled)
        let never = await hang(late, for: .seconds(3600))
        #expect(never.cancelled && !never.timedOut)
        #expect(deadlines.count == 0)
    }
}
