import Foundation

/// What a schedule does with the slots that passed while nothing ran it (every worker stopped, the
/// database away). A slot at most ``grace`` late is not missed: it runs.
public enum MisfirePolicy: Sendable, Hashable {
    /// Missed slots are skipped; the schedule goes on with the next one.
    case skip
    /// The latest missed slot runs, once; the others are skipped.
    case runLatest
    /// Up to this many of the latest missed slots run, oldest first.
    case runMissed(Int)

    /// How late a slot may be and still count as on time.
    public static let grace: Duration = .seconds(60)

    /// Which slots to enqueue at `now` for a schedule whose next slot was `next`, and its next slot
    /// after them: every slot up to `now` (at most 100,000 are looked at) is on time or missed.
    public func due(_ expression: CronExpression, in zone: TimeZone, next: Date, now: Date) -> (
        slots: [Date], next: Date?
    ) {
        guard next <= now else { return ([], next) }
        let keep: Int
        switch self {
        case .skip, .runLatest: keep = 1
        case .runMissed(let count): keep = max(1, count)
        }
        var passed: [Date] = []
        var slot: Date? = next
        var looked = 0
        while let current = slot, current <= now, looked < 100_000 {
            passed.append(current)
            if passed.count > keep { passed.removeFirst() }
            slot = expression.next(after: current, in: zone)
            looked += 1
        }
        let following = looked == 100_000 ? expression.next(after: now, in: zone) : slot
        switch self {
        case .skip:
            let onTime = passed.last.map { $0.distance(to: now) <= Double(Self.grace.components.seconds) } ?? false
            return (onTime ? Array(passed.suffix(1)) : [], following)
        case .runLatest, .runMissed:
            return (passed, following)
        }
    }
}

extension MisfirePolicy {
    /// `skip`, `latest`, or `missed:N`: how the settings file and the API name it.
    public init(parsing text: String) throws(CronError) {
        switch text {
        case "skip": self = .skip
        case "latest": self = .runLatest
        default:
            guard text.hasPrefix("missed:"), let count = Int(text.dropFirst("missed:".count)),
                (1...1000).contains(count)
            else { throw CronError("misfire is skip, latest or missed:N (N from 1 to 1000), not \"\(text)\"") }
            self = .runMissed(count)
        }
    }

    /// The name ``init(parsing:)`` reads.
    public var name: String {
        switch self {
        case .skip: "skip"
        case .runLatest: "latest"
        case .runMissed(let count): "missed:\(count)"
        }
    }
}
