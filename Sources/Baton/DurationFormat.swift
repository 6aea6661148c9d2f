/// Durations written as text: `250ms`, `30s`, `10m`, `2h`, `1d`, `1.5s`; a bare number is seconds.
/// The grammar is the OpenAPI document's `Duration`, `[0-9]{1,8}(\.[0-9]{1,6})?(ms|s|m|h|d)?`: no
/// spaces, signs or exponents, and at most 99,999,999 days (8.6e15 ms), so that every duration
/// the document admits is one here and stays far from overflowing `Int64` milliseconds in backoff
/// arithmetic. Millisecond precision, rounded.
public enum DurationFormat {
    /// Parses `text`; nil if it is not a duration of that grammar.
    public static func parse(_ text: String) -> Duration? {
        let units: [(suffix: String, milliseconds: Int64)] = [
            ("ms", 1), ("s", 1000), ("m", 60_000), ("h", 3_600_000), ("d", 86_400_000),
        ]
        // "ms" is listed before "s": the first unit that matches is the longest.
        let unit = units.first { text.hasSuffix($0.suffix) }
        let parts = text.dropLast(unit?.suffix.count ?? 0)
            .split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard (1...8).contains(parts[0].count), parts[0].allSatisfy({ ("0"..."9").contains($0) }),
            parts.count == 1 || ((1...6).contains(parts[1].count) && parts[1].allSatisfy({ ("0"..."9").contains($0) })),
            let whole = Int64(parts[0])
        else { return nil }
        let scale = unit?.milliseconds ?? 1000
        let fraction = parts.count == 2 ? Int64(parts[1] + String(repeating: "0", count: 6 - parts[1].count))! : 0
        return .milliseconds(whole * scale + (fraction * scale + 500_000) / 1_000_000)
    }

    /// The shortest text `parse` reads back as `duration` at millisecond precision (`1500ms`,
    /// `30s`, `10m`, `207189.1s`). Exact up to 99,999,999 seconds (three years) and for whole
    /// minutes, hours or days beyond; past that, the nearest millionth of a day (86.4 ms).
    public static func format(_ duration: Duration) -> String {
        let ms = max(0, duration.milliseconds)
        for (suffix, scale) in [("d", Int64(86_400_000)), ("h", 3_600_000), ("m", 60_000), ("s", 1000)] {
            if ms != 0, ms % scale == 0, ms / scale <= 99_999_999 { return "\(ms / scale)\(suffix)" }
        }
        if ms <= 99_999_999 { return "\(ms)ms" }
        if ms / 1000 <= 99_999_999 { return decimal(ms, over: 1000, digits: 3) + "s" }
        let millionths = (ms * 10 + 432) / 864  // ms / 86.4, rounded; ms ≤ 8.64e15 fits ×10
        return decimal(millionths, over: 1_000_000, digits: 6) + "d"
    }

    /// `value / divisor` written with up to `digits` decimals, trailing zeros left out.
    private static func decimal(_ value: Int64, over divisor: Int64, digits: Int) -> String {
        let whole = "\(value / divisor)"
        var fraction = String(value % divisor)
        fraction = String(repeating: "0", count: digits - fraction.count) + fraction
        while fraction.hasSuffix("0") { fraction.removeLast() }
        return fraction.isEmpty ? whole : "\(whole).\(fraction)"
    }
}
