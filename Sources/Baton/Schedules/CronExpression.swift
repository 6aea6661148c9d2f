import Foundation

/// When a schedule fires: a cron expression, read as cron users know it, in a time zone.
///
/// - Five fields (`minute hour day-of-month month day-of-week`) or six (seconds first). Each field
///   is `*`, a number, a range `a-b`, a step `*/s`, `a-b/s` or `a/s`, or a comma-separated list of
///   those; months and weekdays also by name (`JAN`, `MON`); Sunday is 0 or 7; `?` is `*` in the
///   day fields. When both day fields are restricted a day matching either is taken (Vixie cron's
///   rule); otherwise both must match.
/// - `@yearly` (`@annually`), `@monthly`, `@weekly`, `@daily` (`@midnight`), `@hourly`.
/// - `@every 30s`: every interval, counted from the Unix epoch, so that every process computes
///   the same instants (whatever the time zone).
///
/// Time zones with daylight saving time behave as in Vixie cron: a time that does not exist (the
/// hour skipped in spring) fires once, at the first instant after the gap; a time that happens
/// twice (the hour repeated in autumn) fires once, the first time, unless the hour field is `*`,
/// in which case both passes fire (an every-minute schedule goes on every minute).
public struct CronExpression: Sendable, Hashable, CustomStringConvertible {
    /// The expression as given.
    public let description: String
    let rule: Rule

    enum Rule: Sendable, Hashable {
        case fields(Fields)
        case every(seconds: Int64)
    }

    struct Fields: Sendable, Hashable {
        var seconds: Set<Int>
        var minutes: Set<Int>
        var hours: Set<Int>
        var daysOfMonth: Set<Int>
        var months: Set<Int>
        /// 0 is Sunday.
        var daysOfWeek: Set<Int>
        var hoursRestricted: Bool
        var daysOfMonthRestricted: Bool
        var daysOfWeekRestricted: Bool
    }

    public init(_ text: String) throws(CronError) {
        description = text
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.hasPrefix("@every") {
            let interval = trimmed.dropFirst("@every".count).trimmingCharacters(in: .whitespaces)
            guard let duration = DurationFormat.parse(interval), duration >= .seconds(1),
                duration.components.attoseconds == 0
            else {
                throw CronError("@every takes a whole number of seconds, at least 1s (e.g. @every 30s, @every 5m)")
            }
            rule = .every(seconds: duration.components.seconds)
            return
        }
        let macros = [
            "@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *", "@weekly": "0 0 * * 0",
            "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
        ]
        var fields = (macros[trimmed.lowercased()] ?? trimmed).split(separator: " ", omittingEmptySubsequences: true)
            .map(String.init)
        if trimmed.hasPrefix("@"), macros[trimmed.lowercased()] == nil {
            throw CronError(
                "unknown macro \(trimmed); macros are \(macros.keys.sorted().joined(separator: ", ")), @every")
        }
        guard fields.count == 5 || fields.count == 6 else {
            throw CronError(
                "a cron expression has 5 fields (minute hour day month weekday) or 6 (seconds first), not \(fields.count)"
            )
        }
        if fields.count == 5 { fields.insert("0", at: 0) }
        let months = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]
        let days = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"]
        let seconds = try Self.field(fields[0], "second", 0...59)
        let minutes = try Self.field(fields[1], "minute", 0...59)
        let hours = try Self.field(fields[2], "hour", 0...23)
        let daysOfMonth = try Self.field(fields[3], "day of month", 1...31, question: true)
        let month = try Self.field(fields[4], "month", 1...12, names: months, firstName: 1)
        var weekday = try Self.field(fields[5], "day of week", 0...7, names: days, firstName: 0, question: true)
        if weekday.values.remove(7) != nil { weekday.values.insert(0) }
        rule = .fields(
            Fields(
                seconds: seconds.values, minutes: minutes.values, hours: hours.values, daysOfMonth: daysOfMonth.values,
                months: month.values, daysOfWeek: weekday.values, hoursRestricted: hours.restricted,
                daysOfMonthRestricted: daysOfMonth.restricted, daysOfWeekRestricted: weekday.restricted))
    }

    /// The values of one field, and whether it restricts (is not `*` or `?`).
    private static func field(
        _ text: String, _ name: String, _ range: ClosedRange<Int>, names: [String] = [], firstName: Int = 0,
        question: Bool = false
    ) throws(CronError) -> (values: Set<Int>, restricted: Bool) {
        func number(_ token: Substring) throws(CronError) -> Int {
            if let value = Int(token), range.contains(value) { return value }
            if let index = names.firstIndex(of: token.uppercased()) { return index + firstName }
            throw CronError("\(name) \"\(token)\" is not within \(range.lowerBound)-\(range.upperBound)")
        }
        if text == "*" || (question && text == "?") { return (Set(range), false) }
        var values: Set<Int> = []
        for item in text.split(separator: ",", omittingEmptySubsequences: false) {
            let parts = item.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
            guard let span = parts.first, !span.isEmpty else {
                throw CronError("\(name) \"\(text)\" has an empty item")
            }
            var step = 1
            if parts.count == 2 {
                guard let value = Int(parts[1]), value >= 1 else {
                    throw CronError("\(name) step \"\(parts[1])\" is not a positive number")
                }
                step = value
            }
            let bounds: ClosedRange<Int>
            if span == "*" {
                bounds = range
            } else if let dash = span.firstIndex(of: "-") {
                let (low, high) = (try number(span[..<dash]), try number(span[span.index(after: dash)...]))
                guard low <= high else { throw CronError("\(name) range \"\(span)\" runs backwards") }
                bounds = low...high
            } else {
                let value = try number(span)
                bounds = value...(parts.count == 2 ? range.upperBound : value)
            }
            values.formUnion(stride(from: bounds.lowerBound, through: bounds.upperBound, by: step))
        }
        return (values, true)
    }

    /// The first instant after `date` at which the expression fires in `zone`; nil if there is
    /// none within five years (`0 0 30 2 *`).
    public func next(after date: Date, in zone: TimeZone) -> Date? {
        switch rule {
        case .every(let seconds):
            let interval = Double(seconds)
            return Date(timeIntervalSince1970: ((date.timeIntervalSince1970 / interval).rounded(.down) + 1) * interval)
        case .fields(let fields):
            return fields.next(after: date, in: zone)
        }
    }
}

