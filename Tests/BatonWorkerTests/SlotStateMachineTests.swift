import PropertyBased
import Testing

@testable import BatonWorker

/// The worker's slot accounting, event by event, without a database.
@Suite struct SlotStateMachineTests {
    typealias Machine = SlotStateMachine

    /// A machine whose `queue` runs `running` stages, claimed in one claim that filled its slots.
    static func busy(_ running: Int, capacity: Int, queue: String = "q") -> Machine {
        var machine = Machine(capacities: [queue: capacity])
        if running > 0 {
            #expect(machine.fetch(queue) == .claim(capacity))
            _ = machine.received(running, queue: queue, via: .claim(asked: capacity))
        }
        return machine
    }

    @Test func aNewQueueClaimsAllItsSlotsAndThenWaits() {
        var machine = Machine(capacities: ["q": 4])
        #expect(machine.fetch("q") == .claim(4))
        #expect(machine.received(4, queue: "q", via: .claim(asked: 4)) == .none)
        #expect(machine.fetch("q") == .wait, "every slot is busy")
    }

    @Test func aClaimThatBroughtFewerThanAskedWaitsForAWakeUp() {
        var machine = Machine(capacities: ["q": 4])
        #expect(machine.fetch("q") == .claim(4))
        _ = machine.received(1, queue: "q", via: .claim(asked: 4))
        #expect(machine.fetch("q") == .wait, "the queue had no more")
        #expect(machine.wake("q") == .wakeFetcher("q"))
        #expect(machine.fetch("q") == .claim(3), "only the free slots")
    }

    @Test func aFullClaimIsFollowedByAnotherWhileSlotsAreFree() {
        var machine = Machine(capacities: ["q": 4])
        #expect(machine.fetch("q") == .claim(4))
        _ = machine.received(4, queue: "q", via: .claim(asked: 4))
        _ = machine.stageEnded(in: "q")
        #expect(machine.fetch("q") == .claim(1), "a full claim means the queue may have more")
    }

    /// Slot by slot would be a statement per stage: the loop is woken once a quarter is free.
    @Test func endingStagesWakeTheFetcherOnceAQuarterOfTheSlotsIsFree() {
        var machine = Self.busy(8, capacity: 8)
        #expect(machine.stageEnded(in: "q") == .none)
        #expect(machine.stageEnded(in: "q") == .wakeFetcher("q"))
        #expect(machine.fetch("q") == .claim(2))
    }

    @Test func endingStagesDoNotWakeTheFetcherWhenTheQueueHadNoMore() {
        var machine = Machine(capacities: ["q": 4])
        _ = machine.fetch("q")
        _ = machine.received(2, queue: "q", via: .claim(asked: 4))
        #expect(machine.stageEnded(in: "q") == .none)
        #expect(machine.stageEnded(in: "q") == .none)
        #expect(machine.fetch("q") == .wait)
    }

    @Test func aFailedClaimKeepsTheBacklogAndIsTriedAgain() {
        var machine = Machine(capacities: ["q": 3])
        #expect(machine.fetch("q") == .claim(3))
        #expect(machine.claimFailed("q") == .none)
        #expect(machine.fetch("q") == .claim(3))
    }

    /// Lane hand-overs enter through the same slots as claims: reserved first, never beyond the
    /// capacity, and what a hand-over did not bring is free again.
    @Test func handOversTakeReservedSlotsAndFreeWhatTheyDidNotBring() {
        var machine = Self.busy(2, capacity: 4)
        #expect(machine.reserve(5, in: "q") == 2, "only the free slots")
        #expect(machine.reserve(1, in: "q") == 0, "none left")
        #expect(machine.fetch("q") == .wait, "reserved slots are not claimed")
        #expect(machine.received(1, queue: "q", via: .handOver(reserved: 2)) == .none)
        #expect(machine.queues["q"]?.busy == 3)
        #expect(machine.queues["q"]?.reservations == 0)
        _ = machine.wake("q")
        #expect(machine.fetch("q") == .claim(1))
    }

