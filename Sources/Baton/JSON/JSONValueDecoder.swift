import Foundation

/// A decoder that knows it reads a `JSONValue`: `JSONValue` and `JSONNumber` take their value whole
/// from it instead of going through containers.
protocol JSONValueDecoding: Decoder {
    var value: JSONValue { get }
}

/// `JSONValue` to `Decodable`, behind ``JSONValue/decode(as:)``; the reverse of
/// `JSONValueEncoder`. Integers are read exactly or refused (`1.5` or `1e30` into an `Int` is an
/// error, never a rounded value); `Double` and `Float` take the nearest value; dates are RFC 3339
/// with or without fractional seconds, in UTC or with an offset.
struct JSONValueDecoder {
    func decode<T: Decodable>(_ type: T.Type, from value: JSONValue) throws -> T {
        try Self.decode(T.self, from: value, codingPath: [])
    }

    static func decode<T: Decodable>(_ type: T.Type, from value: JSONValue, codingPath: [any CodingKey]) throws -> T {
        func corrupt(_ reason: String) -> DecodingError {
            .dataCorrupted(.init(codingPath: codingPath, debugDescription: reason))
        }
        switch type {
        case is JSONValue.Type: return value as! T
        case is JSONNumber.Type:
            guard case .number(let number) = value else { throw mismatch(T.self, value, codingPath) }
            return number as! T
        case is Date.Type:
            guard case .string(let text) = value else { throw mismatch(T.self, value, codingPath) }
            guard let date = RFC3339.parse(text) else { throw corrupt("\"\(text)\" is not an RFC 3339 time") }
            return date as! T
        case is Data.Type:
            guard case .string(let text) = value else { throw mismatch(T.self, value, codingPath) }
            guard let data = Data(base64Encoded: text) else { throw corrupt("not base64") }
            return data as! T
        case is URL.Type:
            guard case .string(let text) = value else { throw mismatch(T.self, value, codingPath) }
            guard let url = URL(string: text) else { throw corrupt("\"\(text)\" is not a URL") }
            return url as! T
        case is Decimal.Type:
            guard case .number(let number) = value else { throw mismatch(T.self, value, codingPath) }
            guard let decimal = number.decimal else { throw corrupt("\(number) does not fit a Decimal exactly") }
            return decimal as! T
        default:
            return try T(from: Decoding(value: value, codingPath: codingPath))
        }
    }

    static func mismatch(_ type: Any.Type, _ value: JSONValue, _ codingPath: [any CodingKey]) -> DecodingError {
        let found =
            switch value {
            case .null: "null"
            case .bool: "a boolean"
            case .number: "a number"
            case .string: "a string"
            case .array: "an array"
            case .object: "an object"
            }
        return .typeMismatch(type, .init(codingPath: codingPath, debugDescription: "expected \(type), found \(found)"))
    }

    // MARK: primitives

    static func bool(_ value: JSONValue, _ codingPath: [any CodingKey]) throws -> Bool {
        guard case .bool(let bool) = value else { throw mismatch(Bool.self, value, codingPath) }
        return bool
    }

    static func string(_ value: JSONValue, _ codingPath: [any CodingKey]) throws -> String {
        guard case .string(let string) = value else { throw mismatch(String.self, value, codingPath) }
        return string
    }

    static func integer<T: FixedWidthInteger>(_ value: JSONValue, _ codingPath: [any CodingKey]) throws -> T {
        guard case .number(let number) = value else { throw mismatch(T.self, value, codingPath) }
        guard let integer = number.integer(as: T.self) else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: codingPath, debugDescription: "\(number) is not a whole number that fits \(T.self)"))
        }
        return integer
    }

    static func double(_ value: JSONValue, _ codingPath: [any CodingKey]) throws -> Double {
        guard case .number(let number) = value else { throw mismatch(Double.self, value, codingPath) }
        let double = number.double
        guard double.isFinite else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: codingPath, debugDescription: "\(number) is beyond the range of Double"))
        }
        return double
    }

    static func float(_ value: JSONValue, _ codingPath: [any CodingKey]) throws -> Float {
        guard case .number(let number) = value else { throw mismatch(Float.self, value, codingPath) }
        guard let float = Float(number.text), float.isFinite else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: codingPath, debugDescription: "\(number) is beyond the range of Float"))
        }
        return float
    }
}