extension CronExpression.Fields {
    func next(after date: Date, in zone: TimeZone) -> Date? {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        var t = Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down) + 1)
        let limit = date.addingTimeInterval(5 * 366 * 86400)
        while t < limit {
            let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second, .weekday], from: t)
            guard let year = c.year, let month = c.month, let day = c.day, let hour = c.hour, let minute = c.minute,
                let second = c.second, let weekday = c.weekday
            else { return nil }
            guard months.contains(month) else {
                t = calendar.date(from: DateComponents(year: year, month: month + 1, day: 1)) ?? limit
                continue
            }
            guard dayMatches(day, weekday: weekday - 1) else {
                t = calendar.date(from: DateComponents(year: year, month: month, day: day + 1)) ?? limit
                continue
            }
            // The first instant after a spring-forward gap fires for the times the gap skipped.
            if let skipped = skippedHours(at: t, hour: hour, calendar: calendar), !hours.isDisjoint(with: skipped) {
                return t
            }
            let toNextHour = Double(3600 - minute * 60 - second)
            guard hours.contains(hour) else {
                t += toNextHour
                continue
            }
            guard minutes.contains(minute) else {
                t += Double(60 - second)
                continue
            }
            guard seconds.contains(second) else {
                t += 1
                continue
            }
            // The second pass of an autumn's repeated hour fires only for an every-hour schedule.
            if hoursRestricted, isRepeated(t, zone: zone, calendar: calendar) {
                t += toNextHour
                continue
            }
            return t
        }
        return nil
    }

    func dayMatches(_ day: Int, weekday: Int) -> Bool {
        switch (daysOfMonthRestricted, daysOfWeekRestricted) {
        case (true, true): daysOfMonth.contains(day) || daysOfWeek.contains(weekday)
        default: daysOfMonth.contains(day) && daysOfWeek.contains(weekday)
        }
    }

    /// The local hours skipped just before `t`, if `t` is the first instant after a gap.
    private func skippedHours(at t: Date, hour: Int, calendar: Calendar) -> Range<Int>? {
        let zone = calendar.timeZone
        guard zone.secondsFromGMT(for: t) > zone.secondsFromGMT(for: t - 1) else { return nil }
        let before = calendar.component(.hour, from: t - 1)
        return before + 1 < hour ? (before + 1)..<hour : nil
    }

    /// Whether the wall-clock time of `t` was already shown by an earlier instant (autumn).
    private func isRepeated(_ t: Date, zone: TimeZone, calendar: Calendar) -> Bool {
        let shift = zone.secondsFromGMT(for: t - 7200) - zone.secondsFromGMT(for: t)
        guard shift > 0 else { return false }
        let components: Set<Calendar.Component> = [.year, .month, .day, .hour, .minute, .second]
        return calendar.dateComponents(components, from: t - Double(shift))
            == calendar.dateComponents(components, from: t)
    }
}

/// Why a cron expression or a schedule cannot be read.
public struct CronError: Error, Sendable, Hashable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
