extension Components.Schemas.Job {
    /// One step of the path a job took: a stage and how many times in a row it ran.
    public struct PathStep: Sendable, Hashable {
        public var stage: Int
        public var runs: Int
        /// The stage's name, else its task, signal or "group".
        public var label: String
    }

    /// The path taken, a repeated stage's runs folded into one step (`page ×37 → done`); nil when
    /// it is the chain's stages in order, as for every chain without `goto`, `finish` or `repeat`.
    public var takenPath: [PathStep]? {
        let stages = path.map(\.stage)
        guard stages != Array(stages.indices) else { return nil }
        var steps: [PathStep] = []
        for stage in stages {
            if steps.last?.stage == stage {
                steps[steps.count - 1].runs += 1
                continue
            }
            let view = self.stages.first { $0.index == stage }
            let label = view.map { $0.name ?? $0.task ?? $0._await ?? "group" } ?? "stage \(stage + 1)"
            steps.append(PathStep(stage: stage, runs: 1, label: label))
        }
        return steps
    }
}

extension Components.Schemas.Job.PathStep: CustomStringConvertible {
    /// `page ×37`, or the label alone for one run.
    public var description: String { runs > 1 ? "\(label) ×\(runs)" : label }
}

extension Components.Schemas.Stage {
    /// A map stage's label: `map over {{output.items}}`, then its bound and failure policy when
    /// it has them (`at most 10 at once, goes on past failures, stops after 3`); nil for others.
    public var mapLabel: String? {
        guard let map else { return nil }
        var terms = concurrency.map { ["at most \($0) at once"] } ?? []
        if failures == ._continue { terms.append("goes on past failures") }
        if let stopAfter { terms.append("stops after \(stopAfter)") }
        return "map over \(map)" + (terms.isEmpty ? "" : " (" + terms.joined(separator: ", ") + ")")
    }
}

extension Components.Schemas.Stage {
    /// Of the members listed, how many are the stage's first (its indexes 0, 1, 2…) and how many
    /// are runs that failed after them (a large map's: listed so that each is one click away).
    public var listedMembers: (first: Int, failedAfter: Int) {
        let listed = members ?? []
        let first = listed.enumerated().prefix { $0.offset == $0.element.index }.count
        return (first, listed.count - first)
    }
}

extension Components.Schemas.Job {
    /// Its fairness weight as people read it (`2`, `0.5`), nil for the default.
    public var fairWeightText: String? {
        fairWeight.map { $0 == $0.rounded() ? String(Int($0)) : String($0) }
    }
}
