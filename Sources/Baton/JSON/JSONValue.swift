/// Any JSON value: the shape of a job's input, a stage's args and outputs, and metadata.
///
/// Numbers are ``JSONNumber``s, kept as written: a value goes through Baton (HTTP, PostgreSQL, the
/// worker, templates) without being rounded. Convert to and from Swift types with Baton's own
/// coders, ``init(encoding:)`` and ``decode(as:)``, which keep numbers exact too.
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case number(JSONNumber)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// The JSON form of an `Encodable` value (keys as its `CodingKeys` say, dates as RFC 3339,
    /// `Data` as base64, numbers exact).
    public init(encoding value: some Encodable) throws {
        self = try JSONValueEncoder().encode(value)
    }

    /// Decodes the value as `T` (the reverse of ``init(encoding:)``); an integer field refuses a
    /// number that is not a whole number within its range rather than rounding it.
    public func decode<T: Decodable>(as type: T.Type = T.self) throws -> T {
        try JSONValueDecoder().decode(T.self, from: self)
    }

    public subscript(key: String) -> JSONValue? {
        if case .object(let object) = self { return object[key] }
        return nil
    }

    // MARK: the value as one kind

    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    public var numberValue: JSONNumber? {
        if case .number(let value) = self { return value }
        return nil
    }

    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    public var arrayValue: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    public var objectValue: [String: JSONValue]? {
        if case .object(let value) = self { return value }
        return nil
    }
}

extension JSONValue: Codable {
    /// Exact with Baton's decoder, and with a foreign one (Foundation's `JSONDecoder`) reading a
    /// body Baton's control plane or client has read too (see ``ForeignJSON``). Otherwise numbers
    /// are only as exact as that decoder's types: integers within 64 bits, others as `Double`.
    public init(from decoder: any Decoder) throws {
        if let decoder = decoder as? JSONValueDecoding {
            self = decoder.value
            return
        }
        if let value = ForeignJSON.current?.value(at: decoder.codingPath) {
            self = value
            return
        }
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let bool = try? container.decode(Bool.self) {
            self = .bool(bool)
        } else if let string = try? container.decode(String.self) {
            self = .string(string)
        } else if let number = try? container.decode(JSONNumber.self) {
            self = .number(number)
        } else if let array = try? container.decode([JSONValue].self) {
            self = .array(array)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        if let encoder = encoder as? JSONValueEncoding {
            encoder.encodeValue(self)
            return
        }
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}

extension JSONValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral,
    ExpressibleByDictionaryLiteral
{
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int) { self = .number(JSONNumber(value)) }
    public init(floatLiteral value: Double) { self = .number(JSONNumber(floatLiteral: value)) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

extension JSONValue {
    /// A whole number as a JSON number.
    public static func number(_ value: some BinaryInteger) -> JSONValue { .number(JSONNumber(value)) }
}
