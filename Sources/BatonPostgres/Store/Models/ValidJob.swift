import Baton

/// A ``NewJob`` that passed every check the store makes: what the store, its batcher and
/// ``BatonClient`` enqueue. A job is checked once, where it comes in (``NewJob/validated(checkingArgs:)``,
/// or ``BatonClient/enqueue(_:)-([NewJob])``), and nothing after that checks it again.
public struct ValidJob: Sendable {
    public private(set) var job: NewJob

    fileprivate init(_ job: NewJob) { self.job = job }

    /// Who enqueued it (``NewJob/enqueuedBy``): the caller's, not the job's, so not checked.
    package var enqueuedBy: String? {
        get { job.enqueuedBy }
        set { job.enqueuedBy = newValue }
    }

    /// Whose jobs its keys may name (``NewJob/keyOwners``): the caller's, not the job's.
    package var keyOwners: [String]? {
        get { job.keyOwners }
        set { job.keyOwners = newValue }
    }
}

extension NewJob {
    /// The job, checked for what the store refuses: its queue name, chain, priority, metadata and
    /// uniqueness rule, and each task's args with `check` (the tasks' own rules, which the task
    /// registry has: ``TaskRegistry/argsCheck`` in `BatonWorker`). Throws the first problem with
    /// the JSON path of the field at fault.
    public func validated(checkingArgs check: ChainDefinition.ArgsCheck? = nil) throws(BatonError) -> ValidJob {
        try ChainDefinition.checkName(queue, path: "queue", what: "queue name")
        try chain.validate(checkingArgs: check)
        guard (Int(Int16.min)...Int(Int16.max)).contains(priority) else {
            throw .invalidChain(path: "priority", reason: "priority must be an integer within -32768...32767")
        }
        guard case .object = metadata else {
            throw .invalidChain(path: "metadata", reason: "metadata must be an object")
        }
        try metadata.checkStorable(at: "metadata")
        try unique?.check(path: "unique")
        if let fairKey { try ChainDefinition.checkName(fairKey, path: "fair_key", what: "fairness key") }
        if let fairWeight, !NewJob.weights.contains(fairWeight) {
            throw .invalidChain(path: "fair_weight", reason: "a weight is a number from 0.001 to 1000")
        }
        return ValidJob(self)
    }
}
