import Baton
import BatonPostgres

/// What a token limited to queues may reach, and who the audit trail says made a change.
extension API {
    /// The request's caller as the audit trail names it: the token's name (a signal delivered
    /// with its one-time token: `signal-token`) and the request's id.
    var actor: AuditActor {
        AuditActor(name: Caller.current?.name ?? "signal-token", requestID: RequestScope.requestID)
    }

    /// 403 naming `queue` when the caller is limited to other queues.
    func checkQueue(_ queue: String, path: String?) throws {
        guard let caller = Caller.current, !caller.serves(queue) else { return }
        throw Problem.outOfScope("token \"\(caller.name)\" may not use queue \"\(queue)\"", path: path)
    }

    /// 404 for a job the caller may not see (its own queue is not one of the caller's), as for a
    /// job that does not exist, so as not to tell which ids exist. No look-up for a caller limited
    /// to no queue.
    func checkJobInScope(_ id: Int64) async throws {
        guard let caller = Caller.current, caller.queues != nil else { return }
        guard let queue = try await store.ownQueue(of: id), caller.serves(queue) else {
            throw Problem.notFound("no job has id \(id)")
        }
    }

    /// The queues a listing is limited to: the caller's, sorted; nil for every queue.
    var scopedQueues: [String]? { Caller.current?.queues.map { $0.sorted() } }

    /// 403 unless every queue a job's stages run in is one the caller may use.
    func checkQueues(of jobs: [NewJob], prefix: (Int) -> String) throws {
        guard Caller.current?.queues != nil else { return }
        for (index, job) in jobs.enumerated() {
            try checkQueue(job.queue, path: prefix(index) + "queue")
            func walk(_ stages: [StageSpec], at path: String) throws {
                for (position, stage) in stages.enumerated() {
                    if let queue = stage.task?.queue { try checkQueue(queue, path: "\(path)[\(position)].queue") }
                    switch stage.body {
                    case .group(let members): try walk(members, at: "\(path)[\(position)].group")
                    case .chain(let stages): try walk(stages, at: "\(path)[\(position)].stages")
                    case .map(let map): try walk(map.stages, at: "\(path)[\(position)].stages")
                    case .task, .await: break
                    }
                }
            }
            try walk(job.chain.stages, at: prefix(index) + "stages")
        }
    }

    /// The fingerprints whose jobs an idempotency or unique key may name for this caller: its own
    /// when it may not read every job (an `enqueue` token, one limited to queues, or one limited to
    /// operations without `getJob`), since the answer is the job the key names; nil for any.
    var keyOwners: [String]? {
        guard let caller = Caller.current else { return nil }
        let readsAll =
            caller.role != .enqueue && caller.queues == nil && (caller.operations?.contains("getJob") ?? true)
        return readsAll ? nil : caller.fingerprints
    }
}
