import Baton
import Foundation
import Logging
import Synchronization

/// What a task logged through `context.logger` during one attempt, kept with the attempt (its
/// entry in the job's results or errors, `"log"`): the last ``limit`` bytes of it, whole lines,
/// with a first line saying how much was cut before them.
///
/// Lines from `debug` up are kept whatever the worker's own level (`BATON_LOG_LEVEL`), which
/// still decides what reaches its standard error; the job, stage and attempt are left out of each
/// line (the attempt is where it is kept).
final class StageLog: AttemptLog {
    /// 64 KiB: a few hundred lines, enough for what an attempt says about itself, not a dump.
    static let limit = 64 * 1024

    private struct Lines {
        var lines: [String] = []
        var bytes = 0
        var cutLines = 0
        var cutBytes = 0
    }

    private let lines = Mutex(Lines())

    func append(_ line: String) {
        let size = line.utf8.count + 1
        lines.withLock { kept in
            kept.lines.append(line)
            kept.bytes += size
            var first = 0
            while kept.bytes > Self.limit, first < kept.lines.count {
                let dropped = kept.lines[first].utf8.count + 1
                kept.bytes -= dropped
                kept.cutBytes += dropped
                kept.cutLines += 1
                first += 1
            }
            if first > 0 { kept.lines.removeFirst(first) }
        }
    }

    /// The lines kept, nil if the task logged nothing.
    var text: String? {
        lines.withLock { kept in
            guard kept.cutLines > 0 || !kept.lines.isEmpty else { return nil }
            let cut =
                kept.cutLines == 0
                ? "" : "[\(kept.cutLines) earlier lines (\(kept.cutBytes) bytes) cut: the last 64 KiB are kept]\n"
            return cut + kept.lines.joined(separator: "\n")
        }
    }

    /// `logger` writing to this log as well.
    func logger(over logger: Logger) -> Logger {
        Logger(label: logger.label) { _ in StageLogHandler(upstream: logger, log: self) }
    }
}

/// Hands each line to the worker's own logger, at its level, and keeps it in the attempt's
/// ``StageLog``.
struct StageLogHandler: LogHandler {
    let upstream: Logger
    let log: StageLog
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level

    init(upstream: Logger, log: StageLog) {
        self.upstream = upstream
        self.log = log
        logLevel = min(upstream.logLevel, .debug)
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// The keys every line of the worker's log carries, and the attempt's log does not repeat.
    private static let attemptKeys: Set = ["job", "stage", "attempt"]

    func log(
        level: Logger.Level, message: Logger.Message, metadata explicit: Logger.Metadata?, source: String,
        file: String, function: String, line number: UInt
    ) {
        var merged = metadata
        if let explicit { merged.merge(explicit) { $1 } }
        if level >= upstream.logLevel {
            upstream.log(
                level: level, message, metadata: merged, source: source, file: file, function: function, line: number)
        }
        var line = Self.time(Date())
        line += " "
        line += level.rawValue
        line += " "
        line += message.description
        // Sorted, so that a line reads the same each time; most have a key or two besides the
        // attempt's own.
        let keys = merged.keys.filter { !Self.attemptKeys.contains($0) }
        for key in keys.count > 1 ? keys.sorted() : keys {
            line += " "
            line += key
            line += "="
            line += merged[key]!.description
        }
        log.append(line)
    }

    /// `13:04:05.123`, UTC (the day is the attempt's), from the clock's milliseconds.
    static func time(_ date: Date) -> String {
        // Rounded to the nearest, as RFC3339.format does: a Date holds a time to tens of microseconds.
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded())
        let ofDay = Int(((milliseconds % 86_400_000) + 86_400_000) % 86_400_000)
        let fields = [ofDay / 3_600_000, ofDay / 60_000 % 60, ofDay / 1000 % 60]
        var text = ""
        text.reserveCapacity(12)
        for (index, field) in fields.enumerated() {
            if index > 0 { text += ":" }
            if field < 10 { text += "0" }
            text += String(field)
        }
        let fraction = ofDay % 1000
        text += fraction < 10 ? ".00" : fraction < 100 ? ".0" : "."
        text += String(fraction)
        return text
    }
}
