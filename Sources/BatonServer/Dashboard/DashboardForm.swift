import Foundation
import Hummingbird

/// A form the dashboard posted (`application/x-www-form-urlencoded`): each field's values in
/// order.
struct DashboardForm: Sendable {
    private var fields: [String: [String]] = [:]

    /// The largest form read: a login or a bulk action over one page of jobs.
    static let maximumSize = 64 << 10

    init(_ request: Request) async throws {
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: Self.maximumSize)
        } catch {
            throw DashboardError.refused(.contentTooLarge, "The form is larger than 64 KiB.")
        }
        self.init(String(buffer: buffer))
    }

    init(_ text: String) {
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ part: Substring) -> String? {
                part.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
            }
            guard let name = decode(parts[0]), let value = decode(parts.count > 1 ? parts[1] : "") else { continue }
            fields[name, default: []].append(value)
        }
    }

    /// The field's first value.
    subscript(name: String) -> String? { fields[name]?.first }

    /// All of the field's values (checkboxes of the same name).
    func all(_ name: String) -> [String] { fields[name] ?? [] }
}
