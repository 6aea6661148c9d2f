/// Mutation fuzzing: small random edits of valid documents, the kind of input that reaches the
/// corners of a parser (a bracket too many, a quote cut off, a NUL, a byte that is not UTF-8).
public enum Mutations {
    /// Bytes that matter to JSON, templates and durations, and some that break UTF-8.
    static let interesting: [UInt8] = Array(#"{}[]":,\0-.eE+tfn"#.utf8) + [0, 0x0A, 0x7F, 0xC3, 0xE2, 0xF0, 0xFF, 0x20]

    /// Applies each edit (any integer: it picks what, where and which byte) to `bytes`.
    public static func apply(_ edits: [Int], to bytes: [UInt8]) -> [UInt8] {
        var bytes = bytes
        for edit in edits {
            let position = bytes.isEmpty ? 0 : (edit >> 8) % (bytes.count + 1)
            let byte = interesting[(edit >> 3) % interesting.count]
            switch edit & 0b11 {
            case 0 where position < bytes.count: bytes[position] = byte
            case 1: bytes.insert(byte, at: position)
            case 2 where position < bytes.count: bytes.remove(at: position)
            default:
                // Repeat a stretch: nesting and lists grow.
                let end = min(bytes.count, position + 1 + (edit >> 24) % 16)
                bytes.insert(contentsOf: bytes[position..<end], at: position)
            }
        }
        return bytes
    }
}