    /// A slot reserved while stages ended counts as busy, so their ends did not wake the fetch loop;
    /// when the hand-over brings nothing, the slots it frees must. (Missed, a lane's next stage
    /// waited for the queue's next wake-up: 100 lanes at 800 jobs/s on 32 slots had a pickup p99 of
    /// 200 ms, 17 ms once woken; docs/benchmarks.md#issue-46-lanes-through-a-held-horizon-2026-12-06.)
    @Test func slotsAHandOverDidNotFillWakeTheFetchLoop() {
        var machine = Self.busy(8, capacity: 8)
        #expect(machine.stageEnded(in: "q") == .none, "one free: under a quarter")
        #expect(machine.reserve(1, in: "q") == 1)
        #expect(machine.stageEnded(in: "q") == .none, "one free again, the other reserved")
        #expect(machine.received(0, queue: "q", via: .handOver(reserved: 1)) == .wakeFetcher("q"))
        #expect(machine.fetch("q") == .claim(2))
    }

    /// Slots asked for by a claim under way are not reserved as well: the two together would run
    /// more stages than the capacity.
    @Test func aClaimUnderWayHoldsTheSlotsItAskedFor() {
        var machine = Self.busy(2, capacity: 4)
        _ = machine.wake("q")
        #expect(machine.fetch("q") == .claim(2))
        #expect(machine.reserve(1, in: "q") == 0, "all four are running or asked for")
        _ = machine.received(1, queue: "q", via: .claim(asked: 2))
        #expect(machine.reserve(1, in: "q") == 1, "the slot the claim did not fill")
        #expect(machine.queues["q"]?.busy == 4)
    }

    @Test func aDrainingQueueStopsClaimingAndReservingButReceivesWhatIsUnderWay() {
        var machine = Machine(capacities: ["q": 4])
        #expect(machine.reserve(1, in: "q") == 1)
        #expect(machine.fetch("q") == .claim(3))
        #expect(machine.drain("q") == .wakeFetcher("q"))
        #expect(machine.reserve(1, in: "q") == 0)
        #expect(machine.isDraining("q"))
        _ = machine.received(2, queue: "q", via: .claim(asked: 3))
        _ = machine.received(1, queue: "q", via: .handOver(reserved: 1))
        #expect(machine.fetch("q") == .stop)
        #expect(machine.queues["q"]?.busy == 3, "jobs claimed are this worker's: they run")
    }

    @Test func aDrainOfAnIdleWorkerFinishesAtOnce() {
        var machine = Machine(capacities: ["a": 2, "b": 2])
        #expect(machine.drainAll() == .finish)
        #expect(machine.fetch("a") == .stop)
        #expect(machine.fetch("b") == .stop)
    }

    @Test func aDrainFinishesWhenTheLastStageEndsAndSaysSoOnce() {
        var machine = Self.busy(2, capacity: 4)
        #expect(machine.drainAll() == .none)
        #expect(machine.stageEnded(in: "q") == .none)
        #expect(machine.stageEnded(in: "q") == .finish)
        #expect(machine.drainAll() == .none, "said once")
    }

    @Test func aDrainWaitsForAClaimUnderWay() {
        var machine = Machine(capacities: ["q": 4])
        #expect(machine.fetch("q") == .claim(4))
        #expect(machine.drainAll() == .none)
        #expect(machine.received(1, queue: "q", via: .claim(asked: 4)) == .none, "one stage to run")
        #expect(machine.stageEnded(in: "q") == .finish)

        var failing = Machine(capacities: ["q": 4])
        #expect(failing.fetch("q") == .claim(4))
        #expect(failing.drainAll() == .none)
        #expect(failing.claimFailed("q") == .finish)
    }

    @Test func aDrainWaitsForAReservationToBeDelivered() {
        var machine = Machine(capacities: ["q": 4])
        #expect(machine.reserve(2, in: "q") == 2)
        #expect(machine.drainAll() == .none)
        #expect(machine.received(0, queue: "q", via: .handOver(reserved: 2)) == .finish)
    }

    @Test func aQueueOnItsOwnDrainingDoesNotFinishTheWorker() {
        var machine = Machine(capacities: ["a": 2, "b": 2])
        #expect(machine.drain("a") == .wakeFetcher("a"))
        #expect(machine.fetch("a") == .stop)
        #expect(machine.fetch("b") == .claim(2))
        #expect(!machine.isDraining("b"))
        _ = machine.received(0, queue: "b", via: .claim(asked: 2))
        #expect(machine.drainAll() == .finish)
    }

