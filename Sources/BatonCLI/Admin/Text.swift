import Baton
import Foundation

/// Text for people: ages, durations, previews; server text made safe to print.
enum Text {
    /// How long ago `date` was (`12s`, `5m`, `3h`, `2d`); a future date reads `in 5s`.
    static func age(_ date: Date, now: Date = Date()) -> String {
        let seconds = now.timeIntervalSince(date)
        return seconds < -0.5 ? "in " + span(-seconds) : span(max(0, seconds))
    }

    /// A coarse span of time: one or two units.
    static func span(_ seconds: Double) -> String {
        let whole = Int(seconds.rounded(.down))
        switch whole {
        case ..<60: return "\(whole)s"
        case ..<3600: return "\(whole / 60)m" + (whole % 60 == 0 || whole >= 600 ? "" : "\(whole % 60)s")
        case ..<86_400:
            return "\(whole / 3600)h" + (whole % 3600 < 60 || whole >= 36_000 ? "" : "\(whole % 3600 / 60)m")
        default: return "\(whole / 86_400)d" + (whole % 86_400 < 3600 ? "" : "\(whole % 86_400 / 3600)h")
        }
    }

    /// How long something took, finer than `span` below a minute (`85ms`, `1.2s`).
    static func duration(_ seconds: Double) -> String {
        if seconds < 1 { return "\(Int((seconds * 1000).rounded()))ms" }
        if seconds < 10 { return String(format: "%.1fs", seconds) }
        return span(seconds)
    }

    /// A UTC time to the second: `2026-11-23 15:37:02Z` (in PostgreSQL's calendar, as the API
    /// writes it: Foundation's would write a date before 1582 in the Julian one).
    static func time(_ date: Date) -> String {
        let text = RFC3339.format(date)
        return text.prefix(10) + " " + text.dropFirst(11).prefix(8) + "Z"
    }

    /// Compact JSON, cut to `limit` characters.
    static func preview(_ value: JSONValue, limit: Int) -> String {
        truncate(printable(value.jsonText), to: limit)
    }

    /// `text` in at most `width` characters, ending in `…` when cut.
    static func truncate(_ text: String, to width: Int) -> String {
        guard text.count > width else { return text }
        guard width > 1 else { return String(text.prefix(max(0, width))) }
        return String(text.prefix(width - 1)) + "…"
    }

    /// Server-provided text on one line and without control characters: an error message must not
    /// break a table, nor move the cursor or change colours (terminal escapes).
    static func printable(_ text: String) -> String {
        var result = ""
        result.unicodeScalars.reserveCapacity(text.unicodeScalars.count)
        var lastWasSpace = false
        for scalar in text.unicodeScalars {
            if scalar == "\n" || scalar == "\r" || scalar == "\t" {
                if !lastWasSpace { result.unicodeScalars.append(" ") }
                lastWasSpace = true
                continue
            }
            lastWasSpace = scalar == " "
            let isControl = scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
            result.unicodeScalars.append(isControl ? "?" : scalar)
        }
        return result
    }

    /// "1 attempt", "3 attempts".
    static func count(_ n: Int, _ noun: String) -> String { "\(n) \(noun)\(n == 1 ? "" : "s")" }
}
