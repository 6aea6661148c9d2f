import Foundation

/// A JSON number, kept as the decimal text it was written in, so that no value is ever rounded on
/// its way through Baton: `9007199254740993`, `12345678901234567890123`, `0.1` and `1e-400` come
/// out as they went in (PostgreSQL's `jsonb` keeps them exactly too, as `numeric`).
///
/// Two numbers are equal when their values are: `1.0 == 1`, `1e2 == 100`, `-0 == 0`, as `jsonb`
/// compares them. Convert to a Swift type only where the value is used: ``integer(as:)`` and
/// ``decimal`` are exact or nil, ``double`` rounds to the nearest `Double`.
public struct JSONNumber: Sendable, CustomStringConvertible {
    /// The number as JSON text (RFC 8259 grammar): as parsed, or as Swift wrote the value given.
    public let text: String

    /// The number `text` spells, if it is a JSON number (`-12`, `0.5`, `1e-7`; not `+1`, `.5`, `01`
    /// or `NaN`).
    public init?(_ text: some StringProtocol) {
        let text = String(text)
        guard Self.isNumber(text.utf8) else { return nil }
        self.text = text
    }

    /// `text` that is known to be a JSON number (the parser checked it).
    init(validated text: String) {
        self.text = text
    }

    public init(_ value: some BinaryInteger) {
        text = String(value)
    }

    /// `value` as the shortest text that reads back as the same `Double`; whole numbers below 2^53
    /// without a fraction (`5`, not `5.0`). Nil for infinities and NaN, which JSON cannot hold.
    public init?(_ value: Double) {
        guard value.isFinite else { return nil }
        if value == value.rounded(.towardZero), abs(value) < 9_007_199_254_740_992 {
            text = String(Int64(value))
        } else {
            text = value.description
        }
    }

    /// `value` exactly, in plain decimal notation; nil for NaN.
    public init?(_ value: Decimal) {
        guard !value.isNaN else { return nil }
        text = value.description
    }

    public var description: String { text }

    // MARK: reading the value

    /// The nearest `Double`: exact for integers up to 2^53 and for what a `Double` wrote; infinite
    /// beyond `Double`'s range, zero below it.
    public var double: Double { Double(text) ?? 0 }

    /// The value as `T` if it is a whole number within `T`'s range (`1.0` and `1e3` are), else nil.
    public func integer<T: FixedWidthInteger>(as type: T.Type = T.self) -> T? {
        if let value = T(text) { return value }
        let parts = Parts(text)
        guard !parts.saturated, parts.exponent >= 0 else { return nil }
        if parts.digits.isEmpty { return 0 }
        // Longer than any fixed-width integer Swift has (Int128's 39 digits): no need to build it.
        guard parts.digits.count + parts.exponent <= 40 else { return nil }
        var digits = parts.negative ? "-" : ""
        digits += String(decoding: parts.digits, as: UTF8.self)
        digits += String(repeating: "0", count: parts.exponent)
        return T(digits)
    }

    /// The value as `Decimal` if one holds it exactly (38 significant digits, exponents of about
    /// ±128), else nil.
    public var decimal: Decimal? {
        guard let value = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")), !value.isNaN,
            JSONNumber(value) == self
        else { return nil }
        return value
    }

    // MARK: PostgreSQL

    /// Whether PostgreSQL's `numeric` (which `jsonb` stores numbers as) holds this value: at most
    /// 131,072 digits before the decimal point and 16,383 after it, where the digits after it are
    /// counted as written (`1.50e-3` has five). Anything else makes PostgreSQL refuse the whole
    /// statement with "value overflows numeric format".
    public var isStorable: Bool {
        let parts = Parts(text)
        guard !parts.saturated, abs(parts.writtenExponent) < Int(Int32.max) / 2 else { return false }
        let scale = max(0, parts.fractionDigits - parts.writtenExponent)
        guard scale <= 16_383 else { return false }
        if parts.digits.isEmpty { return true }
        // The power of ten of the leading digit: 0 for 1…9, 131,071 for a 131,072-digit integer.
        let leading = parts.digits.count + parts.exponent - 1
        return leading <= 131_071
    }

