import Foundation

/// How the control plane's JSON is written and read: snake_case keys (each type's `CodingKeys`),
/// absent values as explicit `null`, times as RFC 3339 in UTC with milliseconds.
public enum WireCoding {
    /// The encoder the server answers with.
    public static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(format(date))
        }
        return encoder
    }

    /// A decoder for the server's answers.
    public static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = parseTime(text) else {
                throw DecodingError.dataCorruptedError(
                    in: container, debugDescription: "\(text) is not an RFC 3339 time")
            }
            return date
        }
        return decoder
    }

    public static func format(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }

    /// An RFC 3339 time, with or without fractional seconds, in UTC (`Z`) or with an offset
    /// (PostgreSQL's JSON form of `timestamptz`, `2026-01-31T09:30:00.123456+00:00`).
    public static func parseTime(_ text: String) -> Date? {
        (try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text))
            ?? (try? Date.ISO8601FormatStyle().parse(text))
    }
}
