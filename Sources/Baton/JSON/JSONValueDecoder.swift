import Foundation

/// A decoder that knows it reads a `JSONValue`: `JSONValue` and `JSONNumber` take their value whole
/// from it instead of going through containers.
package protocol JSONValueDecoding: Decoder {
    var value: JSONValue { get }
}

/// `JSONValue` to `Decodable`, behind ``JSONValue/decode(as:)``; the reverse of
/// `JSONValueEncoder`. Integers are read exactly or refused (`1.5` or `1e30` into an `Int` is an
/// error, never a rounded value); `Double` and `Float` take the nearest value; dates are RFC 3339
/// with or without fractional seconds, in UTC or with an offset.
struct JSONValueDecoder {
    func decode<T: Decodable>(_ type: T.Type, from value: JSONValue) throws -> T {
        try Self.decode(T.self, from: value, path: .root)
    }

    static func decode<T: Decodable>(_ type: T.Type, from value: JSONValue, path: CodingPath) throws -> T {
        func corrupt(_ reason: String) -> DecodingError {
            .dataCorrupted(.init(codingPath: path.keys, debugDescription: reason))
        }
        // Metatype identity, not dynamic casts: this runs for every value decoded.
        switch ObjectIdentifier(type) {
        case ObjectIdentifier(JSONValue.self): return value as! T
        case ObjectIdentifier(JSONNumber.self):
            guard case .number(let number) = value else { throw mismatch(T.self, value, path) }
            return number as! T
        case ObjectIdentifier(Date.self):
            guard case .string(let text) = value else { throw mismatch(T.self, value, path) }
            guard let date = RFC3339.parse(text) else { throw corrupt("\"\(text)\" is not an RFC 3339 time") }
            return date as! T
        case ObjectIdentifier(Data.self):
            guard case .string(let text) = value else { throw mismatch(T.self, value, path) }
            guard let data = Data(base64Encoded: text) else { throw corrupt("not base64") }
            return data as! T
        case ObjectIdentifier(URL.self):
            guard case .string(let text) = value else { throw mismatch(T.self, value, path) }
            guard let url = URL(string: text) else { throw corrupt("\"\(text)\" is not a URL") }
            return url as! T
        case ObjectIdentifier(Decimal.self):
            guard case .number(let number) = value else { throw mismatch(T.self, value, path) }
            guard let decimal = number.decimal else { throw corrupt("\(number) does not fit a Decimal exactly") }
            return decimal as! T
        default:
            return try T(from: Decoding(value: value, path: path))
        }
    }

    static func mismatch(_ type: Any.Type, _ value: JSONValue, _ path: CodingPath) -> DecodingError {
        let found =
            switch value {
            case .null: "null"
            case .bool: "a boolean"
            case .number: "a number"
            case .string: "a string"
            case .array: "an array"
            case .object: "an object"
            }
        return .typeMismatch(type, .init(codingPath: path.keys, debugDescription: "expected \(type), found \(found)"))
    }

    // MARK: primitives

    static func bool(_ value: JSONValue, _ path: @autoclosure () -> CodingPath) throws -> Bool {
        guard case .bool(let bool) = value else { throw mismatch(Bool.self, value, path()) }
        return bool
    }

    static func string(_ value: JSONValue, _ path: @autoclosure () -> CodingPath) throws -> String {
        guard case .string(let string) = value else { throw mismatch(String.self, value, path()) }
        return string
    }

    static func integer<T: FixedWidthInteger>(_ value: JSONValue, _ path: @autoclosure () -> CodingPath) throws -> T {
        guard case .number(let number) = value else { throw mismatch(T.self, value, path()) }
        guard let integer = number.integer(as: T.self) else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: path().keys, debugDescription: "\(number) is not a whole number that fits \(T.self)"))
        }
        return integer
    }

    static func double(_ value: JSONValue, _ path: @autoclosure () -> CodingPath) throws -> Double {
        guard case .number(let number) = value else { throw mismatch(Double.self, value, path()) }
        let double = number.double
        guard double.isFinite else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: path().keys, debugDescription: "\(number) is beyond the range of Double"))
        }
        return double
    }

    static func float(_ value: JSONValue, _ path: @autoclosure () -> CodingPath) throws -> Float {
        guard case .number(let number) = value else { throw mismatch(Float.self, value, path()) }
        guard let float = Float(number.text), float.isFinite else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: path().keys, debugDescription: "\(number) is beyond the range of Float"))
        }
        return float
    }
}

/// A coding path as a chain of keys, each link made once per nested value (not an array copied
/// at every field), and turned into `[CodingKey]` only when asked: for an error, or by a type
/// that reads its `codingPath`.
struct CodingPath {
    final class Link {
        let parent: Link?
        let key: any CodingKey

        init(parent: Link?, key: any CodingKey) {
            self.parent = parent
            self.key = key
        }
    }

    let last: Link?

    static var root: CodingPath { CodingPath(last: nil) }

    func appending(_ key: any CodingKey) -> CodingPath { CodingPath(last: Link(parent: last, key: key)) }

    var keys: [any CodingKey] {
        var keys: [any CodingKey] = []
        var link = last
        while let current = link {
            keys.append(current.key)
            link = current.parent
        }
        return keys.reversed()
    }
}

