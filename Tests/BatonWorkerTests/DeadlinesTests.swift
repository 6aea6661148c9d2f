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
    /// task; a forgotten attempt is never timed out; each attempt's timeout is told apart from
    /// another's on the same run, and a stop cancels the attempt running.
    @Test func anEarlierDeadlineCancelsItsAttemptAndAForgottenOneNeverFires() async throws {
        let deadlines = Deadlines()
        let watching = Task { await deadlines.run() }
        defer { watching.cancel() }
        /// Runs an attempt that ends only when cancelled.
        func hang(_ control: RunControl, _ watch: Deadlines.Watch) async -> Bool {
            await control.attempt(watch) { (try? await Task.sleep(for: .seconds(3600))) == nil }
        }
        let (patient, forgotten, hurried) = (RunControl(), RunControl(), RunControl())
        let far = deadlines.watch(patient, until: .now + .seconds(3600))
        let dropped = deadlines.watch(forgotten, until: .now + .milliseconds(20))
        deadlines.forget(dropped)
        let near = deadlines.watch(hurried, until: .now + .milliseconds(50))
        #expect(await hang(hurried, near))
        #expect(hurried.hasTimedOut(near) && !hurried.hasTimedOut(far))
        #expect(!forgotten.hasTimedOut(dropped))
        #expect(!patient.hasTimedOut(far))
        // The same run's next attempt has a deadline of its own.
        let next = deadlines.watch(hurried, until: .now + .milliseconds(10))
        #expect(await hang(hurried, next))
        #expect(hurried.hasTimedOut(next) && !hurried.hasTimedOut(near))
        // A stop cancels the attempt, however far its deadline, whether it came before the attempt
        // started or after.
        async let stopped = hang(patient, far)
        patient.stop(.cancelled)
        #expect(await stopped)
        #expect(!patient.hasTimedOut(far))
        deadlines.forget(far)
        #expect(deadlines.count == 0)
    }
}
