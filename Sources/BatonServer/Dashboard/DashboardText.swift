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

    /// `text` with every byte but RFC 3986's unreserved ones (`A-Z a-z 0-9 - . _ ~`) percent-encoded,
    /// for a query value or a path segment. By hand: a page holds hundreds of links, and
    /// Foundation's `addingPercentEncoding` with a `CharacterSet` made on Linux cost the lanes page
    /// more than its queries did.
    static func percentEncoded(_ text: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                bytes.append(byte)
            default:
                bytes += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// A JSON value indented for reading (exact: numbers as they were given).
    static func json(_ value: JSONValue) -> String { value.prettyText }
}
