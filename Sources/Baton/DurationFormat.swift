/// Durations written as text: `250ms`, `30s`, `10m`, `2h`, `1.5s`; a bare number is seconds.
public enum DurationFormat {
    /// Parses `text`; nil if it is not a non-negative duration in these units.
    public static func parse(_ text: String) -> Duration? {
        let units: [(String, Double)] = [("ms", 1), ("s", 1000), ("m", 60_000), ("h", 3_600_000), ("d", 86_400_000)]
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        var number = Substring(trimmed)
        var scale = 1000.0
        for (suffix, factor) in units where trimmed.hasSuffix(suffix) {
            let candidate = trimmed.dropLast(suffix.count)
            // "ms" also ends in "s": take the longest unit that leaves a number.
            if Double(candidate) != nil {
                number = candidate
                scale = factor
                break
            }
        }
        guard let value = Double(number), value.isFinite, value >= 0, value * scale <= 9e15 else { return nil }
        guard number.allSatisfy({ $0.isNumber || $0 == "." }) else { return nil }
        return .milliseconds(Int64((value * scale).rounded()))
    }

    /// The shortest exact text for `duration` at millisecond precision (`1500ms`, `30s`, `10m`).
    public static func format(_ duration: Duration) -> String {
        let ms = duration.milliseconds
        if ms != 0, ms % 3_600_000 == 0 { return "\(ms / 3_600_000)h" }
        if ms != 0, ms % 60_000 == 0 { return "\(ms / 60_000)m" }
        if ms % 1000 == 0 { return "\(ms / 1000)s" }
        return "\(ms)ms"
    }
}

extension String {
    fileprivate func trimmingCharacters(in set: Set<Character>) -> String {
        String(self.drop(while: { set.contains($0) }).reversed().drop(while: { set.contains($0) }).reversed())
    }
}

extension Set where Element == Character {
    fileprivate static let whitespaces: Set<Character> = [" ", "\t"]
}