/// The `Decoder` handed to `init(from:)`.
private final class Decoding: JSONValueDecoding, SingleValueDecodingContainer {
    let value: JSONValue
    let path: CodingPath
    var codingPath: [any CodingKey] { path.keys }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(value: JSONValue, path: CodingPath) {
        self.value = value
        self.path = path
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let object) = value else {
            throw JSONValueDecoder.mismatch([String: JSONValue].self, value, path)
        }
        return KeyedDecodingContainer(KeyedContainer<Key>(object: object, path: path))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let array) = value else {
            throw JSONValueDecoder.mismatch([JSONValue].self, value, path)
        }
        return UnkeyedContainer(array: array, path: path)
    }

    func singleValueContainer() -> any SingleValueDecodingContainer { self }

    func decodeNil() -> Bool { value == .null }
    func decode(_ type: Bool.Type) throws -> Bool { try JSONValueDecoder.bool(value, path) }
    func decode(_ type: String.Type) throws -> String { try JSONValueDecoder.string(value, path) }
    func decode(_ type: Double.Type) throws -> Double { try JSONValueDecoder.double(value, path) }
    func decode(_ type: Float.Type) throws -> Float { try JSONValueDecoder.float(value, path) }
    func decode(_ type: Int.Type) throws -> Int { try JSONValueDecoder.integer(value, path) }
    func decode(_ type: Int8.Type) throws -> Int8 { try JSONValueDecoder.integer(value, path) }
    func decode(_ type: Int16.Type) throws -> Int16 { try JSONValueDecoder.integer(value, path) }
    func decode(_ type: Int32.Type) throws -> Int32 { try JSONValueDecoder.integer(value, path) }
    func decode(_ type: Int64.Type) throws -> Int64 { try JSONValueDecoder.integer(value, path) }
    func decode(_ type: UInt.Type) throws -> UInt { try JSONValueDecoder.integer(value, path) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try JSONValueDecoder.integer(value, path) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try JSONValueDecoder.integer(value, path) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try JSONValueDecoder.integer(value, path) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try JSONValueDecoder.integer(value, path) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try JSONValueDecoder.decode(T.self, from: value, path: path)
    }
}

private struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let object: [String: JSONValue]
    let path: CodingPath
    var codingPath: [any CodingKey] { path.keys }

    var allKeys: [Key] { object.keys.compactMap(Key.init(stringValue:)) }

    func contains(_ key: Key) -> Bool { object[key.stringValue] != nil }

    private func value(_ key: Key) throws -> JSONValue {
        guard let value = object[key.stringValue] else {
            throw DecodingError.keyNotFound(
                key, .init(codingPath: path.keys, debugDescription: "no value for \"\(key.stringValue)\""))
        }
        return value
    }

    func decodeNil(forKey key: Key) throws -> Bool { try value(key) == .null }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool {
        try JSONValueDecoder.bool(try value(key), path.appending(key))
    }
    func decode(_ type: String.Type, forKey key: Key) throws -> String {
        try JSONValueDecoder.string(try value(key), path.appending(key))
    }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
        try JSONValueDecoder.double(try value(key), path.appending(key))
    }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float {
        try JSONValueDecoder.float(try value(key), path.appending(key))
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
        try JSONValueDecoder.integer(try value(key), path.appending(key))
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try JSONValueDecoder.decode(T.self, from: try value(key), path: path.appending(key))
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        try Decoding(value: try value(key), path: path.appending(key)).container(keyedBy: NestedKey.self)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try Decoding(value: try value(key), path: path.appending(key)).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        Decoding(value: object["super"] ?? .null, path: path.appending(JSONKey(string: "super")))
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        Decoding(value: object[key.stringValue] ?? .null, path: path.appending(key))
    }
}

private struct UnkeyedContainer: UnkeyedDecodingContainer {
    let array: [JSONValue]
    let path: CodingPath
    var currentIndex = 0

    init(array: [JSONValue], path: CodingPath) {
        self.array = array
        self.path = path
    }

    var codingPath: [any CodingKey] { path.keys }
    var count: Int? { array.count }
    var isAtEnd: Bool { currentIndex >= array.count }

    private var here: CodingPath { path.appending(JSONKey(index: currentIndex)) }

    private mutating func next() throws -> JSONValue {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(
                JSONValue.self,
                .init(codingPath: here.keys, debugDescription: "the array has only \(array.count) items"))
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
        let (base, index) = (path, currentIndex)
        return try JSONValueDecoder.bool(try next(), base.appending(JSONKey(index: index)))
    }
    mutating func decode(_ type: String.Type) throws -> String {
        let (base, index) = (path, currentIndex)
        return try JSONValueDecoder.string(try next(), base.appending(JSONKey(index: index)))
    }
    mutating func decode(_ type: Double.Type) throws -> Double {
        let (base, index) = (path, currentIndex)
        return try JSONValueDecoder.double(try next(), base.appending(JSONKey(index: index)))
    }
    mutating func decode(_ type: Float.Type) throws -> Float {
        let (base, index) = (path, currentIndex)
        return try JSONValueDecoder.float(try next(), base.appending(JSONKey(index: index)))
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
        let (base, index) = (path, currentIndex)
        return try JSONValueDecoder.integer(try next(), base.appending(JSONKey(index: index)))
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let path = here
        return try JSONValueDecoder.decode(T.self, from: try next(), path: path)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        let path = here
        return try Decoding(value: try next(), path: path).container(keyedBy: NestedKey.self)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let path = here
        return try Decoding(value: try next(), path: path).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder {
        let path = here
        return Decoding(value: try next(), path: path)
    }
}
