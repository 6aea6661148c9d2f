/// JSON text to and from `JSONValue`: Baton's one JSON reader and writer.
///
/// Every request body, response, job row and stage input passes through here. RFC 8259, strict
/// (no trailing commas, no comments, no NaN), nesting up to 512 deep. Numbers are kept as the text
/// they were written in (``JSONNumber``), so nothing is rounded on the way through; of repeated
/// keys the last wins, as in PostgreSQL's `jsonb`, unless the caller asks for them to be refused.
/// Output has sorted keys and unescaped slashes.
///
/// Foundation's `JSONDecoder` and `JSONEncoder` cannot do this (they read numbers into `Double`,
/// `Int64` or `Decimal`), and were slower: `bench/` compares the two.
extension JSONValue {
    /// The largest nesting accepted: deeper input is refused rather than risking the stack.
    public static let maxDepth = 512

    /// What to do with a key an object repeats.
    public enum DuplicateKeys: Sendable {
        /// The last one wins, as in PostgreSQL's `jsonb`.
        case lastWins
        /// Refuse the text: what a caller meant is ambiguous (I-JSON, RFC 7493).
        case refuse
    }

    /// Parses UTF-8 JSON text.
    public init(parsing bytes: some Collection<UInt8>, duplicateKeys: DuplicateKeys = .lastWins)
        throws(JSONParseError)
    {
        func parse(_ buffer: UnsafeBufferPointer<UInt8>) -> Result<JSONValue, JSONParseError> {
            var parser = JSONParser(bytes: buffer, refusingDuplicates: duplicateKeys == .refuse)
            return Result { () throws(JSONParseError) in try parser.document() }
        }
        let result = bytes.withContiguousStorageIfAvailable(parse) ?? Array(bytes).withUnsafeBufferPointer(parse)
        self = try result.get()
    }

    /// Parses JSON text.
    public init(parsing text: String, duplicateKeys: DuplicateKeys = .lastWins) throws(JSONParseError) {
        var text = text
        self = try text.withUTF8 { buffer in
            var parser = JSONParser(bytes: buffer, refusingDuplicates: duplicateKeys == .refuse)
            return Result { () throws(JSONParseError) in try parser.document() }
        }.get()
    }

