import Baton
import Foundation

/// Removes secret values from what the `http` task writes: its output, its errors and its logs.
/// A secret is also looked for percent-encoded, the form it takes in a query string.
struct Redactor: Sendable {
    static let mark = "[redacted]"
    private let needles: [String]

    init(_ secrets: some Sequence<String>) {
        var needles = Set<String>()
        for secret in secrets where !secret.isEmpty {
            needles.insert(secret)
            needles.insert(HTTPTask.queryEncoded(secret))
        }
        // Longest first, so that a secret containing another is removed whole.
        self.needles = needles.sorted { $0.count > $1.count }
    }

    func callAsFunction(_ text: String) -> String {
        needles.reduce(text) { $0.replacingOccurrences(of: $1, with: Self.mark) }
    }

    func callAsFunction(_ value: JSONValue) -> JSONValue {
        guard !needles.isEmpty else { return value }
        switch value {
        case .string(let text): return .string(self(text))
        case .array(let items): return .array(items.map { self($0) })
        case .object(let fields):
            return .object(
                Dictionary(fields.map { (self($0.key), self($0.value)) }, uniquingKeysWith: { first, _ in first }))
        default: return value
        }
    }
}
