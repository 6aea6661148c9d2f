/// A chain as data: the input of its first stage and its stages. `Chain` builds one with types
/// checked by the compiler; the HTTP API decodes one from JSON.
public struct ChainDefinition: Sendable, Hashable {
    /// More stages (or group members) than this is refused.
    public static let maxStages = 100
    /// Names longer than this (in Unicode scalars, the characters JSON Schema's `maxLength` counts)
    /// are refused.
    public static let maxNameLength = 200

    public var input: JSONValue
    public var stages: [StageSpec]

    /// The chain features this version of Baton reads that workers of earlier versions cannot:
    /// `sub-chain`, a group member of several stages, and `map`, a stage over an array. A job
    /// stores those its chain uses (``features``), a worker registers these, and a worker is given
    /// only jobs whose features it reads, so that a rolling upgrade never hands a chain to a worker
    /// that cannot read it.
    public static let readableFeatures: Set<String> = ["map", "map-failures", "sub-chain"]

    /// The features of ``readableFeatures`` this chain uses, sorted.
    public var features: [String] { StageSpec.features(of: stages).sorted() }

    public init(input: JSONValue = .null, stages: [StageSpec]) {
        self.input = input
        self.stages = stages
    }

    /// Checks a task's args when a chain is validated (`task`, `args`, the args' JSON path): the
    /// rules of a task whose args are known live with the task (the `http` task's in
    /// `BatonHTTPTask`), not in this module.
    public typealias ArgsCheck =
        @Sendable (_ task: String, _ args: JSONValue, _ path: String) throws(BatonError) -> Void

    /// Checks what the database cannot: sizes, names and policies, and each task's args with
    /// `checkingArgs`. Throws the first problem with the JSON path of the field at fault (e.g.
    /// `stages[2].group[0].lane`).
    public func validate(checkingArgs check: ArgsCheck? = nil) throws(BatonError) {
        try input.checkStorable(at: "input")
        guard !stages.isEmpty else { throw .invalidChain(path: "stages", reason: "a chain needs at least one stage") }
        try Self.validate(stages, path: "stages", check: check)
        try Self.checkRules(of: stages, path: "stages")
        // A first stage that maps over the job's input: what it would fail on is known now.
        if let map = stages[0].map, case .failure(let error) = map.elements(of: input) {
            throw .invalidChain(path: "stages[0].map", reason: error.message)
        }
    }

    /// What holds within one chain (the job's, or a sub-chain member's): `goto` jumps forward to a
    /// stage of that chain, stage names and awaited signals are unique in it.
    private static func checkRules(of stages: [StageSpec], path: String) throws(BatonError) {
        var seen = Set<String>()
        var signals = Set<String>()
        let positions = Dictionary(
            stages.enumerated().compactMap { index, stage in stage.name.map { ($0, index) } },
            uniquingKeysWith: { first, _ in first })
        for (index, stage) in stages.enumerated() {
            for (rule, flow) in (stage.task?.next ?? []).enumerated() {
                guard case .goto(let target) = flow.action else { continue }
                guard let position = positions[target] else {
                    throw .invalidChain(
                        path: "\(path)[\(index)].next[\(rule)].goto", reason: "no stage is named \"\(target)\"")
                }
                // Forward only: a loop is a `repeat`, whose max bounds it.
                guard position > index else {
                    throw .invalidChain(
                        path: "\(path)[\(index)].next[\(rule)].goto",
                        reason: "stage \"\(target)\" is not after this one: goto only jumps forward (repeat loops)")
                }
            }
            if let name = stage.name, !seen.insert(name).inserted {
                throw .invalidChain(path: "\(path)[\(index)].name", reason: "stage name \"\(name)\" is used twice")
            }
            // A signal names one stage of its job: its delivery and its token say which.
            if let signal = stage.awaited?.signal, !signals.insert(signal).inserted {
                throw .invalidChain(path: "\(path)[\(index)].await", reason: "signal \"\(signal)\" is awaited twice")
            }
        }
    }

