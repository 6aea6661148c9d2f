import Baton
import Foundation
import Testing

/// Cron expressions read as cron users know them, including daylight saving time in a zone that
/// has it (America/New_York, 2026: clocks go forward on March 8 at 02:00, back on November 1 at
/// 02:00). Pure: no clock but the instants given.
struct CronExpressionTests {
    static let utc = TimeZone(identifier: "UTC")!
    static let newYork = TimeZone(identifier: "America/New_York")!

    static func date(_ text: String) -> Date { ISO8601DateFormatter().date(from: text)! }

    /// The next `count` instants after `start`, in RFC 3339 UTC.
    static func fires(_ expression: String, after start: String, in zone: TimeZone = utc, count: Int = 3) throws
        -> [String]
    {
        let cron = try CronExpression(expression)
        var instants: [String] = []
        var now = date(start)
        for _ in 0..<count {
            guard let next = cron.next(after: now, in: zone) else { break }
            instants.append(ISO8601DateFormatter().string(from: next))
            now = next
        }
        return instants
    }

    @Test func fieldsListsRangesStepsAndNames() throws {
        #expect(
            try Self.fires("*/20 9-10 * * MON-FRI", after: "2026-11-27T10:30:00Z", count: 4) == [
                "2026-11-27T10:40:00Z", "2026-11-30T09:00:00Z", "2026-11-30T09:20:00Z", "2026-11-30T09:40:00Z",
            ])
        #expect(
            try Self.fires("0 0 1 JAN,jul *", after: "2026-03-01T00:00:00Z", count: 2) == [
                "2026-07-01T00:00:00Z", "2027-01-01T00:00:00Z",
            ])
        #expect(
            try Self.fires("15/20 * * * *", after: "2026-01-01T00:00:00Z", count: 3) == [
                "2026-01-01T00:15:00Z", "2026-01-01T00:35:00Z", "2026-01-01T00:55:00Z",
            ])
        // Six fields: seconds first. Sunday is 0 and 7.
        #expect(
            try Self.fires("*/15 0 0 * * *", after: "2026-01-01T00:00:20Z", count: 2) == [
                "2026-01-01T00:00:30Z", "2026-01-01T00:00:45Z",
            ])
        #expect(try Self.fires("0 12 * * 7", after: "2026-11-25T00:00:00Z", count: 1) == ["2026-11-29T12:00:00Z"])
    }

    /// Both day fields restricted: either matches (Vixie cron); one restricted: it alone decides.
    @Test func dayOfMonthAndDayOfWeek() throws {
        #expect(
            try Self.fires("0 0 13 * FRI", after: "2026-11-01T00:00:00Z", count: 3) == [
                "2026-11-06T00:00:00Z", "2026-11-13T00:00:00Z", "2026-11-20T00:00:00Z",
            ])
        #expect(try Self.fires("0 0 ? * FRI", after: "2026-11-01T00:00:00Z", count: 1) == ["2026-11-06T00:00:00Z"])
        #expect(try Self.fires("0 0 29 2 *", after: "2026-03-01T00:00:00Z", count: 1) == ["2028-02-29T00:00:00Z"])
        #expect(try CronExpression("0 0 30 2 *").next(after: Self.date("2026-01-01T00:00:00Z"), in: Self.utc) == nil)
    }

    @Test func macrosAndEvery() throws {
        #expect(try Self.fires("@hourly", after: "2026-01-01T00:30:00Z", count: 1) == ["2026-01-01T01:00:00Z"])
        #expect(try Self.fires("@weekly", after: "2026-11-25T00:00:00Z", count: 1) == ["2026-11-29T00:00:00Z"])
        #expect(try Self.fires("@yearly", after: "2026-11-25T00:00:00Z", count: 1) == ["2027-01-01T00:00:00Z"])
        // From the epoch, whatever the zone and whenever asked: every process computes the same slots.
        #expect(
            try Self.fires("@every 40s", after: "2026-01-01T00:00:05Z", in: Self.newYork, count: 2) == [
                "2026-01-01T00:00:40Z", "2026-01-01T00:01:20Z",
            ])
    }

    /// In a zone's time, and in spring the skipped hour's times fire once, when the gap ends.
    @Test func springForwardFiresSkippedTimesAtTheEndOfTheGap() throws {
        // 02:30 does not exist on March 8: 03:00 EDT (07:00Z), then 02:30 EDT the next day.
        #expect(
            try Self.fires("30 2 * * *", after: "2026-03-07T12:00:00Z", in: Self.newYork, count: 3) == [
                "2026-03-08T07:00:00Z", "2026-03-09T06:30:00Z", "2026-03-10T06:30:00Z",
            ])
        // Hourly: 01:00 EST, then 03:00 EDT once (for the skipped 02:00 and its own 03:00).
        #expect(
            try Self.fires("0 * * * *", after: "2026-03-08T05:30:00Z", in: Self.newYork, count: 3) == [
                "2026-03-08T06:00:00Z", "2026-03-08T07:00:00Z", "2026-03-08T08:00:00Z",
            ])
        #expect(
            try Self.fires("0 9 * * *", after: "2026-03-07T15:00:00Z", in: Self.newYork, count: 2) == [
                "2026-03-08T13:00:00Z", "2026-03-09T13:00:00Z",
            ])
    }

    /// In autumn a time that happens twice fires once, the first time; an every-hour schedule fires
    /// in both passes.
    @Test func fallBackFiresARepeatedTimeOnce() throws {
        // 01:30 EDT (05:30Z) happens again as 01:30 EST (06:30Z): once.
        #expect(
            try Self.fires("30 1 * * *", after: "2026-10-31T12:00:00Z", in: Self.newYork, count: 2) == [
                "2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z",
            ])
        #expect(
            try Self.fires("*/30 * * * *", after: "2026-11-01T04:50:00Z", in: Self.newYork, count: 5) == [
                "2026-11-01T05:00:00Z", "2026-11-01T05:30:00Z", "2026-11-01T06:00:00Z", "2026-11-01T06:30:00Z",
                "2026-11-01T07:00:00Z",
            ])
    }

    @Test func badExpressionsSayWhatIsWrong() {
        for (text, says) in [
            ("* * * *", "5 fields"), ("60 * * * *", "minute \"60\""), ("* * * 13 *", "month \"13\""),
            ("5-1 * * * *", "runs backwards"), ("*/0 * * * *", "step"), ("@every 0s", "@every"),
            ("@every 1.5s", "@every"), ("@fortnightly", "unknown macro"), ("1,,2 * * * *", "empty item"),
            ("* * * * FUNDAY", "day of week \"FUNDAY\""),
        ] {
            #expect(throws: CronError.self) { try CronExpression(text) }
            do {
                _ = try CronExpression(text)
            } catch {
                #expect(error.description.contains(says), "\(text): \(error)")
            }
        }
    }

    /// After downtime: `skip` runs nothing missed (a slot under a minute late is on time), `latest`
    /// the latest, `missed:N` the last N; each gives the next slot after now.
    @Test func misfirePolicies() throws {
        let every10 = try CronExpression("@every 10m")
        let next = Self.date("2026-01-01T00:00:00Z")
        let now = Self.date("2026-01-01T01:05:00Z")
        let following = Self.date("2026-01-01T01:10:00Z")
        let skip = MisfirePolicy.skip.due(every10, in: Self.utc, next: next, now: now)
        #expect(skip.slots.isEmpty && skip.next == following)
        let onTime = MisfirePolicy.skip.due(every10, in: Self.utc, next: next, now: Self.date("2026-01-01T00:00:30Z"))
        #expect(onTime.slots == [next])
        #expect(
            MisfirePolicy.runLatest.due(every10, in: Self.utc, next: next, now: now).slots == [
                Self.date("2026-01-01T01:00:00Z")
            ])
        #expect(
            MisfirePolicy.runMissed(3).due(every10, in: Self.utc, next: next, now: now).slots == [
                Self.date("2026-01-01T00:40:00Z"), Self.date("2026-01-01T00:50:00Z"), Self.date("2026-01-01T01:00:00Z"),
            ])
        #expect(MisfirePolicy.skip.due(every10, in: Self.utc, next: following, now: now).slots.isEmpty, "not due yet")
        #expect(try MisfirePolicy(parsing: "missed:5") == .runMissed(5))
        #expect(throws: CronError.self) { try MisfirePolicy(parsing: "sometimes") }
    }
}
