import Logging
import ServiceLifecycle
import Synchronization

/// Tells workers elsewhere that a queue has available jobs (and waiters that a job finished), with
/// `NOTIFY` sent after the commit that made it so, coalesced: at most one per queue per `window`
/// from this process.
/// (A transaction that sends NOTIFY commits under a global lock; one per enqueue would serialise
/// every enqueue in the cluster.)
package final class Waker: Service, Sendable {
    let store: Store
    let window: Duration
    let logger: Logger
    private let pending = Mutex<Set<String>>([])
    private let signal = WakeUp()

    package init(store: Store, window: Duration = .milliseconds(2), logger: Logger) {
        self.store = store
        self.window = window
        self.logger = logger
    }

    /// Asks for a wake-up of these queues' workers; returns at once.
    package func wake(_ queues: some Sequence<String>) {
        send(queues.map { "q:\($0)" })
    }

    /// Tells whoever awaits these jobs that they finished.
    package func announceFinished(_ jobs: [Int64]) {
        send(jobs.map { "f:\($0)" })
    }

    /// Sends a delivery check through the pool (``ListenCheck``).
    package func probe(_ nonce: String) {
        send(["p:\(nonce)"])
    }

    private func send(_ payloads: some Sequence<String>) {
        let added = pending.withLock { pending in
            let before = pending.count
            pending.formUnion(payloads)
            return pending.count > before
        }
        if added { signal.signal() }
    }

    package func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                await self.signal.wait()
                await self.flush()
                try? await Task.sleep(for: self.window)
            }
        }
        await flush()
    }

    private func flush() async {
        let payloads = pending.withLock { pending -> Set<String> in
            defer { pending.removeAll() }
            return pending
        }
        guard !payloads.isEmpty else { return }
        do {
            try await store.notify(payloads.sorted())
        } catch {
            // Workers poll as well: a lost wake-up costs latency, never a job.
            logger.debug("wake-up not sent", metadata: ["error": "\(error)"])
        }
    }
}
