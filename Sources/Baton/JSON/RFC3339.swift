import Foundation

/// RFC 3339 times as Baton writes and reads them, in the proleptic Gregorian calendar that
/// PostgreSQL uses: every date from year 1 comes back as it went in. Foundation's
/// `ISO8601FormatStyle` reads and writes dates before October 1582 in the Julian calendar, and
/// PostgreSQL's binary times are proleptic: a job enqueued for `0532-01-05` was stored for that
/// day and shown as `0532-01-03`. Hence the arithmetic here (days from a civil date and back,
/// after Howard Hinnant's algorithms), which is also a fraction of Foundation's cost.
public enum RFC3339 {
    /// UTC with milliseconds (`2026-01-31T09:30:00.123Z`), rounded to the nearest: a `Date` far
    /// from 2001 holds a time to some tens of microseconds, so `…04.701` read back is a hair
    /// under it, and rounding down would write `.700`. Years past 9999 are written with more
    /// digits, years before 1 with a sign (year 0 is 1 BC), as PostgreSQL can hold them; RFC 3339
    /// itself ends at 0000 and 9999.
    public static func format(_ date: Date) -> String {
        let milliseconds = (date.timeIntervalSince1970 * 1000).rounded()
        guard milliseconds.magnitude < 1e18, let total = Int64(exactly: milliseconds) else { return "\(date)" }
        let days = floorDivide(total, 86_400_000)
        let ofDay = total - days * 86_400_000
        let (year, month, day) = civil(fromDays: days)
        var text = year < 0 ? "-" : ""
        text += digits(abs(year), 4) + "-" + digits(month, 2) + "-" + digits(day, 2) + "T"
        text += digits(ofDay / 3_600_000, 2) + ":" + digits(ofDay / 60_000 % 60, 2) + ":"
        text += digits(ofDay / 1000 % 60, 2) + "." + digits(ofDay % 1000, 3) + "Z"
        return text
    }

    /// `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`, `T` and `Z` in either case: each field in its
    /// range (a year from 0001, the first PostgreSQL reads; the day in its month; a second of 60
    /// read as the next minute's first), any offset RFC 3339 allows (up to ±23:59: Foundation's
    /// parser stopped at ±18:00), any number of fraction digits (kept to the microsecond).
    /// PostgreSQL's JSON form of `timestamptz` (`2026-01-31T09:30:00.123456+00:00`) is one.
    public static func parse(_ text: String) -> Date? {
        var text = text
        return text.withUTF8 { parse(bytes: $0) }
    }

    private static func parse(bytes: UnsafeBufferPointer<UInt8>) -> Date? {
        func number(_ at: Int, _ count: Int) -> Int64? {
            guard at + count <= bytes.count else { return nil }
            var value: Int64 = 0
            for byte in bytes[at..<at + count] {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
                value = value * 10 + Int64(byte - UInt8(ascii: "0"))
            }
            return value
        }
        func byte(_ at: Int, _ allowed: StaticString) -> Bool {
            guard at < bytes.count else { return false }
            return UnsafeBufferPointer(start: allowed.utf8Start, count: allowed.utf8CodeUnitCount).contains(bytes[at])
        }
        guard let year = number(0, 4), year >= 1, byte(4, "-"), let month = number(5, 2), (1...12).contains(month),
            byte(7, "-"), let day = number(8, 2), day >= 1, day <= daysIn(month: month, of: year), byte(10, "Tt"),
            let hour = number(11, 2), hour < 24, byte(13, ":"), let minute = number(14, 2), minute < 60,
            byte(16, ":"), let second = number(17, 2), second <= 60
        else { return nil }
        var at = 19
        var microseconds: Int64 = 0
        if byte(at, ".") {
            at += 1
            let digits = bytes[at...].prefix { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }.count
            guard digits > 0 else { return nil }
            // The first seven digits, rounded to microseconds; the rest cannot change that.
            let kept = min(digits, 7)
            guard var fraction = number(at, kept) else { return nil }
            for _ in kept..<7 { fraction *= 10 }
            microseconds = (fraction + 5) / 10
            at += digits
        }
        var offset: Int64 = 0
        if byte(at, "Zz") {
            guard at + 1 == bytes.count else { return nil }
        } else {
            guard byte(at, "+-"), let hours = number(at + 1, 2), hours < 24, byte(at + 3, ":"),
                let minutes = number(at + 4, 2), minutes < 60, at + 6 == bytes.count
            else { return nil }
            offset = (hours * 60 + minutes) * 60 * (bytes[at] == UInt8(ascii: "-") ? -1 : 1)
        }
        let date = days(fromYear: year, month: month, day: day)
        let seconds = date * 86_400 + hour * 3600 + minute * 60 + second - offset
        return Date(timeIntervalSince1970: Double(seconds) + Double(microseconds) / 1e6)
    }

    // MARK: The proleptic Gregorian calendar

    static func isLeap(_ year: Int64) -> Bool { year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) }

    static func daysIn(month: Int64, of year: Int64) -> Int64 {
        switch month {
        case 2: isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days from 1970-01-01 to the date.
    static func days(fromYear year: Int64, month: Int64, day: Int64) -> Int64 {
        let year = month <= 2 ? year - 1 : year
        let era = floorDivide(year, 400)
        let yearOfEra = year - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The date `days` after 1970-01-01.
    static func civil(fromDays days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let shifted = days + 719_468
        let era = floorDivide(shifted, 146_097)
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    private static func floorDivide(_ value: Int64, _ divisor: Int64) -> Int64 {
        let quotient = value / divisor
        return value % divisor < 0 ? quotient - 1 : quotient
    }

    private static func digits(_ value: Int64, _ width: Int) -> String {
        let text = String(value)
        return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
    }
}
