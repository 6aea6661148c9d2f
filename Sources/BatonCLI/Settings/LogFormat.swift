import Baton
import Foundation
import Logging
import Synchronization

/// How log lines are written to standard error.
enum LogFormat: String, CaseIterable, Sendable {
    /// swift-log's own line, for a person at a terminal.
    case text
    /// `ts=… level=info logger=baton.worker msg="stage failed" job=42 stage=1 attempt=2 worker=…`
    case logfmt
    /// One JSON object per line, the metadata as fields.
    case json

    /// Text on a terminal, logfmt otherwise (a file, journald, a container's log).
    static var automatic: LogFormat { isatty(STDERR_FILENO) == 1 ? .text : .logfmt }
}

/// A log handler writing one logfmt or JSON line per message to standard error, each line in one
/// `write` so that lines from different threads never interleave.
struct LineLogHandler: LogHandler {
    let label: String
    let format: LogFormat
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var fields = metadata
        if let provided = metadataProvider?.get() { fields.merge(provided) { _, new in new } }
        if let extra = event.metadata { fields.merge(extra) { _, new in new } }
        let timestamp = Date().formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
        var line: String
        switch format {
        case .json:
            var object: [String: JSONValue] = [
                "ts": .string(timestamp), "level": .string(event.level.rawValue), "logger": .string(label),
                "msg": .string("\(event.message)"),
            ]
            for (key, value) in fields where object[key] == nil { object[key] = Self.json(value) }
            line = JSONValue.object(object).jsonText
        case .logfmt, .text:  // text goes to swift-log's StreamLogHandler instead
            line =
                "ts=\(timestamp) level=\(event.level.rawValue) logger=\(Self.logfmt(label)) msg=\(Self.logfmt("\(event.message)"))"
            for (key, value) in fields.sorted(by: { $0.key < $1.key }) {
                line += " \(key)=\(Self.logfmt(Self.text(value)))"
            }
        }
        line += "\n"
        line.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = write(STDERR_FILENO, bytes.baseAddress! + offset, bytes.count - offset)
                if written <= 0 { break }
                offset += written
            }
        }
    }

    /// A logfmt value: bare when it can be, else quoted with `"` and `\` escaped.
    static func logfmt(_ value: String) -> String {
        let plain =
            !value.isEmpty
            && value.unicodeScalars.allSatisfy {
                $0.value > 0x20 && $0 != "=" && $0 != "\"" && $0 != "\\" && $0.value != 0x7f
            }
        if plain { return value }
        var quoted = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": quoted += "\\\""
            case "\\": quoted += "\\\\"
            case "\n": quoted += "\\n"
            case "\r": quoted += "\\r"
            case "\t": quoted += "\\t"
            default: quoted.unicodeScalars.append(scalar)
            }
        }
        return quoted + "\""
    }

    static func text(_ value: Logger.MetadataValue) -> String {
        switch value {
        case .string(let text): text
        case .stringConvertible(let convertible): convertible.description
        case .array, .dictionary: "\(value)"
        }
    }

    static func json(_ value: Logger.MetadataValue) -> JSONValue {
        switch value {
        case .string(let text): .string(text)
        case .stringConvertible(let convertible): .string(convertible.description)
        case .array(let items): .array(items.map(json))
        case .dictionary(let entries): .object(entries.mapValues(json))
        }
    }
}
