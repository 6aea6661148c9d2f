import BatonPostgres
import Testing

/// The wake-up primitive the worker's loops wait on.
@Suite struct WakeUpTests {
    /// A signal given before anyone waits is kept for the next wait; several coalesce into one.
    @Test func aSignalBeforeTheWaitIsNotLostAndSignalsCoalesce() async {
        let signal = WakeUp()
        signal.signal()
        signal.signal()
        let clock = ContinuousClock()
        let first = await clock.measure { await signal.wait(timeout: .seconds(30)) }
        #expect(first < .seconds(5))
        let second = await clock.measure { await signal.wait(timeout: .milliseconds(100)) }
        #expect(second >= .milliseconds(100), "the two signals were one")
    }

    /// A waiter is woken by a signal from another task.
    @Test func aWaiterIsWokenBySignal() async {
        let signal = WakeUp()
        let started = WakeUp()
        async let woken: Void = {
            started.signal()
            await signal.wait()
        }()
        await started.wait()
        signal.signal()
        await woken
    }

    /// Cancelling the waiting task ends the wait.
    @Test func cancellingTheWaiterEndsTheWait() async {
        let signal = WakeUp()
        let waiter = Task { await signal.wait() }
        waiter.cancel()
        await waiter.value
    }
}

/// Metric labels that callers choose stay bounded.
@Suite struct MetricLabelsTests {
    /// The first hundred names are labels of their own, later ones `other`; a name seen keeps its
    /// label.
    @Test func pastTheLimitNamesAreOther() {
        let labels = MetricLabels()
        for index in 0..<MetricLabels.limit { #expect(labels.label("queue-\(index)") == "queue-\(index)") }
        #expect(labels.label("one-too-many") == "other")
        #expect(labels.label("queue-7") == "queue-7")
        #expect(labels.label("another") == "other")
    }
}