    // MARK: grammar

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`, the whole of `bytes`.
    static func isNumber(_ bytes: some Collection<UInt8>) -> Bool {
        var index = bytes.startIndex
        func digits() -> Int {
            var count = 0
            while index != bytes.endIndex, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) {
                bytes.formIndex(after: &index)
                count += 1
            }
            return count
        }
        if index != bytes.endIndex, bytes[index] == UInt8(ascii: "-") { bytes.formIndex(after: &index) }
        let integer = index
        let count = digits()
        guard count > 0, count == 1 || bytes[integer] != UInt8(ascii: "0") else { return false }
        if index != bytes.endIndex, bytes[index] == UInt8(ascii: ".") {
            bytes.formIndex(after: &index)
            guard digits() > 0 else { return false }
        }
        if index != bytes.endIndex, bytes[index] | 0x20 == UInt8(ascii: "e") {
            bytes.formIndex(after: &index)
            if index != bytes.endIndex, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                bytes.formIndex(after: &index)
            }
            guard digits() > 0 else { return false }
        }
        return index == bytes.endIndex
    }

    /// The value as `digits × 10^exponent`, `digits` without leading or trailing zeros (empty for
    /// zero): the form in which equal values are equal.
    struct Parts {
        var negative = false
        var digits: [UInt8] = []
        var exponent = 0
        /// Digits written after the decimal point, and the exponent as written: PostgreSQL's scale.
        var fractionDigits = 0
        var writtenExponent = 0
        /// The written exponent was too large to hold (beyond ±10^15): such a number is compared
        /// by its text.
        var saturated = false

        init(_ text: String) {
            var bytes = text.utf8[...]
            if bytes.first == UInt8(ascii: "-") {
                negative = true
                bytes = bytes.dropFirst()
            }
            var inFraction = false
            while let byte = bytes.first, byte != UInt8(ascii: "e"), byte != UInt8(ascii: "E") {
                bytes = bytes.dropFirst()
                if byte == UInt8(ascii: ".") {
                    inFraction = true
                    continue
                }
                if inFraction { fractionDigits += 1 }
                if byte == UInt8(ascii: "0"), digits.isEmpty { continue }
                digits.append(byte)
            }
            if !bytes.isEmpty {
                bytes = bytes.dropFirst()
                var sign = 1
                if bytes.first == UInt8(ascii: "-") || bytes.first == UInt8(ascii: "+") {
                    if bytes.first == UInt8(ascii: "-") { sign = -1 }
                    bytes = bytes.dropFirst()
                }
                let significant = bytes.drop(while: { $0 == UInt8(ascii: "0") })
                if significant.count > 15 {
                    saturated = true
                } else {
                    writtenExponent = sign * significant.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
                }
            }
            exponent = writtenExponent - fractionDigits
            while digits.last == UInt8(ascii: "0") {
                digits.removeLast()
                exponent += 1
            }
            if digits.isEmpty {
                negative = false
                exponent = 0
            }
        }
    }
}

extension JSONNumber: Hashable {
    public static func == (lhs: JSONNumber, rhs: JSONNumber) -> Bool {
        if lhs.text == rhs.text { return true }
        let (left, right) = (Parts(lhs.text), Parts(rhs.text))
        if left.saturated || right.saturated { return false }
        return left.negative == right.negative && left.exponent == right.exponent && left.digits == right.digits
    }

    public func hash(into hasher: inout Hasher) {
        let parts = Parts(text)
        if parts.saturated {
            hasher.combine(text)
        } else {
            hasher.combine(parts.negative)
            hasher.combine(parts.exponent)
            hasher.combine(parts.digits)
        }
    }
}

extension JSONNumber: ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral {
    public init(integerLiteral value: Int) { self.init(value) }
    public init(floatLiteral value: Double) { self.init(value)! }
}

extension JSONNumber: Codable {
    /// Exact with Baton's coders (``JSONValue/init(encoding:)``, ``JSONValue/decode(as:)``) and
    /// where a ``ForeignJSON`` bridge is set up; with another coder, as exact as the types it offers
    /// (64-bit integers, `Decimal`, `Double`).
    public init(from decoder: any Decoder) throws {
        if let decoder = decoder as? JSONValueDecoding {
            guard case .number(let number) = decoder.value else {
                throw DecodingError.typeMismatch(
                    JSONNumber.self, .init(codingPath: decoder.codingPath, debugDescription: "not a number"))
            }
            self = number
            return
        }
        let container = try decoder.singleValueContainer()
        if let value = try? container.decode(Int64.self) {
            self.init(value)
        } else if let value = try? container.decode(UInt64.self) {
            self.init(value)
        } else if let value = JSONNumber(try container.decode(Double.self)) {
            self = value
        } else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a finite number")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        if let encoder = encoder as? JSONValueEncoding {
            encoder.encodeValue(.number(self))
            return
        }
        var container = encoder.singleValueContainer()
        if let value = integer(as: Int64.self) {
            try container.encode(value)
        } else if let value = integer(as: UInt64.self) {
            try container.encode(value)
        } else if let value = decimal {
            try container.encode(value)
        } else if let bridge = ForeignJSON.current {
            try container.encode(bridge.placeholder(for: self))
        } else {
            try container.encode(double)
        }
    }
}
