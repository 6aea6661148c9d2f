import Foundation
import Testing

@testable import Baton

/// Baton's JSON reader and writer: what they read they write back unchanged, numbers included,
/// and they refuse what RFC 8259 refuses.
struct JSONTextTests {
    /// A deterministic generator of JSON values of every kind.
    struct Values: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return state
        }

        mutating func value(depth: Int = 0) -> JSONValue {
            switch Int.random(in: depth > 3 ? 0...3 : 0...5, using: &self) {
            case 0: return .null
            case 1: return .bool(Bool.random(using: &self))
            case 2: return .number(number())
            case 3: return .string(string())
            case 4: return .array((0..<Int.random(in: 0...4, using: &self)).map { _ in value(depth: depth + 1) })
            default:
                return .object(
                    Dictionary(
                        (0..<Int.random(in: 0...4, using: &self)).map { _ in (string(), value(depth: depth + 1)) },
                        uniquingKeysWith: { $1 }))
            }
        }

        /// Integers of any length, decimals and exponents, as a caller might write them.
        mutating func number() -> JSONNumber {
            func digits(_ range: ClosedRange<Int>) -> String {
                String((0..<Int.random(in: range, using: &self)).map { _ in "0123456789".randomElement(using: &self)! })
            }
            var text = Bool.random(using: &self) ? "-" : ""
            let integer = digits(1...30)
            text += integer.count > 1 ? "1" + integer.dropFirst() : integer
            if Bool.random(using: &self) { text += "." + digits(1...20) }
            if Int.random(in: 0...3, using: &self) == 0 {
                text +=
                    ["e", "E", "e+", "e-"].randomElement(using: &self)! + String(Int.random(in: 0...500, using: &self))
            }
            return JSONNumber(text)!
        }

        mutating func string() -> String {
            let alphabet: [Unicode.Scalar] = [
                "a", "Z", "0", " ", "\"", "\\", "/", "\n", "\t", "\u{1}", "\u{1f}", "é", "€", "😀", "\u{0}",
            ]
            return String(
                String.UnicodeScalarView(
                    (0..<Int.random(in: 0...8, using: &self)).map { _ in alphabet.randomElement(using: &self)! }))
        }
    }

    @Test func whatIsWrittenReadsBackAsTheSameValueAndText() throws {
        var values = Values(state: 42)
        for _ in 0..<2000 {
            let value = values.value()
            let text = value.jsonText
            let read = try JSONValue(parsing: text)
            #expect(read == value, "\(text)")
            #expect(read.jsonText == text)
            #expect(try JSONValue(parsing: value.prettyText) == value)
        }
    }

    /// The numbers Foundation's `JSONDecoder` rounds (to `Double`), and PostgreSQL keeps.
    static let exactNumbers = [
        "9007199254740993", "-9007199254740993", "12345678901234567890", "18446744073709551616",
        "123456789012345678901234567890123456789012345678901234567890", "0.1", "0.30000000000000004441",
        "1e-7", "1E+2", "-0", "-0.0", "1e400", "1e-400", "2.5e-324", "123456789.123456789123456789",
        "0.000000000000000000000000000000000000000000000000000001",
    ]

    @Test(arguments: exactNumbers)
    func aNumberIsWrittenAsItWasRead(_ text: String) throws {
        let value = try JSONValue(parsing: "{\"n\": [\(text)]}")
        #expect(value.jsonText == "{\"n\":[\(text)]}")
        #expect(value["n"]?.arrayValue?.first?.numberValue?.text == text)
    }

    @Test func numbersAreEqualWhenTheirValuesAre() throws {
        let same: [(JSONNumber, JSONNumber)] = [
            ("1", "1.0"), ("100", "1e2"), ("100", "1E+2"), ("1.00", "100e-2"), ("0", "-0"), ("0", "0e-20"),
            ("0.1", "1e-1"), ("12345678901234567890", "1.234567890123456789e19"), ("-5", "-50e-1"),
        ].map { (JSONNumber($0)!, JSONNumber($1)!) }
        for (left, right) in same {
            #expect(left == right, "\(left) = \(right)")
            #expect(left.hashValue == right.hashValue, "\(left) and \(right) hash alike")
        }
        let different: [(String, String)] = [
            ("9007199254740993", "9007199254740992"), ("0.1", "0.10000000000000001"), ("1", "-1"), ("1e400", "1e401"),
            ("1e99999999999999999999", "1e99999999999999999998"),
        ]
        for (left, right) in different { #expect(JSONNumber(left)! != JSONNumber(right)!, "\(left) ≠ \(right)") }
        #expect(try JSONValue(parsing: "{\"a\": [1.0, 2]}") == ["a": [1, 2.0]])
    }

    @Test func integersAreReadExactlyOrNotAtAll() {
        #expect(JSONNumber("1e3")!.integer(as: Int.self) == 1000)
        #expect(JSONNumber("2.50e1")!.integer(as: Int.self) == 25)
        #expect(JSONNumber("-0")!.integer(as: Int.self) == 0)
        #expect(JSONNumber("1.5")!.integer(as: Int.self) == nil)
        #expect(JSONNumber("9223372036854775807")!.integer(as: Int64.self) == .max)
        #expect(JSONNumber("9223372036854775808")!.integer(as: Int64.self) == nil)
        #expect(JSONNumber("18446744073709551615")!.integer(as: UInt64.self) == .max)
        #expect(JSONNumber("-1")!.integer(as: UInt.self) == nil)
        #expect(JSONNumber("1e400")!.integer(as: Int.self) == nil)
        #expect(JSONNumber("9007199254740993")!.double == 9_007_199_254_740_992)
        #expect(JSONNumber("1e400")!.double == .infinity)
        #expect(JSONNumber("0.1")!.decimal == Decimal(string: "0.1"))
        #expect(JSONNumber("1e400")!.decimal == nil)
        #expect(JSONNumber(0.1).text == "0.1")
        #expect(JSONNumber(5.0).text == "5")
        #expect(JSONNumber(1e20).text == "1e+20")
        #expect(JSONNumber(Double.nan) == nil)
        #expect(JSONNumber(Decimal(string: "0.0000001")!)!.text == "0.0000001")
    }

    /// PostgreSQL's `numeric` limits, as `isStorable` states them (`StoreTests` checks the same
    /// numbers against a real server).
    static let storability: [(String, Bool)] = [
        ("1e131071", true), ("1e131072", false), ("9.9e131071", true), ("10e131071", false), ("1e-16383", true),
        ("1e-16384", false), ("1.5e-16382", true), ("1.5e-16383", false), ("0e-16383", true), ("0e-16384", false),
        ("1e200000", false), ("-1e400", true), ("1e-400", true), ("0.5", true), ("1e99999999999999999999", false),
        ("12345678901234567890", true),
    ]

    @Test func storabilityFollowsPostgreSQLNumeric() {
        for (text, storable) in Self.storability {
            #expect(JSONNumber(text)!.isStorable == storable, "\(text)")
        }
    }

    @Test func readsEscapes() throws {
        #expect(try JSONValue(parsing: #""\u00e9\ud83d\ude00\n\t\"\\\/\b\f\r""#) == .string("é😀\n\t\"\\/\u{8}\u{c}\r"))
        #expect(try JSONValue(parsing: #"{"a": 1, "a": 2}"#) == ["a": 2])
        #expect(throws: JSONParseError.self) { try JSONValue(parsing: #"{"a": 1, "a": 2}"#, duplicateKeys: .refuse) }
        #expect(try JSONValue(parsing: #"{"a": {"a": 2}}"#, duplicateKeys: .refuse) == ["a": ["a": 2]])
        #expect(try JSONValue(parsing: "{}") == [:])
        #expect(try JSONValue(parsing: "[[]]") == [[]])
        #expect(JSONValue.string("\u{1}\u{0}").jsonText == #""\u0001\u0000""#)
        #expect(JSONValue.object(["b": 1, "a": [true, nil]]).jsonText == #"{"a":[true,null],"b":1}"#)
        #expect(
            JSONValue.object(["b": 1, "a": [true, nil], "c": [:]]).prettyText == """
                {
                  "a": [
                    true,
                    null
                  ],
                  "b": 1,
                  "c": {}
                }
                """)
    }

    @Test(arguments: [
        "", " ", "[1,]", "{\"a\":1,}", "01", "1.", ".5", "-", "1e", "NaN", "Infinity", "tru", "nul", "\"abc",
        "\"a\u{1}b\"", #""\ud800""#, #""\ud800\u0041""#, #""\udc00""#, #""\x""#, #""\u12g4""#, "1 2", "[1 2]",
        "{\"a\" 1}", "{1: 2}", "[", "{", "'a'", "+1", "-01", "1.e5", "0x10",
    ])
    func refusesInvalidText(_ text: String) {
        #expect(throws: JSONParseError.self) { try JSONValue(parsing: text) }
        #expect(JSONNumber(text) == nil)
    }

    @Test func refusesInvalidUTF8AndDeepNesting() {
        #expect(throws: JSONParseError.self) { try JSONValue(parsing: [0x22, 0xff, 0x22]) }
        let deep =
            String(repeating: "[", count: JSONValue.maxDepth + 1)
            + String(repeating: "]", count: JSONValue.maxDepth + 1)
        #expect(throws: JSONParseError.self) { try JSONValue(parsing: deep) }
        let fine = String(repeating: "[", count: JSONValue.maxDepth) + String(repeating: "]", count: JSONValue.maxDepth)
        #expect((try? JSONValue(parsing: fine)) != nil)
    }
}
