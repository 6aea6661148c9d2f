import Foundation

/// Opaque keyset cursors: base64url of a key, so clients do not build them.
enum Cursor {
    static func encode(_ key: String) -> String {
        Data(key.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    static func decode(_ cursor: String?) throws -> String? {
        guard let cursor else { return nil }
        var base64 = cursor.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let data = Data(base64Encoded: base64), let key = String(data: data, encoding: .utf8) else {
            throw Problem.invalid("cursor", "cursor is not one this server handed out")
        }
        return key
    }

    /// The id a cursor of `kind` (`job`, `audit`: `encode("job:42")`) carries; nil without a
    /// cursor, 400 for one this server did not hand out for this listing.
    static func id(_ cursor: String?, kind: String) throws -> Int64? {
        guard let key = try decode(cursor) else { return nil }
        guard key.hasPrefix(kind + ":"), let id = Int64(key.dropFirst(kind.count + 1)) else {
            throw Problem.invalid("cursor", "cursor is not one this server handed out")
        }
        return id
    }
}