    private static func validate(
        _ stages: [StageSpec], path: String, check: ArgsCheck?, inGroup: Bool = false
    ) throws(BatonError) {
        guard stages.count <= maxStages else {
            throw .invalidChain(path: path, reason: "at most \(maxStages) stages or members, got \(stages.count)")
        }
        for (index, stage) in stages.enumerated() {
            let here = "\(path)[\(index)]"
            if let name = stage.name {
                try checkName(name, path: "\(here).name", what: "stage name")
            }
            switch stage.body {
            case .group(let members):
                guard !members.isEmpty else {
                    throw .invalidChain(path: "\(here).group", reason: "a group needs at least one member")
                }
                try validate(members, path: "\(here).group", check: check, inGroup: true)
            case .map(let map):
                try FlowCondition.check(map.path, at: "\(here).map", of: "a map")
                guard !map.stages.isEmpty else {
                    throw .invalidChain(path: "\(here).stages", reason: "a map runs at least one stage per element")
                }
                if let concurrency = map.concurrency, !(1...MapStage.maxConcurrency).contains(concurrency) {
                    throw .invalidChain(
                        path: "\(here).concurrency", reason: "must be within 1...\(MapStage.maxConcurrency)")
                }
                if let limit = map.maxElements, !(1...MapStage.elementLimit).contains(limit) {
                    throw .invalidChain(
                        path: "\(here).max_elements", reason: "must be within 1...\(MapStage.elementLimit)")
                }
                if case .continue(let stopAfter?) = map.failures, !(1...MapStage.maxConcurrency).contains(stopAfter) {
                    throw .invalidChain(
                        path: "\(here).stop_after", reason: "must be within 1...\(MapStage.maxConcurrency)")
                }
                // Each element's member job runs them as its chain.
                try validate(map.stages, path: "\(here).stages", check: check)
                try checkRules(of: map.stages, path: "\(here).stages")
            case .chain(let stages):
                // The member's job runs them as its chain: anything a chain may hold, in order.
                guard inGroup else {
                    throw .invalidChain(
                        path: "\(here).stages", reason: "a sub-chain is a group member: put it in a group")
                }
                guard !stages.isEmpty else {
                    throw .invalidChain(path: "\(here).stages", reason: "a sub-chain needs at least one stage")
                }
                try validate(stages, path: "\(here).stages", check: check)
                try checkRules(of: stages, path: "\(here).stages")
            case .await(let stage):
                // A member of one stage is a job of its own that nobody outside knows the id of (a
                // sub-chain's await stage is signalled at its member's id, as the parent lists it).
                guard !inGroup else {
                    throw .invalidChain(path: "\(here).await", reason: "a group member cannot await a signal")
                }
                try checkSignalName(stage.signal, path: "\(here).await")
                guard stage.timeout > .zero else {
                    throw .invalidChain(path: "\(here).timeout", reason: "must be longer than zero")
                }
                guard (1...10_000).contains(stage.maxAttempts) else {
                    throw .invalidChain(path: "\(here).max_attempts", reason: "must be within 1...10000")
                }
            case .task(let task):
                try checkName(task.task, path: "\(here).task", what: "task name")
                try task.args.checkStorable(at: "\(here).args")
                if let lane = task.lane { try checkName(lane, path: "\(here).lane", what: "lane") }
                if let queue = task.queue { try checkName(queue, path: "\(here).queue", what: "queue name") }
                if let rate = task.rate {
                    try checkName(rate, path: "\(here).rate", what: "rate limit key")
                    guard !rate.hasSuffix("*") else {
                        throw .invalidChain(
                            path: "\(here).rate", reason: "a stage names a key; a key ending in * is a prefix of keys")
                    }
                }
                guard task.retry.maxAttempts >= 1 else {
                    throw .invalidChain(path: "\(here).max_attempts", reason: "must be at least 1")
                }
                guard task.timeout > .zero else {
                    throw .invalidChain(path: "\(here).timeout", reason: "must be longer than zero")
                }
                guard task.retry.backoff.initial >= .zero, task.retry.backoff.max >= task.retry.backoff.initial else {
                    throw .invalidChain(path: "\(here).backoff", reason: "needs 0 ≤ initial ≤ max")
                }
                try validateFlow(of: task, at: here, inGroup: inGroup)
                // Args whose rules are known: a malformed request is refused now, at its path,
                // rather than failing when it runs.
                try check?(task.task, task.args, "\(here).args")
            }
        }
    }

    /// A stage's `repeat` and `next` rules (their targets are checked by the caller, who knows the chain).
    private static func validateFlow(of task: TaskStage, at path: String, inGroup: Bool) throws(BatonError) {
        if let rule = task.repeat {
            // A member is a job of one stage whose output its group collects.
            guard !inGroup else { throw .invalidChain(path: "\(path).repeat", reason: "a group member cannot repeat") }
            guard (1...RepeatRule.maxRuns).contains(rule.max) else {
                throw .invalidChain(path: "\(path).repeat.max", reason: "must be within 1...\(RepeatRule.maxRuns)")
            }
            try rule.condition.check(at: "\(path).repeat.while")
        }
        guard !task.next.isEmpty else { return }
        guard !inGroup else { throw .invalidChain(path: "\(path).next", reason: "a group member cannot branch") }
        guard task.next.count <= maxRules else {
            throw .invalidChain(path: "\(path).next", reason: "at most \(maxRules) rules, got \(task.next.count)")
        }
        for (index, rule) in task.next.enumerated() {
            try rule.condition.check(at: "\(path).next[\(index)].if")
        }
    }

    /// A stage has at most this many `next` rules.
    public static let maxRules = 20

    /// The rule for every name Baton stores (stages, tasks, lanes, queues): 1 to `maxNameLength`
    /// characters, no control characters (the OpenAPI document's `Name`).
    public static func checkName(_ name: String, path: String, what: String) throws(BatonError) {
        guard !name.isEmpty else { throw .invalidChain(path: path, reason: "\(what) is empty") }
        guard name.unicodeScalars.count <= maxNameLength else {
            throw .invalidChain(path: path, reason: "\(what) is longer than \(maxNameLength) characters")
        }
        // Control characters are U+0000–U+001F and U+007F–U+009F (Unicode's Cc, the document's pattern).
        guard !name.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7f...0x9f).contains($0.value) }) else {
            throw .invalidChain(path: path, reason: "\(what) contains control characters")
        }
    }

    /// A signal's name goes in a URL path (`/v1/jobs/{id}/signals/{name}`) and in callback URLs
    /// handed to others: 1 to 200 ASCII letters, digits, `-`, `_` and `.`.
    public static func checkSignalName(_ name: String, path: String) throws(BatonError) {
        guard (1...maxNameLength).contains(name.count),
            name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) })
        else {
            throw .invalidChain(
                path: path,
                reason: "a signal name is 1 to \(maxNameLength) ASCII letters, digits, \"-\", \"_\" and \".\"")
        }
    }
}
