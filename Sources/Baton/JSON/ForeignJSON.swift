import Synchronization

/// Keeps `JSONValue`'s numbers exact while a coder other than Baton's own (Foundation's
/// `JSONDecoder` and `JSONEncoder`, which swift-openapi-runtime uses for every body) reads or writes
/// it. Why, and the middlewares that set it up, are in `BatonAPI/FoundationBridge/FoundationJSONBridge.swift`.
///
/// - Reading: the body was parsed by Baton's reader first; `JSONValue.init(from:)` takes the value
///   at the foreign decoder's coding path from that document instead of what the decoder offers.
/// - Writing: a number the foreign encoder cannot write exactly (more digits than `Decimal` holds,
///   say) is written as a placeholder string, and the middleware puts the number's text back in
///   the encoded body. A value that Baton writes faster itself (a batch's answer) goes the same
///   way: its whole text behind one placeholder.
package final class ForeignJSON: Sendable {
    /// The bridge of the body being read or written by this task, if any.
    @TaskLocal package static var current: ForeignJSON?

    /// The body as Baton's reader read it.
    package let document: Mutex<JSONValue?>
    /// The JSON texts written as placeholders, by index.
    private let placeholders = Mutex<[String]>([])
    /// Makes placeholders impossible to forge: a string a caller sent cannot match one.
    private let nonce: String

    package init(document: JSONValue? = nil) {
        self.document = Mutex(document)
        var generator = SystemRandomNumberGenerator()
        nonce = String(generator.next(), radix: 36) + String(generator.next(), radix: 36)
    }

    /// The value at `codingPath` in the document read, if there is one.
    package func value(at codingPath: [any CodingKey]) -> JSONValue? {
        document.withLock { $0?.value(at: codingPath) }
    }

    /// The string written in place of `number`.
    func placeholder(for number: JSONNumber) -> String { placeholder(forJSON: number.text) }

    /// The string written in place of `text`, which must be JSON (Baton's writer's).
    package func placeholder(forJSON text: String) -> String {
        let index = placeholders.withLock { list in
            list.append(text)
            return list.count - 1
        }
        return "\(prefix)\(index)"
    }

    private var prefix: String { "baton-json-\(nonce)-" }

    /// Whether any text was written as a placeholder.
    package var wrotePlaceholders: Bool { placeholders.withLock { !$0.isEmpty } }

    /// `bytes` (JSON text a foreign encoder wrote) with every placeholder string replaced by its
    /// text.
    package func restoringNumbers(in bytes: [UInt8]) -> [UInt8] {
        let texts = placeholders.withLock { $0 }
        guard !texts.isEmpty else { return bytes }
        let marker = Array(("\"" + prefix).utf8)
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "\""), bytes[index...].starts(with: marker) {
                var end = index + marker.count
                var number = 0
                while end < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[end]) {
                    number = number * 10 + Int(bytes[end] - UInt8(ascii: "0"))
                    end += 1
                }
                if end < bytes.count, bytes[end] == UInt8(ascii: "\""), texts.indices.contains(number) {
                    output.append(contentsOf: texts[number].utf8)
                    index = end + 1
                    continue
                }
            }
            output.append(bytes[index])
            index += 1
        }
        return output
    }
}

extension JSONValue {
    /// The value a `Codable` coding path leads to: an index into an array, a key into an object.
    package func value(at codingPath: [any CodingKey]) -> JSONValue? {
        var value = self
        for key in codingPath {
            if let index = key.intValue, case .array(let items) = value, items.indices.contains(index) {
                value = items[index]
            } else if case .object(let fields) = value, let field = fields[key.stringValue] {
                value = field
            } else {
                return nil
            }
        }
        return value
    }
}