    /// Compact JSON text with sorted keys.
    public var jsonText: String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(64)
        write(into: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Indented JSON text with sorted keys, for people to read.
    public var prettyText: String {
        var bytes: [UInt8] = []
        write(into: &bytes, indent: 0)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends this value's JSON text to `bytes`; object keys sorted unless `sortingKeys` is false
    /// (for text only a machine reads, such as a `jsonb` parameter, where order is moot).
    public func write(into bytes: inout [UInt8], sortingKeys: Bool = true) {
        write(into: &bytes, sortingKeys: sortingKeys, indent: nil)
    }

    private func write(into bytes: inout [UInt8], sortingKeys: Bool = true, indent: Int?) {
        func newline(_ depth: Int) {
            guard let indent else { return }
            bytes.append(UInt8(ascii: "\n"))
            bytes.append(contentsOf: repeatElement(UInt8(ascii: " "), count: 2 * (indent + depth)))
        }
        let inner = indent.map { $0 + 1 }
        switch self {
        case .null: bytes.append(contentsOf: "null".utf8)
        case .bool(let value): bytes.append(contentsOf: (value ? "true" : "false").utf8)
        case .number(let value): bytes.append(contentsOf: value.text.utf8)
        case .string(let value): Self.write(string: value, into: &bytes)
        case .array(let items):
            bytes.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                newline(1)
                item.write(into: &bytes, sortingKeys: sortingKeys, indent: inner)
            }
            if !items.isEmpty { newline(0) }
            bytes.append(UInt8(ascii: "]"))
        case .object(let fields):
            bytes.append(UInt8(ascii: "{"))
            var first = true
            func member(_ key: String, _ value: JSONValue) {
                if !first { bytes.append(UInt8(ascii: ",")) }
                first = false
                newline(1)
                Self.write(string: key, into: &bytes)
                bytes.append(UInt8(ascii: ":"))
                if indent != nil { bytes.append(UInt8(ascii: " ")) }
                value.write(into: &bytes, sortingKeys: sortingKeys, indent: inner)
            }
            if sortingKeys {
                for (key, value) in fields.sorted(by: { $0.key < $1.key }) { member(key, value) }
            } else {
                for (key, value) in fields { member(key, value) }
            }
            if !fields.isEmpty { newline(0) }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    private static let hex = Array("0123456789abcdef".utf8)

    /// `string` as a JSON string, quoted and escaped.
    package static func write(string: String, into bytes: inout [UInt8]) {
        var string = string
        bytes.append(UInt8(ascii: "\""))
        string.withUTF8 { utf8 in
            // Most strings need no escape: copy them whole.
            guard utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else {
                bytes.append(contentsOf: utf8)
                return
            }
            for byte in utf8 {
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                    bytes.append(UInt8(ascii: "\\"))
                    bytes.append(byte)
                case UInt8(ascii: "\n"):
                    bytes.append(UInt8(ascii: "\\"))
                    bytes.append(UInt8(ascii: "n"))
                case UInt8(ascii: "\r"):
                    bytes.append(UInt8(ascii: "\\"))
                    bytes.append(UInt8(ascii: "r"))
                case UInt8(ascii: "\t"):
                    bytes.append(UInt8(ascii: "\\"))
                    bytes.append(UInt8(ascii: "t"))
                case 0..<0x20:
                    bytes.append(contentsOf: "\\u00".utf8)
                    bytes.append(hex[Int(byte >> 4)])
                    bytes.append(hex[Int(byte & 0xf)])
                default:
                    bytes.append(byte)
                }
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}

/// Why JSON text did not parse, and at which byte.
public struct JSONParseError: Error, Sendable, Hashable, CustomStringConvertible {
    public var offset: Int
    public var reason: String

    public var description: String { "invalid JSON at byte \(offset): \(reason)" }
}

private struct JSONParser {
    let bytes: UnsafeBufferPointer<UInt8>
    let refusingDuplicates: Bool
    var index = 0
    var depth = 0

    init(bytes: UnsafeBufferPointer<UInt8>, refusingDuplicates: Bool) {
        self.bytes = bytes
        self.refusingDuplicates = refusingDuplicates
    }

    mutating func document() throws(JSONParseError) -> JSONValue {
        skipSpace()
        let value = try self.value()
        skipSpace()
        guard index == bytes.count else { throw error("unexpected text after the value") }
        return value
    }

    private func error(_ reason: String) -> JSONParseError {
        JSONParseError(offset: index, reason: reason)
    }

    private mutating func skipSpace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x0a, 0x0d, 0x09: index += 1
            default: return
            }
        }
    }

    private mutating func value() throws(JSONParseError) -> JSONValue {
        guard index < bytes.count else { throw error("unexpected end of text") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try object()
        case UInt8(ascii: "["): return try array()
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
        default: throw error("unexpected character")
        }
    }

    private mutating func literal(_ word: StaticString) throws(JSONParseError) {
        let count = word.utf8CodeUnitCount
        guard bytes.count - index >= count,
            (0..<count).allSatisfy({ bytes[index + $0] == word.utf8Start[$0] })
        else { throw error("unexpected character") }
        index += count
    }

    private mutating func enter() throws(JSONParseError) {
        depth += 1
        guard depth <= JSONValue.maxDepth else { throw error("nested deeper than \(JSONValue.maxDepth)") }
        index += 1
        skipSpace()
    }

    private mutating func object() throws(JSONParseError) -> JSONValue {
        try enter()
        var fields: [String: JSONValue] = [:]
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            depth -= 1
            return .object(fields)
        }
        while true {
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw error("expected a key") }
            let keyOffset = index
            let key = try string()
            if refusingDuplicates, fields[key] != nil {
                throw JSONParseError(offset: keyOffset, reason: "the key \"\(key)\" appears twice in an object")
            }
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw error("expected ':'") }
            index += 1
            skipSpace()
            fields[key] = try value()
            skipSpace()
            guard index < bytes.count else { throw error("unexpected end of text") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                skipSpace()
            } else if bytes[index] == UInt8(ascii: "}") {
                index += 1
                depth -= 1
                return .object(fields)
            } else {
                throw error("expected ',' or '}'")
            }
        }
    }

    private mutating func array() throws(JSONParseError) -> JSONValue {
        try enter()
        var items: [JSONValue] = []
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            depth -= 1
            return .array(items)
        }
        while true {
            items.append(try value())
            skipSpace()
            guard index < bytes.count else { throw error("unexpected end of text") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                skipSpace()
            } else if bytes[index] == UInt8(ascii: "]") {
                index += 1
                depth -= 1
                return .array(items)
            } else {
                throw error("expected ',' or ']'")
            }
        }
    }

    private mutating func number() throws(JSONParseError) -> JSONNumber {
        let start = index
        func digits() -> Int {
            let from = index
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
            return index - from
        }
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        let integer = index
        guard digits() > 0 else { throw error("expected a digit") }
        guard bytes[integer] != UInt8(ascii: "0") || index - integer == 1 else { throw error("leading zero") }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard digits() > 0 else { throw error("expected a digit after '.'") }
        }
        if index < bytes.count, bytes[index] | 0x20 == UInt8(ascii: "e") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            guard digits() > 0 else { throw error("expected a digit in the exponent") }
        }
        return JSONNumber(
            validated: String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self))
    }

    private mutating func string() throws(JSONParseError) -> String {
        index += 1
        let start = index
        // Fast path: no escapes.
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let slice = UnsafeBufferPointer(rebasing: bytes[start..<index])
                index += 1
                return try validated(slice, at: start)
            }
            if byte == UInt8(ascii: "\\") { break }
            guard byte >= 0x20 else { throw error("control character in a string") }
            index += 1
        }
        var scalars = Array(UnsafeBufferPointer(rebasing: bytes[start..<index]))
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                guard let string = String(validating: scalars, as: UTF8.self) else {
                    throw JSONParseError(offset: start, reason: "invalid UTF-8 in a string")
                }
                return string
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw error("unexpected end of text") }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): scalars.append(escape)
                case UInt8(ascii: "b"): scalars.append(0x08)
                case UInt8(ascii: "f"): scalars.append(0x0c)
                case UInt8(ascii: "n"): scalars.append(0x0a)
                case UInt8(ascii: "r"): scalars.append(0x0d)
                case UInt8(ascii: "t"): scalars.append(0x09)
                case UInt8(ascii: "u"):
                    var code = try hex4()
                    if (0xd800..<0xdc00).contains(code) {
                        guard bytes.count - index >= 6, bytes[index] == UInt8(ascii: "\\"),
                            bytes[index + 1] == UInt8(ascii: "u")
                        else { throw error("unpaired surrogate") }
                        index += 2
                        let low = try hex4()
                        guard (0xdc00..<0xe000).contains(low) else { throw error("unpaired surrogate") }
                        code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00)
                    } else if (0xdc00..<0xe000).contains(code) {
                        throw error("unpaired surrogate")
                    }
                    scalars.append(contentsOf: String(Character(Unicode.Scalar(code)!)).utf8)
                default: throw error("unknown escape")
                }
            default:
                guard byte >= 0x20 else { throw error("control character in a string") }
                scalars.append(byte)
                index += 1
            }
        }
        throw error("unterminated string")
    }

    private mutating func hex4() throws(JSONParseError) -> UInt32 {
        guard bytes.count - index >= 4 else { throw error("short \\u escape") }
        var code: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw error("bad \\u escape")
            }
            code = code << 4 | UInt32(digit)
            index += 1
        }
        return code
    }

    /// The UTF-8 in `buffer` as a string; invalid UTF-8 is refused, not repaired.
    private func validated(_ buffer: UnsafeBufferPointer<UInt8>, at offset: Int) throws(JSONParseError) -> String {
        guard let string = String(validating: buffer, as: UTF8.self) else {
            throw JSONParseError(offset: offset, reason: "invalid UTF-8 in a string")
        }
        return string
    }
}
