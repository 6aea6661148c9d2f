import Baton
import Synchronization

/// Names callers choose (queues, tasks) as metric labels: past the first hundred seen they are
/// counted together as `other` rather than growing `/metrics` without bound.
package final class MetricLabels: Sendable {
    package static let limit = 100
    private let seen = Mutex(Set<String>())

    package init() {}

    package func label(_ name: String) -> String {
        seen.withLock { seen in
            if seen.contains(name) { return name }
            guard seen.count < Self.limit else { return "other" }
            seen.insert(name)
            return name
        }
    }
}

extension NewJob {
    /// The task of the first stage, `group` for a group: how an enqueued job is labelled.
    package var firstTask: String {
        guard let first = chain.stages.first else { return "none" }
        return first.kind
    }
}
