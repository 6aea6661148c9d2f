import Foundation
import Testing

@testable import Baton

/// `JSONValue(encoding:)` and `decode(as:)`: Swift values to JSON and back without rounding.
struct JSONCodingTests {
    struct Order: Codable, Equatable {
        var id: Int64
        var count: UInt64
        var price: Decimal
        var ratio: Double
        var small: Float
        var payload: JSONValue
        var extra: [String: JSONValue]
        var placed: Date
        var blob: Data
        var link: URL
        var note: String?
        var tags: [String]
        var nested: [[Int8]]
    }

    static let order = Order(
        id: .min, count: .max, price: Decimal(string: "123456789012345678901234567890.5")!, ratio: 0.1, small: 0.1,
        payload: try! JSONValue(parsing: #"{"big": 12345678901234567890123, "tiny": 1e-400, "huge": 1e400}"#),
        extra: ["n": 9_007_199_254_740_993], placed: Date(timeIntervalSince1970: 1_790_000_000.125),
        blob: Data([0, 1, 255]), link: URL(string: "https://example.com/a?b=c")!, note: nil, tags: ["x"],
        nested: [[-128, 127], []])

    @Test func aValueGoesToJSONTextAndBackUnchanged() throws {
        let json = try JSONValue(encoding: Self.order)
        let text = json.jsonText
        #expect(text.contains(#""id":-9223372036854775808"#))
        #expect(text.contains(#""count":18446744073709551615"#))
        #expect(text.contains(#""price":123456789012345678901234567890.5"#))
        #expect(text.contains(#""big":12345678901234567890123"#))
        #expect(text.contains(#""huge":1e400"#))
        #expect(text.contains(#""tiny":1e-400"#))
        #expect(text.contains(#""n":9007199254740993"#))
        #expect(text.contains(#""ratio":0.1"#))
        #expect(text.contains(#""small":0.1"#))
        #expect(text.contains(#""placed":"2026-09-21T14:13:20.125Z""#))
        #expect(text.contains(#""blob":"AAH/""#))
        #expect(!text.contains("note"), "a nil optional is left out")
        #expect(try JSONValue(parsing: text).decode(as: Order.self) == Self.order)
    }

    @Test func anIntegerFieldRefusesWhatItCannotHoldExactly() throws {
        struct Count: Decodable { var n: Int32 }
        for refused in ["1.5", "2147483648", "1e10", "\"1\"", "null", "1e400"] {
            #expect(throws: DecodingError.self, "\(refused)") {
                try JSONValue(parsing: "{\"n\": \(refused)}").decode(as: Count.self)
            }
        }
        #expect(try JSONValue(parsing: #"{"n": 1e3}"#).decode(as: Count.self).n == 1000)
        #expect(throws: DecodingError.self) { try JSONValue(parsing: "1e400").decode(as: Double.self) }
    }

