import Foundation

/// An encoder that knows it writes a `JSONValue`: `JSONValue` and `JSONNumber` hand it their value
/// whole instead of going through containers (which would round numbers to `Double`).
package protocol JSONValueEncoding: Encoder {
    func encodeValue(_ value: JSONValue)
}

/// `Encodable` to `JSONValue`, behind ``JSONValue/init(encoding:)``: keys as the type's
/// `CodingKeys` say, `nil` optionals left out (as synthesized `Codable` does), dates as RFC 3339
/// with milliseconds, `Data` as base64, `URL` as its text, `Decimal` and every integer exactly.
/// Infinite and NaN floating-point values are refused: JSON has no spelling for them.
struct JSONValueEncoder {
    func encode(_ value: some Encodable) throws -> JSONValue {
        try Self.slot(for: value, codingPath: []).value
    }

    /// Where one encoded value is built; objects and arrays fill in as containers write to them.
    final class Slot {
        var value_: JSONValue?
        var object: [String: Slot]?
        var array: [Slot]?

        init() {}
        init(_ value: JSONValue) { value_ = value }

        /// What was encoded; a value that encoded nothing at all is an empty object, as with
        /// Foundation's `JSONEncoder`.
        var value: JSONValue {
            if let object { return .object(object.mapValues(\.value)) }
            if let array { return .array(array.map(\.value)) }
            return value_ ?? .object([:])
        }

        func makeObject() {
            guard object == nil else { return }
            (value_, array, object) = (nil, nil, [:])
        }

        func makeArray() {
            guard array == nil else { return }
            (value_, object, array) = (nil, nil, [])
        }

        func set(_ value: JSONValue) {
            (value_, object, array) = (value, nil, nil)
        }
    }

    static func slot<T: Encodable>(for value: T, codingPath: [any CodingKey]) throws -> Slot {
        if let special = try special(value, codingPath: codingPath) { return Slot(special) }
        let encoder = Encoding(codingPath: codingPath)
        try value.encode(to: encoder)
        return encoder.slot
    }

    /// The JSON of the types encoded as one value rather than through their own `Codable`.
    static func special<T: Encodable>(_ value: T, codingPath: [any CodingKey]) throws -> JSONValue? {
        switch value {
        case let value as JSONValue: return value
        case let value as JSONNumber: return .number(value)
        case let value as Date: return .string(RFC3339.format(value))
        case let value as Data: return .string(value.base64EncodedString())
        case let value as URL: return .string(value.absoluteString)
        case let value as Decimal:
            guard let number = JSONNumber(value) else {
                throw EncodingError.invalidValue(
                    value, .init(codingPath: codingPath, debugDescription: "NaN cannot be written as JSON"))
            }
            return .number(number)
        default: return nil
        }
    }

    static func number(_ value: Double, codingPath: [any CodingKey]) throws -> JSONValue {
        guard let number = JSONNumber(value) else {
            throw EncodingError.invalidValue(
                value, .init(codingPath: codingPath, debugDescription: "\(value) cannot be written as JSON"))
        }
        return .number(number)
    }

    static func number(_ value: Float, codingPath: [any CodingKey]) throws -> JSONValue {
        // Float's own shortest text (0.1, not the 0.10000000149011612 of its Double).
        guard value.isFinite, let number = JSONNumber(value.description) else {
            return try number(Double(value), codingPath: codingPath)
        }
        return .number(number)
    }
}

/// The `Encoder` handed to `encode(to:)`.
private final class Encoding: JSONValueEncoding, SingleValueEncodingContainer {
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    let slot: JSONValueEncoder.Slot

    init(codingPath: [any CodingKey], slot: JSONValueEncoder.Slot = .init()) {
        self.codingPath = codingPath
        self.slot = slot
    }

