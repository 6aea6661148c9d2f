import BatonPostgres
import Logging
import Synchronization

/// Claims stages of one queue, never more than its free slots, and starts each as a child task.
///
/// It claims when told that jobs are available (NOTIFY, or an outcome of this worker's), when a
/// slot frees up while the last claim filled every slot, and every `pollInterval` regardless.
final class Fetcher: Sendable {
    private struct State {
        var running = 0
        /// The queue may hold more than the last claim took.
        var backlog = true
    }

    let queue: String
    let capacity: Int
    private let state = Mutex(State())
    private let signal = Signal()

    init(queue: String, capacity: Int) {
        self.queue = queue
        self.capacity = capacity
    }

    /// Jobs are (or may be) available.
    func wake() {
        state.withLock { $0.backlog = true }
        signal.signal()
    }

    /// Interrupts a wait (drain begins).
    func interrupt() { signal.signal() }

    var running: Int { state.withLock { $0.running } }

    /// Claims and runs until `worker` drains; returns once every stage it started has ended.
    func run(for worker: Worker) async {
        var backoff = Duration.milliseconds(50)
        await withDiscardingTaskGroup { group in
            while !worker.isDraining {
                let free = state.withLock { state -> Int in
                    guard state.backlog else { return 0 }
                    return capacity - state.running
                }
                if free > 0 {
                    do {
                        let jobs = try await worker.store.claim(queue: queue, limit: free, worker: worker.id)
                        backoff = .milliseconds(50)
                        state.withLock { state in
                            state.running += jobs.count
                            state.backlog = jobs.count == free
                        }
                        for job in jobs {
                            group.addTask {
                                await worker.execute(job)
                                let more = self.state.withLock { state -> Bool in
                                    state.running -= 1
                                    return state.backlog
                                }
                                if more { self.signal.signal() }
                            }
                        }
                        if jobs.count == free { continue }
                    } catch {
                        worker.logger.warning(
                            "claim failed; retrying",
                            metadata: ["queue": "\(queue)", "error": "\(String(reflecting: error))"])
                        await signal.wait(timeout: backoff)
                        backoff = min(backoff * 2, .seconds(2))
                        continue
                    }
                }
                await signal.wait(timeout: worker.configuration.pollInterval)
                if !worker.isDraining, state.withLock({ !$0.backlog && $0.running < capacity }) {
                    // Woken by the poll timer or a slot: look again anyway; a NOTIFY may have been lost.
                    state.withLock { $0.backlog = true }
                }
            }
        }
    }
}