    @Test func aDecodingErrorNamesThePath() throws {
        struct Outer: Decodable { var items: [Inner] }
        struct Inner: Decodable { var n: Int }
        do {
            _ = try JSONValue(parsing: #"{"items": [{"n": 1}, {"n": 0.5}]}"#).decode(as: Outer.self)
            Issue.record("decoded 0.5 as an Int")
        } catch let DecodingError.dataCorrupted(context) {
            #expect(JSONPath.render(context.codingPath) == "items[1].n")
        }
    }

    /// RFC 3339 allows offsets up to ±23:59; Foundation's parser stops at ±18:00.
    @Test func anyOffsetRFC3339AllowsIsRead() {
        let utc = RFC3339.parse("9308-06-24T01:17:24Z")
        #expect(utc != nil)
        #expect(RFC3339.parse("9308-06-24T20:29:24+19:12") == utc)
        #expect(RFC3339.parse("9308-06-23T05:17:24.000-20:00") == utc)
        #expect(RFC3339.parse("2026-01-31T09:30:00+24:00") == nil)
        #expect(RFC3339.parse("2026-01-31T09:30:00+05:60") == nil)
        #expect(RFC3339.parse("+19:12") == nil)
        // Foundation's parser alone would take these.
        #expect(RFC3339.parse("2024-01-01T12:99:00Z") == nil)
        #expect(RFC3339.parse("2024-13-01T12:00:00Z") == nil)
        #expect(RFC3339.parse("2024-01-01T12:00:00") == nil)
        #expect(RFC3339.parse("2024-01-01T12:00:00.Z") == nil)
        #expect(RFC3339.parse("2024-01-01t12:00:00.5z") == RFC3339.parse("2024-01-01T12:00:00.500Z"))
    }

    /// Dates before the Gregorian reform come back as they went in, at the instant PostgreSQL
    /// gives them (`extract(epoch FROM '0532-01-05 03:43:28+00'::timestamptz)`). Foundation reads
    /// and writes them in the Julian calendar, PostgreSQL in the proleptic Gregorian: a job
    /// enqueued for `0532-01-05` was stored so, and shown as `0532-01-03`.
    @Test func datesOfEveryCenturyRoundTripInPostgreSQLsCalendar() throws {
        #expect(RFC3339.parse("0532-01-05T03:43:28Z") == Date(timeIntervalSince1970: -45_378_562_592))
        #expect(RFC3339.parse("0001-01-01T00:00:00Z") == Date(timeIntervalSince1970: -62_135_596_800))
        #expect(RFC3339.parse("9999-12-31T23:59:59.999Z") == Date(timeIntervalSince1970: 253_402_300_799.999))
        #expect(RFC3339.format(Date(timeIntervalSince1970: -45_378_562_592)) == "0532-01-05T03:43:28.000Z")
        #expect(RFC3339.parse("0532-01-05T03:43:28.5+00:00") == RFC3339.parse("0532-01-05T03:43:28.500Z"))
        #expect(RFC3339.parse("0000-01-01T00:00:00Z") == nil)  // PostgreSQL has no year 0
        #expect(RFC3339.parse("2024-02-29T00:00:00Z") != nil)
        #expect(RFC3339.parse("2000-02-29T00:00:00Z") != nil)
        #expect(RFC3339.parse("2023-02-29T00:00:00Z") == nil)
        #expect(RFC3339.parse("1900-02-29T00:00:00Z") == nil)
        #expect(RFC3339.parse("2026-04-31T00:00:00Z") == nil)
        #expect(RFC3339.parse("2026-12-31T23:59:60Z") == RFC3339.parse("2027-01-01T00:00:00Z"))
        #expect(RFC3339.parse("2026-01-31T09:30:00.1234567Z") == RFC3339.parse("2026-01-31T09:30:00.123457Z"))

        var random = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            // Any millisecond of years 0001 to 9999: written, read back, written again the same.
            let milliseconds = Int64.random(in: -62_135_596_800_000...253_402_300_799_999, using: &random)
            let date = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
            let text = RFC3339.format(date)
            let read = try #require(RFC3339.parse(text), "\(text)")
            #expect(RFC3339.format(read) == text)
            #expect(abs(read.timeIntervalSince1970 - date.timeIntervalSince1970) < 1e-4, "\(text)")
            // From 1583 on, Foundation's parser reads the same time.
            if milliseconds >= -12_212_553_600_000 {
                let foundation = try Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text)
                #expect(abs(foundation.timeIntervalSince1970 - date.timeIntervalSince1970) < 1e-3, "\(text)")
            }
        }
    }

    @Test func datesFromPostgreSQLAndFromBatonBothDecode() throws {
        let time = Date(timeIntervalSince1970: 1_790_000_000.125)
        #expect(try JSONValue.string("2026-09-21T14:13:20.125Z").decode(as: Date.self) == time)
        #expect(try JSONValue.string("2026-09-21T16:13:20.125+02:00").decode(as: Date.self) == time)
        #expect(
            try JSONValue.string("2026-09-21T14:13:20Z").decode(as: Date.self)
                == Date(timeIntervalSince1970: 1_790_000_000))
        #expect(throws: DecodingError.self) { try JSONValue.string("yesterday").decode(as: Date.self) }
    }

    @Test func classesEnumsAndDictionariesUseTheirOwnCodable() throws {
        enum Kind: String, Codable { case a, b }
        let value: [String: [Kind?]] = ["x": [.a, nil, .b]]
        let json = try JSONValue(encoding: value)
        #expect(json == ["x": ["a", nil, "b"]])
        #expect(try json.decode(as: [String: [Kind?]].self) == value)
        let keyedByInt: [Int: String] = [1: "one", 20: "twenty"]
        #expect(try JSONValue(encoding: keyedByInt) == ["1": "one", "20": "twenty"])
        #expect(try JSONValue(encoding: keyedByInt).decode(as: [Int: String].self) == keyedByInt)
        #expect(throws: EncodingError.self) { try JSONValue(encoding: [Double.infinity]) }
    }

    /// Foundation's `JSONDecoder` rounds such numbers: the reason Baton has coders of its own. A
    /// `JSONValue` it decodes is as exact as its 64-bit integers and `Double` allow.
    @Test func foundationRoundsWhatBatonKeeps() throws {
        let text = #"{"a": 9007199254740993, "b": 12345678901234567890123}"#
        let viaFoundation = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
        #expect(viaFoundation["a"] == 9_007_199_254_740_993, "a 64-bit integer survives")
        #expect(viaFoundation["b"] != (try JSONValue(parsing: text))["b"], "a larger one does not")
    }
}
