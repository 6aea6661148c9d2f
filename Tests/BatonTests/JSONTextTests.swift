import Foundation
import Testing

@testable import Baton

/// Baton's own JSON reader and writer agree with Foundation's and with themselves, and refuse
/// what RFC 8259 refuses.
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
            case 2:
                return Bool.random(using: &self)
                    ? .number(Double(Int.random(in: -1_000_000...1_000_000, using: &self)))
                    : .number(Double.random(in: -1e12...1e12, using: &self))
            case 3: return .string(string())
            case 4: return .array((0..<Int.random(in: 0...4, using: &self)).map { _ in value(depth: depth + 1) })
            default:
                return .object(
                    Dictionary(
                        (0..<Int.random(in: 0...4, using: &self)).map { _ in (string(), value(depth: depth + 1)) },
                        uniquingKeysWith: { $1 }))
            }
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

    @Test func roundTripsAndAgreesWithFoundation() throws {
        var values = Values(state: 42)
        for _ in 0..<2000 {
            let value = values.value()
            let text = value.jsonText
            #expect(try JSONValue(parsing: text) == value, "\(text)")
            #expect(try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)) == value, "\(text)")
            let foundation = String(decoding: try JSONEncoder().encode(value), as: UTF8.self)
            #expect(try JSONValue(parsing: foundation) == value, "\(foundation)")
        }
    }

    @Test func readsEscapesAndNumbers() throws {
        #expect(try JSONValue(parsing: #""\u00e9\ud83d\ude00\n\t\"\\\/\b\f\r""#) == .string("é😀\n\t\"\\/\u{8}\u{c}\r"))
        #expect(try JSONValue(parsing: " [1, -0.5, 2e3, 1E-2, 0, -0] ") == [1, -0.5, 2000, 0.01, 0, 0])
        #expect(try JSONValue(parsing: #"{"a": 1, "a": 2}"#) == ["a": 2])
        #expect(try JSONValue(parsing: "{}") == [:])
        #expect(try JSONValue(parsing: "[[]]") == [[]])
        #expect(JSONValue.string("\u{1}\u{0}").jsonText == #""\u0001\u0000""#)
        #expect(JSONValue.number(1e20).jsonText == "1e+20")
        #expect(JSONValue.number(.nan).jsonText == "null")
        #expect(JSONValue.object(["b": 1, "a": [true, nil]]).jsonText == #"{"a":[true,null],"b":1}"#)
    }

    @Test(arguments: [
        "", " ", "[1,]", "{\"a\":1,}", "01", "1.", ".5", "-", "1e", "NaN", "Infinity", "tru", "nul", "\"abc",
        "\"a\u{1}b\"", #""\ud800""#, #""\ud800\u0041""#, #""\udc00""#, #""\x""#, #""\u12g4""#, "1 2", "[1 2]",
        "{\"a\" 1}", "{1: 2}", "[", "{", "1e999", "'a'",
    ])
    func refusesInvalidText(_ text: String) {
        #expect(throws: JSONParseError.self) { try JSONValue(parsing: text) }
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
