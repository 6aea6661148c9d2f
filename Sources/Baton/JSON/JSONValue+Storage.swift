extension JSONValue {
    /// Refuses what PostgreSQL's `jsonb` cannot store, naming where it is (`path` is this value's
    /// own JSON path, e.g. `input`): a NUL character (`\u0000`) in a string or key, and a number
    /// beyond `numeric`'s range (see ``JSONNumber/isStorable``). PostgreSQL would refuse the whole
    /// statement, so a batch with one such job would fail for all.
    public func checkStorable(at path: String) throws(BatonError) {
        switch self {
        case .null, .bool: return
        case .number(let number):
            guard number.isStorable else {
                throw .invalidChain(
                    path: path,
                    reason: "\(path) is a number PostgreSQL cannot store (at most 131072 digits before the decimal "
                        + "point and 16383 after it)")
            }
        case .string(let string):
            guard !string.unicodeScalars.contains("\u{0}") else {
                throw .invalidChain(
                    path: path, reason: "\(path) contains a NUL character (\\u0000), which cannot be stored")
            }
        case .array(let items):
            for (index, item) in items.enumerated() { try item.checkStorable(at: "\(path)[\(index)]") }
        case .object(let fields):
            for (key, item) in fields {
                guard !key.unicodeScalars.contains("\u{0}") else {
                    throw .invalidChain(
                        path: path, reason: "\(path) has a key with a NUL character (\\u0000), which cannot be stored")
                }
                try item.checkStorable(at: JSONPath.appending(key, to: path))
            }
        }
    }
}

extension JSONValue {
    /// Whether a `null` appears anywhere in this value.
    public var containsNull: Bool {
        switch self {
        case .null: true
        case .bool, .number, .string: false
        case .array(let items): items.contains { $0.containsNull }
        case .object(let fields): fields.values.contains { $0.containsNull }
        }
    }
}

/// JSON paths as Baton writes them in errors: `stages[1].group[0].timeout`, `input.order.id`.
public enum JSONPath {
    /// `path` followed by the object key `key`.
    public static func appending(_ key: String, to path: String) -> String {
        path.isEmpty ? key : "\(path).\(key)"
    }

    /// A `Codable` coding path as a JSON path.
    public static func render(_ codingPath: [any CodingKey], prefix: String = "") -> String {
        codingPath.reduce(prefix) { path, key in
            key.intValue.map { "\(path)[\($0)]" } ?? appending(key.stringValue, to: path)
        }
    }
}
