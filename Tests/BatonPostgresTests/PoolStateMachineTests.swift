import Testing

@testable import BatonPostgres

/// The pool's decisions through outages and failovers, event by event, without a database
/// (`DatabasePoolTests` has the same through real ones).
@Suite struct PoolStateMachineTests {
    typealias Machine = PoolStateMachine<String>
    static let start = ContinuousClock.now

    static func at(milliseconds: Int) -> ContinuousClock.Instant { start + .milliseconds(milliseconds) }

    @Test func aLostConnectionStartsOneProbeAtATime() {
        var machine = Machine(patience: .seconds(1))
        #expect(machine.connectionLost(now: Self.at(milliseconds: 0)) == true)
        #expect(machine.connectionLost(now: Self.at(milliseconds: 10)) == false, "a probe is under way")
        _ = machine.probeSucceeded(now: Self.at(milliseconds: 20), poolIdle: true)
        #expect(machine.connectionLost(now: Self.at(milliseconds: 500)) == false, "the database answered a moment ago")
        #expect(machine.connectionLost(now: Self.at(milliseconds: 1_100)) == true)
    }

    @Test func statementsWaitingOnAProbeAreAnsweredTogether() {
        var machine = Machine(patience: .seconds(1))
        let first = machine.makeWaiterID()
        let second = machine.makeWaiterID()
        #expect(first != second)
        guard case .wait(startProbe: true) = machine.ask(first, waiter: "first", now: Self.at(milliseconds: 0)),
            case .wait(startProbe: false) = machine.ask(second, waiter: "second", now: Self.at(milliseconds: 5))
        else {
            Issue.record("both wait, the first starting the probe")
            return
        }
        let failed = machine.probeFailed(now: Self.at(milliseconds: 50), description: "connection refused")
        #expect(failed.outageStarts)
        #expect(Set(failed.waiters) == ["first", "second"])
        guard case .away = machine.ask(machine.makeWaiterID(), waiter: "third", now: Self.at(milliseconds: 60)) else {
            Issue.record("a statement asking during an outage fails at once")
            return
        }
    }

    @Test func aLoopWaitingForTheDatabaseIsToldWhenItIsBackOnly() {
        var machine = Machine(patience: .seconds(1))
        #expect(
            machine.waitForReturn(machine.makeWaiterID(), waiter: "early") == false, "not away: nothing to wait for")
        _ = machine.connectionLost(now: Self.at(milliseconds: 0))
        _ = machine.probeFailed(now: Self.at(milliseconds: 10), description: "connection refused")
        let withdrawn = machine.makeWaiterID()
        let waits = machine.waitForReturn(machine.makeWaiterID(), waiter: "fetcher")
        let cancelledWaits = machine.waitForReturn(withdrawn, waiter: "cancelled")
        #expect(waits && cancelledWaits)
        let cancelled = machine.withdraw(withdrawn)
        #expect(cancelled == "cancelled")
        let failed = machine.probeFailed(now: Self.at(milliseconds: 260), description: "connection refused")
        #expect(failed.waiters.isEmpty, "a failed probe does not end the wait")
        let back = machine.probeSucceeded(now: Self.at(milliseconds: 510), poolIdle: true)
        #expect(back.waiters == ["fetcher"])
    }

    @Test func anOutageIsToldOnceAndKeepsItsStartAndItsLatestCause() {
        var machine = Machine(patience: .seconds(1))
        #expect(machine.connectionLost(now: Self.at(milliseconds: 0)) == true)
        #expect(machine.probeFailed(now: Self.at(milliseconds: 10), description: "shutting down").outageStarts == true)
        #expect(
            machine.probeFailed(now: Self.at(milliseconds: 260), description: "connection refused").outageStarts
                == false)
        #expect(machine.away == .init(since: Self.at(milliseconds: 10), description: "connection refused"))
    }

    @Test func afterAnOutageAnIdlePoolIsReplacedAndABusyOneKept() {
        var idle = Machine(patience: .seconds(1))
        _ = idle.connectionLost(now: Self.at(milliseconds: 0))
        _ = idle.probeFailed(now: Self.at(milliseconds: 10), description: "connection refused")
        let back = idle.probeSucceeded(now: Self.at(milliseconds: 5_000), poolIdle: true)
        #expect(back.newGeneration == 2)
        #expect(back.away?.since == Self.at(milliseconds: 10))
        #expect(idle.generation == 2 && idle.away == nil)

        var busy = Machine(patience: .seconds(1))
        _ = busy.connectionLost(now: Self.at(milliseconds: 0))
        _ = busy.probeFailed(now: Self.at(milliseconds: 10), description: "too many connections")
        let kept = busy.probeSucceeded(now: Self.at(milliseconds: 300), poolIdle: false)
        #expect(kept.newGeneration == nil, "it served since the probe failed: only new connections were refused")
        #expect(kept.away != nil)
        #expect(busy.generation == 1 && busy.away == nil)
    }

    @Test func aProbeThatFindsTheDatabaseAtOnceReplacesNothing() {
        var machine = Machine(patience: .seconds(1))
        let id = machine.makeWaiterID()
        guard case .wait(startProbe: true) = machine.ask(id, waiter: "waiting", now: Self.at(milliseconds: 0)) else {
            Issue.record("the statement waits for the probe")
            return
        }
        let back = machine.probeSucceeded(now: Self.at(milliseconds: 3), poolIdle: true)
        #expect(back.newGeneration == nil && back.away == nil)
        #expect(back.waiters == ["waiting"])
        guard case .reachable = machine.ask(machine.makeWaiterID(), waiter: "next", now: Self.at(milliseconds: 900))
        else {
            Issue.record("the probe of a moment ago answers")
            return
        }
    }

    @Test func aServerThatOnlyReadsReplacesItsPoolOnce() {
        var machine = Machine(patience: .seconds(1))
        #expect(machine.serverOnlyReads(generation: 1) == 2)
        #expect(machine.serverOnlyReads(generation: 1) == nil, "a second refusal from the old pool")
        #expect(machine.serverOnlyReads(generation: 2) == 3)
    }

    @Test func aStatementCancelledWhileWaitingIsWithdrawn() {
        var machine = Machine(patience: .seconds(1))
        let id = machine.makeWaiterID()
        _ = machine.ask(id, waiter: "cancelled", now: Self.at(milliseconds: 0))
        #expect(machine.withdraw(id) == "cancelled")
        #expect(machine.withdraw(id) == nil)
        #expect(machine.probeFailed(now: Self.at(milliseconds: 10), description: "refused").waiters.isEmpty)
    }

    @Test func aClosedPoolAnswersAwayAndReplacesNothing() {
        var machine = Machine(patience: .seconds(1))
        _ = machine.ask(machine.makeWaiterID(), waiter: "waiting", now: Self.at(milliseconds: 0))
        #expect(machine.close() == ["waiting"])
        guard case .away = machine.ask(machine.makeWaiterID(), waiter: "late", now: Self.at(milliseconds: 10)) else {
            Issue.record("a closed pool answers away")
            return
        }
        #expect(machine.serverOnlyReads(generation: 1) == nil)
        var idle = Machine(patience: .seconds(1))
        #expect(idle.close().isEmpty)
        #expect(idle.connectionLost(now: Self.at(milliseconds: 20)) == false, "a closed pool starts no probe")
        _ = machine.probeFailed(now: Self.at(milliseconds: 30), description: "refused")
        #expect(machine.probeSucceeded(now: Self.at(milliseconds: 40), poolIdle: true).newGeneration == nil)
    }
}
