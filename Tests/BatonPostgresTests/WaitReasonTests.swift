import Baton
import Foundation
import Testing

@testable import BatonPostgres

/// `WaitReason.reasons(for:facts:)`: pure, so each case is checked here; the facts as the
/// database reads them are checked through the API (`BatonServerTests.WaitReasonTests`).
@Suite struct WaitReasonTests {
    static let due = Date(timeIntervalSince1970: 1_800_000_000)

    static func job(_ state: JobState, lane: String? = nil, stages: [StageSpec] = [.task("resize")]) -> JobRecord {
        JobRecord(
            id: 7, queue: "images", priority: 0, state: state, runAt: due, createdAt: due, attemptedAt: nil,
            finishedAt: nil, chain: stages, stage: 0, attempt: 2, input: .null, results: [],
            errors: [.init(stage: 0, attempt: 2, at: "", worker: nil, error: "HTTP 503\nbody")], metadata: [:],
            lane: lane, workerID: nil, parentID: nil, memberIndex: nil, idempotencyKey: nil, enqueuedBy: nil)
    }

    static let served = WaitFacts(queuePaused: false, queueWorkers: 2, taskWorkers: 1)

    @Test func runningFinishedAndNextInLineJobsHaveNone() {
        for state in [JobState.running, .completed, .discarded, .cancelled] {
            #expect(
                WaitReason.reasons(
                    for: Self.job(state), facts: WaitFacts(queuePaused: true, queueWorkers: 0, taskWorkers: 0)
                ).isEmpty)
        }
        #expect(WaitReason.reasons(for: Self.job(.available), facts: Self.served).isEmpty)
    }

    /// An available stage in a fair queue waits for its key's turns while other keys have stages
    /// waiting (alone, it is simply next in line); the counts stop where the look-ups do.
    @Test func aStageInAFairQueueWaitsForItsKeysTurns() {
        var facts = Self.served
        facts.fairShare = .init(keys: 1, stages: 40)
        #expect(WaitReason.reasons(for: Self.job(.available), facts: facts).isEmpty)
        facts.fairShare = .init(keys: 3, stages: 40)
        var job = Self.job(.available)
        job.fairKey = "tenant-7"
        #expect(
            WaitReason.reasons(for: job, facts: facts).map(\.message) == [
                "queue \"images\" takes the stages of 3 keys in turns (fair share); its key \"tenant-7\" has 40 "
                    + "stages waiting, this one among them"
            ])
        facts.fairShare = .init(keys: 101, stages: 10_001)
        #expect(
            WaitReason.reasons(for: Self.job(.available), facts: facts).map(\.message) == [
                "queue \"images\" takes the stages of more than 100 keys in turns (fair share); the key \"\" of "
                    + "stages without one has more than 10000 stages waiting, this one among them"
            ])
        #expect(WaitReason.reasons(for: Self.job(.available), facts: facts).map(\.kind) == [.fairShare])
    }

    @Test func whatBlocksUntilSomeoneActsComesFirst() {
        let reasons = WaitReason.reasons(
            for: Self.job(.retryable), facts: WaitFacts(queuePaused: true, queueWorkers: 0, taskWorkers: 0))
        #expect(reasons.map(\.kind) == [.queuePaused, .noWorker, .retry])
        #expect(reasons[2].until == Self.due)
        #expect(reasons[2].message == "attempt 2 failed: HTTP 503; the next is due at 2027-01-15T08:00:00.000Z")
    }

    @Test func aTaskNoServingWorkerRunsIsNamedButNotForAGroup() {
        let facts = WaitFacts(queuePaused: false, queueWorkers: 2, taskWorkers: 0)
        #expect(
            WaitReason.reasons(for: Self.job(.available), facts: facts).map(\.message)
                == ["no live worker serving queue \"images\" runs task \"resize\""])
        let group = Self.job(.available, stages: [.group([.task("a"), .task("b")])])
        #expect(WaitReason.reasons(for: group, facts: facts).isEmpty)
    }

    @Test func aLaneSaysWhoHoldsItAndWhetherItIsBlocked() {
        let waiting = Self.job(.waiting, lane: "acct-1")
        var facts = Self.served
        facts.laneAhead = 3
        #expect(
            WaitReason.reasons(for: waiting, facts: facts).map(\.message)
                == ["waits for its turn in lane \"acct-1\" and 3 more waiting ahead"])
        facts.laneHead = .init(id: 5, state: .running, runAt: Self.due)
        let running = WaitReason.reasons(for: waiting, facts: facts)
        #expect(running.map(\.message) == ["waits in lane \"acct-1\" behind job 5 (running) and 3 more waiting ahead"])
        #expect(running.first?.job == 5 && running.first?.until == nil)
        facts.laneHead?.state = .retryable
        let blocked = WaitReason.reasons(for: waiting, facts: facts)
        #expect(blocked.first?.until == Self.due)
        #expect(blocked.first?.message.contains("job 5 failed and retries at 2027-01-15T08:00:00.000Z") == true)
    }

    @Test func aGroupWaitsForItsMembersAlone() {
        var facts = WaitFacts(queuePaused: true, queueWorkers: 0, taskWorkers: 0)
        facts.pendingMembers = 1
        let reasons = WaitReason.reasons(for: Self.job(.waiting, stages: [.group([.task("a")])]), facts: facts)
        #expect(reasons.map(\.message) == ["1 group member has not finished"])
    }
}
