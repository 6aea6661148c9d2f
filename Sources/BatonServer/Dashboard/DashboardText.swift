import Baton
import Foundation

/// How the dashboard writes times, spans and JSON.
enum DashboardText {
    /// `2026-11-25 14:03:07 UTC`.
    static func time(_ date: Date) -> String {
        let text = RFC3339.format(date)
        return text.prefix(10) + " " + text.dropFirst(11).prefix(8) + " UTC"
    }

    /// `3s`, `4m`, `2h 5m`, `3d 4h`.
    static func span(_ seconds: Double) -> String {
        if seconds < 1 { return "\(Int((max(0, seconds) * 1000).rounded()))ms" }
        if seconds < 10 { return String(format: "%.1fs", seconds) }
        let seconds = Int(seconds.rounded())
        switch seconds {
        case ..<60: return "\(seconds)s"
        case ..<3600: return "\(seconds / 60)m"
        case ..<86400: return "\(seconds / 3600)h \(seconds % 3600 / 60)m"
        default: return "\(seconds / 86400)d \(seconds % 86400 / 3600)h"
        }
    }

    /// `4m ago` or `in 4m`.
    static func relative(_ date: Date, now: Date) -> String {
        let seconds = now.timeIntervalSince(date)
        return seconds >= 0 ? span(seconds) + " ago" : "in " + span(-seconds)
    }

    /// A JSON value indented for reading (exact: numbers as they were given).
    static func json(_ value: JSONValue) -> String { value.prettyText }
}