    func encodeValue(_ value: JSONValue) { slot.set(value) }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        slot.makeObject()
        return KeyedEncodingContainer(KeyedContainer<Key>(slot: slot, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        slot.makeArray()
        return UnkeyedContainer(slot: slot, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { self }

    func encodeNil() { slot.set(.null) }
    func encode(_ value: Bool) { slot.set(.bool(value)) }
    func encode(_ value: String) { slot.set(.string(value)) }
    func encode(_ value: Double) throws { slot.set(try JSONValueEncoder.number(value, codingPath: codingPath)) }
    func encode(_ value: Float) throws { slot.set(try JSONValueEncoder.number(value, codingPath: codingPath)) }
    func encode(_ value: Int) { slot.set(.number(value)) }
    func encode(_ value: Int8) { slot.set(.number(value)) }
    func encode(_ value: Int16) { slot.set(.number(value)) }
    func encode(_ value: Int32) { slot.set(.number(value)) }
    func encode(_ value: Int64) { slot.set(.number(value)) }
    func encode(_ value: UInt) { slot.set(.number(value)) }
    func encode(_ value: UInt8) { slot.set(.number(value)) }
    func encode(_ value: UInt16) { slot.set(.number(value)) }
    func encode(_ value: UInt32) { slot.set(.number(value)) }
    func encode(_ value: UInt64) { slot.set(.number(value)) }

    func encode<T: Encodable>(_ value: T) throws {
        if let special = try JSONValueEncoder.special(value, codingPath: codingPath) {
            slot.set(special)
        } else {
            try value.encode(to: self)
        }
    }
}

private struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let slot: JSONValueEncoder.Slot
    let codingPath: [any CodingKey]

    private func set(_ value: JSONValue, _ key: Key) { slot.object![key.stringValue] = .init(value) }

    mutating func encodeNil(forKey key: Key) { set(.null, key) }
    mutating func encode(_ value: Bool, forKey key: Key) { set(.bool(value), key) }
    mutating func encode(_ value: String, forKey key: Key) { set(.string(value), key) }
    mutating func encode(_ value: Double, forKey key: Key) throws {
        set(try JSONValueEncoder.number(value, codingPath: codingPath + [key]), key)
    }
    mutating func encode(_ value: Float, forKey key: Key) throws {
        set(try JSONValueEncoder.number(value, codingPath: codingPath + [key]), key)
    }
    mutating func encode(_ value: Int, forKey key: Key) { set(.number(value), key) }
    mutating func encode(_ value: Int8, forKey key: Key) { set(.number(value), key) }
    mutating func encode(_ value: Int16, forKey key: Key) { set(.number(value), key) }
    mutating func encode(_ value: Int32, forKey key: Key) { set(.number(value), key) }
    mutating func encode(_ value: Int64, forKey key: Key) { set(.number(value), key) }
    mutating func encode(_ value: UInt, forKey key: Key) { set(.number(value), key) }
    mutating func encode(_ value: UInt8, forKey key: Key) { set(.number(value), key) }
    mutating func encode(_ value: UInt16, forKey key: Key) { set(.number(value), key) }
    mutating func encode(_ value: UInt32, forKey key: Key) { set(.number(value), key) }
    mutating func encode(_ value: UInt64, forKey key: Key) { set(.number(value), key) }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        slot.object![key.stringValue] = try JSONValueEncoder.slot(for: value, codingPath: codingPath + [key])
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey>
    {
        let child = JSONValueEncoder.Slot()
        child.makeObject()
        slot.object![key.stringValue] = child
        return KeyedEncodingContainer(KeyedContainer<NestedKey>(slot: child, codingPath: codingPath + [key]))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let child = JSONValueEncoder.Slot()
        child.makeArray()
        slot.object![key.stringValue] = child
        return UnkeyedContainer(slot: child, codingPath: codingPath + [key])
    }

    mutating func superEncoder() -> any Encoder { superEncoder(named: JSONKey(string: "super")) }
    mutating func superEncoder(forKey key: Key) -> any Encoder { superEncoder(named: key) }

    private func superEncoder(named key: any CodingKey) -> any Encoder {
        let child = JSONValueEncoder.Slot()
        slot.object![key.stringValue] = child
        return Encoding(codingPath: codingPath + [key], slot: child)
    }
}

private struct UnkeyedContainer: UnkeyedEncodingContainer {
    let slot: JSONValueEncoder.Slot
    let codingPath: [any CodingKey]
    var count: Int { slot.array!.count }

    private var nextPath: [any CodingKey] { codingPath + [JSONKey(index: count)] }
    private func append(_ value: JSONValue) { slot.array!.append(.init(value)) }

    mutating func encodeNil() { append(.null) }
    mutating func encode(_ value: Bool) { append(.bool(value)) }
    mutating func encode(_ value: String) { append(.string(value)) }
    mutating func encode(_ value: Double) throws { append(try JSONValueEncoder.number(value, codingPath: nextPath)) }
    mutating func encode(_ value: Float) throws { append(try JSONValueEncoder.number(value, codingPath: nextPath)) }
    mutating func encode(_ value: Int) { append(.number(value)) }
    mutating func encode(_ value: Int8) { append(.number(value)) }
    mutating func encode(_ value: Int16) { append(.number(value)) }
    mutating func encode(_ value: Int32) { append(.number(value)) }
    mutating func encode(_ value: Int64) { append(.number(value)) }
    mutating func encode(_ value: UInt) { append(.number(value)) }
    mutating func encode(_ value: UInt8) { append(.number(value)) }
    mutating func encode(_ value: UInt16) { append(.number(value)) }
    mutating func encode(_ value: UInt32) { append(.number(value)) }
    mutating func encode(_ value: UInt64) { append(.number(value)) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        slot.array!.append(try JSONValueEncoder.slot(for: value, codingPath: nextPath))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
        -> KeyedEncodingContainer<NestedKey>
    {
        let path = nextPath
        let child = JSONValueEncoder.Slot()
        child.makeObject()
        slot.array!.append(child)
        return KeyedEncodingContainer(KeyedContainer<NestedKey>(slot: child, codingPath: path))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let path = nextPath
        let child = JSONValueEncoder.Slot()
        child.makeArray()
        slot.array!.append(child)
        return UnkeyedContainer(slot: child, codingPath: path)
    }

    mutating func superEncoder() -> any Encoder {
        let path = nextPath
        let child = JSONValueEncoder.Slot()
        slot.array!.append(child)
        return Encoding(codingPath: path, slot: child)
    }
}

/// A coding key for what has no `CodingKeys` of its own: array indices and `super`.
struct JSONKey: CodingKey {
    let stringValue: String
    let intValue: Int?

    init(string: String) {
        stringValue = string
        intValue = nil
    }

    init(index: Int) {
        stringValue = String(index)
        intValue = index
    }

    init?(stringValue: String) { self.init(string: stringValue) }
    init?(intValue: Int) { self.init(index: intValue) }
}
