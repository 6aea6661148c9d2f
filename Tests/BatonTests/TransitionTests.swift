import Baton
import Testing

/// `Transition.decide` for every kind of outcome and every kind of next stage.
struct TransitionTests {
    let background = StageSpec.task("work", retry: .constant(.seconds(2), attempts: 3))
    let laned = StageSpec.task("deliver", lane: "customer-1")
    let group = StageSpec.group([.task("a"), .task("b")])

    func decide(_ outcome: StageOutcome, next: StageSpec?, attempt: Int = 1, canHop: Bool = true) -> Transition {
        Transition.decide(
            chain: [background] + (next.map { [$0] } ?? []), stage: 0, attempt: attempt, outcome: outcome,
            canHop: { _ in canHop }, random: 0.5)
    }

    @Test func successOfTheLastStageCompletesTheJob() {
        #expect(decide(.succeeded(output: "1"), next: nil) == .complete(output: "1"))
    }

    @Test func successBeforeABackgroundStageHopsWhenAllowed() {
        #expect(decide(.succeeded(output: "1"), next: background) == .hop(output: "1"))
        #expect(decide(.succeeded(output: "1"), next: background, canHop: false) == .advance(output: "1", lane: nil))
    }

    /// A rate-limited stage starts with a token, which only a claim takes: never a hop.
    @Test func successBeforeARateLimitedStageGoesThroughTheQueue() {
        let limited = StageSpec.task("call", rate: "partner")
        #expect(decide(.succeeded(output: "1"), next: limited) == .advance(output: "1", lane: nil))
    }

    @Test func successBeforeAnOrderedStageEntersItsLaneEvenWhenHopIsAllowed() {
        #expect(decide(.succeeded(output: "1"), next: laned) == .advance(output: "1", lane: "customer-1"))
        #expect(
            decide(.succeeded(output: "1"), next: laned, canHop: false) == .advance(output: "1", lane: "customer-1"))
    }

    @Test func successBeforeAGroupGoesThroughTheQueue() {
        #expect(decide(.succeeded(output: "1"), next: group) == .advance(output: "1", lane: nil))
    }

    @Test func aGroupStageFansOut() {
        #expect(decide(.fanOut, next: nil) == .spawn)
        #expect(decide(.fanOut, next: background) == .spawn)
    }

    @Test func aFailureIsRetriedByPolicyUntilTheLastAttempt() {
        #expect(
            decide(.failed(error: "e", retry: .byPolicy), next: nil, attempt: 1)
                == .retry(error: "e", delay: .seconds(2)))
        #expect(
            decide(.failed(error: "e", retry: .byPolicy), next: nil, attempt: 2)
                == .retry(error: "e", delay: .seconds(2)))
        #expect(decide(.failed(error: "e", retry: .byPolicy), next: nil, attempt: 3) == .discard(error: "e"))
        #expect(decide(.failed(error: "e", retry: .byPolicy), next: nil, attempt: 9) == .discard(error: "e"))
    }

    @Test func aPermanentFailureIsDiscardedAtOnce() {
        #expect(decide(.failed(error: "bad", retry: .never), next: background, attempt: 1) == .discard(error: "bad"))
    }

    @Test func aRequestedDelayIsHonouredAndCappedByTheBackoffMaximum() {
        let exponential = StageSpec.task("x", retry: .exponential(initial: .seconds(1), max: .seconds(10), attempts: 5))
        func decide(_ delay: Duration, attempt: Int = 1) -> Transition {
            Transition.decide(
                chain: [exponential], stage: 0, attempt: attempt, outcome: .failed(error: "429", retry: .after(delay)),
                canHop: { _ in true }, random: 0.5)
        }
        #expect(decide(.seconds(3)) == .retry(error: "429", delay: .seconds(3)))
        #expect(decide(.seconds(60)) == .retry(error: "429", delay: .seconds(10)))
        #expect(decide(.seconds(3), attempt: 5) == .discard(error: "429"))
        let pausing = Transition.decide(
            chain: [exponential], stage: 0, attempt: 1,
            outcome: .failed(error: "429", retry: .after(.seconds(60), pausingRateLimit: true)),
            canHop: { _ in true }, random: 0.5)
        #expect(pausing == .retry(error: "429", delay: .seconds(10), pauseRateLimit: true))
    }

    @Test func aSingleAttemptPolicyNeverRetries() {
        let once = StageSpec.task("x", retry: .none)
        let transition = Transition.decide(
            chain: [once], stage: 0, attempt: 1, outcome: .failed(error: "e", retry: .byPolicy), canHop: { _ in true },
            random: 0)
        #expect(transition == .discard(error: "e"))
    }

    @Test func aLostGroupStageIsRetried() {
        let transition = Transition.decide(
            chain: [group], stage: 0, attempt: 1, outcome: .failed(error: "worker lost", retry: .byPolicy),
            canHop: { _ in false }, random: 0.5)
        guard case .retry = transition else {
            Issue.record("expected a retry, got \(transition)")
            return
        }
    }
}

struct BackoffTests {
    @Test func exponentialDoublesFromInitialUpToTheCap() {
        let backoff = Backoff.exponential(initial: .milliseconds(100), max: .seconds(1), jitter: 0)
        let delays = (1...6).map { backoff.delay(afterAttempt: $0, random: 0.3).milliseconds }
        #expect(delays == [100, 200, 400, 800, 1000, 1000])
    }

    @Test func exponentialDoesNotOverflowOnHugeAttemptNumbers() {
        let backoff = Backoff.exponential(initial: .seconds(1), max: .seconds(600), jitter: 0)
        #expect(backoff.delay(afterAttempt: 10_000, random: 0) == .seconds(600))
    }

    @Test func linearGrowsByInitialUpToTheCap() {
        let backoff = Backoff.linear(initial: .seconds(1), max: .seconds(3))
        #expect(
            (1...5).map { backoff.delay(afterAttempt: $0, random: 0).milliseconds } == [1000, 2000, 3000, 3000, 3000])
    }

    @Test func constantStaysPut() {
        let backoff = Backoff.constant(.milliseconds(250))
        #expect((1...3).map { backoff.delay(afterAttempt: $0, random: 0.9).milliseconds } == [250, 250, 250])
    }

    @Test func jitterSpreadsWithinItsBand() {
        let backoff = Backoff.exponential(initial: .seconds(10), max: .seconds(10), jitter: 0.2)
        #expect(backoff.delay(afterAttempt: 1, random: 0) == .seconds(8))
        #expect(backoff.delay(afterAttempt: 1, random: 0.5) == .seconds(10))
        #expect(backoff.delay(afterAttempt: 1, random: 1) == .seconds(12))
    }
}