/// The `Decoder` handed to `init(from:)`.
private final class Decoding: JSONValueDecoding, SingleValueDecodingContainer {
    let value: JSONValue
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(value: JSONValue, codingPath: [any CodingKey]) {
        self.value = value
        self.codingPath = codingPath
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let object) = value else {
            throw JSONValueDecoder.mismatch([String: JSONValue].self, value, codingPath)
        }
        return KeyedDecodingContainer(KeyedContainer<Key>(object: object, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let array) = value else {
            throw JSONValueDecoder.mismatch([JSONValue].self, value, codingPath)
        }
        return UnkeyedContainer(array: array, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueDecodingContainer { self }

    func decodeNil() -> Bool { value == .null }
    func decode(_ type: Bool.Type) throws -> Bool { try JSONValueDecoder.bool(value, codingPath) }
    func decode(_ type: String.Type) throws -> String { try JSONValueDecoder.string(value, codingPath) }
    func decode(_ type: Double.Type) throws -> Double { try JSONValueDecoder.double(value, codingPath) }
    func decode(_ type: Float.Type) throws -> Float { try JSONValueDecoder.float(value, codingPath) }
    func decode(_ type: Int.Type) throws -> Int { try JSONValueDecoder.integer(value, codingPath) }
    func decode(_ type: Int8.Type) throws -> Int8 { try JSONValueDecoder.integer(value, codingPath) }
    func decode(_ type: Int16.Type) throws -> Int16 { try JSONValueDecoder.integer(value, codingPath) }
    func decode(_ type: Int32.Type) throws -> Int32 { try JSONValueDecoder.integer(value, codingPath) }
    func decode(_ type: Int64.Type) throws -> Int64 { try JSONValueDecoder.integer(value, codingPath) }
    func decode(_ type: UInt.Type) throws -> UInt { try JSONValueDecoder.integer(value, codingPath) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try JSONValueDecoder.integer(value, codingPath) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try JSONValueDecoder.integer(value, codingPath) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try JSONValueDecoder.integer(value, codingPath) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try JSONValueDecoder.integer(value, codingPath) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try JSONValueDecoder.decode(T.self, from: value, codingPath: codingPath)
    }
}

private struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let object: [String: JSONValue]
    let codingPath: [any CodingKey]

    var allKeys: [Key] { object.keys.compactMap(Key.init(stringValue:)) }

    func contains(_ key: Key) -> Bool { object[key.stringValue] != nil }

    private func value(_ key: Key) throws -> JSONValue {
        guard let value = object[key.stringValue] else {
            throw DecodingError.keyNotFound(
                key, .init(codingPath: codingPath, debugDescription: "no value for \"\(key.stringValue)\""))
        }
        return value
    }

    func decodeNil(forKey key: Key) throws -> Bool { try value(key) == .null }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool {
        try JSONValueDecoder.bool(try value(key), codingPath + [key])
    }
    func decode(_ type: String.Type, forKey key: Key) throws -> String {
        try JSONValueDecoder.string(try value(key), codingPath + [key])
    }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
        try JSONValueDecoder.double(try value(key), codingPath + [key])
    }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float {
        try JSONValueDecoder.float(try value(key), codingPath + [key])
    }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try integer(key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try integer(key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try integer(key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try integer(key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try integer(key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try integer(key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try integer(key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try integer(key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try integer(key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try integer(key) }

    private func integer<T: FixedWidthInteger>(_ key: Key) throws -> T {
        try JSONValueDecoder.integer(try value(key), codingPath + [key])
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try JSONValueDecoder.decode(T.self, from: try value(key), codingPath: codingPath + [key])
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        try Decoding(value: try value(key), codingPath: codingPath + [key]).container(keyedBy: NestedKey.self)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try Decoding(value: try value(key), codingPath: codingPath + [key]).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        Decoding(value: object["super"] ?? .null, codingPath: codingPath + [JSONKey(string: "super")])
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        Decoding(value: object[key.stringValue] ?? .null, codingPath: codingPath + [key])
    }
}

private struct UnkeyedContainer: UnkeyedDecodingContainer {
    let array: [JSONValue]
    let codingPath: [any CodingKey]
    var currentIndex = 0

    init(array: [JSONValue], codingPath: [any CodingKey]) {
        self.array = array
        self.codingPath = codingPath
    }

    var count: Int? { array.count }
    var isAtEnd: Bool { currentIndex >= array.count }

    private var path: [any CodingKey] { codingPath + [JSONKey(index: currentIndex)] }

    private mutating func next() throws -> JSONValue {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(
                JSONValue.self, .init(codingPath: path, debugDescription: "the array has only \(array.count) items"))
        }
        defer { currentIndex += 1 }
        return array[currentIndex]
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, array[currentIndex] == .null else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool {
        let path = self.path
        return try JSONValueDecoder.bool(try next(), path)
    }
    mutating func decode(_ type: String.Type) throws -> String {
        let path = self.path
        return try JSONValueDecoder.string(try next(), path)
    }
    mutating func decode(_ type: Double.Type) throws -> Double {
        let path = self.path
        return try JSONValueDecoder.double(try next(), path)
    }
    mutating func decode(_ type: Float.Type) throws -> Float {
        let path = self.path
        return try JSONValueDecoder.float(try next(), path)
    }
    mutating func decode(_ type: Int.Type) throws -> Int { try integer() }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try integer() }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try integer() }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try integer() }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try integer() }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try integer() }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try integer() }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try integer() }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try integer() }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try integer() }

    private mutating func integer<T: FixedWidthInteger>() throws -> T {
        let path = self.path
        return try JSONValueDecoder.integer(try next(), path)
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let path = self.path
        return try JSONValueDecoder.decode(T.self, from: try next(), codingPath: path)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        let path = self.path
        return try Decoding(value: try next(), codingPath: path).container(keyedBy: NestedKey.self)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let path = self.path
        return try Decoding(value: try next(), codingPath: path).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder {
        let path = self.path
        return Decoding(value: try next(), codingPath: path)
    }
}

/// RFC 3339 times as Baton writes and reads them.
public enum RFC3339 {
    /// UTC with milliseconds: `2026-01-31T09:30:00.123Z`.
    public static func format(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }

    /// With or without fractional seconds, in UTC (`Z`) or with an offset (PostgreSQL's JSON
    /// form of `timestamptz`, `2026-01-31T09:30:00.123456+00:00`).
    public static func parse(_ text: String) -> Date? {
        (try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text))
            ?? (try? Date.ISO8601FormatStyle().parse(text))
    }
}
