import Baton
import PostgresNIO
import Synchronization

/// Group commit for enqueues: callers that arrive while `writers` batches are being written go
/// together in the next one, one `enqueue` call and one commit for all of them.
///
/// A caller goes at once while fewer than `writers` batches are in flight (there is no timer to
/// wait for). Under load, a commit's cost (the WAL flush, the function call, the round trip) is
/// shared by every caller that arrived meanwhile, which is what lets one-job-per-request HTTP
/// traffic approach batch throughput; several writers keep more than one backend busy. Each batch
/// is written by the task of one of its callers (the first to arrive). Jobs keep the order their
/// callers arrived in. If the database refuses a shared batch for its data (nothing was written),
/// each caller's jobs are written alone, so that one caller's bad job fails only that caller; any
/// other error (a lost connection, after which the batch may have committed; a timeout) fails them
/// all, as it would have failed each alone.
final class EnqueueBatcher: Sendable {
    /// A batch stops taking callers once it holds this many jobs.
    static let maxJobs = 1000

    private enum Turn {
        case done(Result<[EnqueuedJob], any Error>)
        case write
    }

    private struct Waiter {
        var jobs: [NewJob]
        var turn: CheckedContinuation<Turn, Never>
    }

    private struct State {
        var writing = 0
        var waiting: [Waiter] = []
    }

    private let state = Mutex(State())
    private let writers: Int
    private let write: @Sendable ([NewJob]) async throws -> [EnqueuedJob]

    init(writers: Int = 4, write: @escaping @Sendable ([NewJob]) async throws -> [EnqueuedJob]) {
        self.writers = writers
        self.write = write
    }

    func enqueue(_ jobs: [NewJob]) async throws -> [EnqueuedJob] {
        let turn = await withCheckedContinuation { (turn: CheckedContinuation<Turn, Never>) in
            let first = state.withLock { state in
                if state.writing >= writers {
                    state.waiting.append(Waiter(jobs: jobs, turn: turn))
                    return false
                }
                state.writing += 1
                return true
            }
            if first { turn.resume(returning: .write) }
        }
        switch turn {
        case .done(let result):
            return try result.get()
        case .write:
            let others = state.withLock { state in
                var count = jobs.count
                let taken = state.waiting.prefix { waiter in
                    defer { count += waiter.jobs.count }
                    return count < Self.maxJobs
                }
                state.waiting.removeFirst(taken.count)
                return Array(taken)
            }
            let results = await writeBatch([jobs] + others.map(\.jobs))
            for (waiter, result) in zip(others, results.dropFirst()) { waiter.turn.resume(returning: .done(result)) }
            // The next batch is written by the first caller that arrived during this one.
            let next = state.withLock { state -> Waiter? in
                guard !state.waiting.isEmpty else {
                    state.writing -= 1
                    return nil
                }
                return state.waiting.removeFirst()
            }
            next?.turn.resume(returning: .write)
            return try results[0].get()
        }
    }

    /// One write for every caller's jobs; alone each, if that fails and there were several.
    private func writeBatch(_ parts: [[NewJob]]) async -> [Result<[EnqueuedJob], any Error>] {
        if parts.count == 1 {
            return [await Result(catching: { try await write(parts[0]) })]
        }
        do {
            // In a task of its own: the writing caller's cancellation must not fail the others.
            let all = parts.flatMap { $0 }
            var enqueued = try await Task { try await write(all) }.value[...]
            return parts.map { part in
                defer { enqueued = enqueued.dropFirst(part.count) }
                return .success(Array(enqueued.prefix(part.count)))
            }
        } catch let error where Self.refusesData(error) {
            var results: [Result<[EnqueuedJob], any Error>] = []
            for part in parts { results.append(await Result(catching: { try await write(part) })) }
            return results
        } catch {
            return parts.map { _ in .failure(error) }
        }
    }

    /// A refusal of what was sent, which writing each part alone pins on one caller: Baton's own
    /// validation, or PostgreSQL's data exceptions (class 22) and constraint violations (class 23).
    private static func refusesData(_ error: any Error) -> Bool {
        if error is BatonError { return true }
        guard let state = (error as? PSQLError)?.serverInfo?[.sqlState] else { return false }
        return state.hasPrefix("22") || state.hasPrefix("23")
    }
}