    @Test func anUnknownQueueHasNothingToClaim() {
        var machine = Machine(capacities: ["q": 1])
        #expect(machine.fetch("other") == .stop)
        #expect(machine.wake("other") == .none)
        #expect(machine.reserve(1, in: "other") == 0)
    }

    @Test func aCapacityBelowOneCountsAsOne() {
        var machine = Machine(capacities: ["q": 0])
        #expect(machine.fetch("q") == .claim(1))
    }

    /// Any interleaving of claims, hand-overs, stage ends, wake-ups and drains keeps the slots
    /// within the capacity, claims nothing once draining, and finishes exactly once, only when
    /// nothing runs or is on its way.
    @Test func slotsHoldWhateverTheOrderOfEvents() async {
        await propertyCheck(count: 3000, input: Gen.int(in: 0...(1 << 30)).array(of: 1...60)) { steps in
            var driver = Driver(capacity: 5)
            for step in steps { driver.step(step) }
            driver.windDown()
            #expect(driver.finishes == 1)
            #expect(driver.machine.queues["q"]?.busy == 0)
        }
    }

    /// Plays events the way the worker's loops would, checking the machine against a model.
    struct Driver {
        let capacity: Int
        var machine: Machine
        var running = 0
        var claim: Int?
        var reservations: [Int] = []
        var drained = false
        var finishes = 0

        init(capacity: Int) {
            self.capacity = capacity
            machine = Machine(capacities: ["q": capacity])
        }

        mutating func step(_ seed: Int) {
            let amount = seed >> 4
            switch seed % 8 {
            case 0 where claim == nil:
                switch machine.fetch("q") {
                case .claim(let asked):
                    #expect(!drained, "no claim while draining")
                    #expect(asked == capacity - running - reservations.reduce(0, +))
                    claim = asked
                case .wait: #expect(!drained)
                case .stop: #expect(drained)
                }
            case 1:
                if let asked = claim {
                    let got = amount % (asked + 1)
                    let action = machine.received(got, queue: "q", via: .claim(asked: asked))
                    running += got
                    claim = nil
                    observe(action)
                }
            case 2:
                if claim != nil {
                    let action = machine.claimFailed("q")
                    claim = nil
                    observe(action)
                }
            case 3:
                let reserved = machine.reserve(1 + amount % 3, in: "q")
                if drained { #expect(reserved == 0) }
                if reserved > 0 { reservations.append(reserved) }
            case 4:
                if !reservations.isEmpty {
                    let reserved = reservations.removeFirst()
                    let got = amount % (reserved + 1)
                    let action = machine.received(got, queue: "q", via: .handOver(reserved: reserved))
                    running += got
                    observe(action)
                }
            case 5:
                if running > 0 {
                    let action = machine.stageEnded(in: "q")
                    running -= 1
                    observe(action)
                }
            case 6:
                observe(machine.wake("q"))
            default:
                drained = true
                observe(amount % 2 == 0 ? machine.drainAll() : machine.drain("q"))
            }
            let busy = running + reservations.reduce(0, +) + (claim ?? 0)
            #expect(machine.queues["q"]?.busy == busy)
            #expect(busy <= capacity)
        }

        /// Everything under way comes to an end, and the worker drains.
        mutating func windDown() {
            if let asked = claim {
                let action = machine.received(0, queue: "q", via: .claim(asked: asked))
                claim = nil
                observe(action)
            }
            observe(machine.drainAll())
            while let reserved = reservations.first {
                let action = machine.received(0, queue: "q", via: .handOver(reserved: reserved))
                reservations.removeFirst()
                observe(action)
            }
            while running > 0 {
                let action = machine.stageEnded(in: "q")
                running -= 1
                observe(action)
            }
        }

        private mutating func observe(_ action: Machine.Action) {
            guard action == .finish else { return }
            finishes += 1
            #expect(running == 0 && claim == nil && reservations.isEmpty, "finished with work under way")
            #expect(machine.stopping)
        }
    }
}
