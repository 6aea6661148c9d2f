import ArgumentParser
import Baton
import Foundation
import Logging
import Synchronization

@main
struct BatonCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "baton",
        abstract: "Baton: a PostgreSQL-backed job queue whose jobs are chains of stages.",
        discussion: """
            Commands that talk to the control plane take --url (BATON_URL, default \
            http://127.0.0.1:8080), --token (BATON_TOKEN), --json and --no-color, before or after \
            the command; --wide stops cutting lines to the terminal's width (or COLUMNS). They exit \
            with 0 on success, 1 when the operation failed, 2 on a usage error, 3 when the server \
            cannot be reached, 4 when it refuses the token, 5 when the job is not found, 124 when \
            `jobs wait --timeout` ran out; with --json a failure is also printed on standard output \
            as a problem document.
            """,
        version: BatonVersion.current,
        subcommands: [
            Dev.self, Serve.self, WorkerCommand.self, Migrate.self, Enqueue.self, Jobs.self, Queues.self, Lanes.self,
            RateLimits.self,
            Workers.self, Schedules.self, Audit.self, SettingsCommand.self,
        ]
    )

    /// The admin commands' options, given before the command name. ArgumentParser lets a parent's
    /// option be given after the subcommand too, and then the parent takes it: a subcommand with an
    /// option of the same name (`bench --json`) must read this one as well.
    @OptionGroup(title: "Options of enqueue, jobs, queues, lanes, workers and schedules, before or after the command")
    var admin: AdminOptions

    /// Runs the command; failures exit with the statuses documented above (ArgumentParser's own
    /// usage errors included, which it would otherwise exit with as 64).
    static func main() async {
        var command: any ParsableCommand
        do {
            command = try await asyncParseAsRoot()
        } catch {
            guard exitCode(for: error) == .validationFailure else { exit(withError: error) }
            try? FileHandle.standardError.write(contentsOf: Data((fullMessage(for: error) + "\n").utf8))
            Foundation.exit(AdminFailure.Status.usage.rawValue)
        }
        do {
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let failure as AdminFailure {
            // With --json a script reads standard output: the failure is there too, as a problem
            // document, unless the command printed its answer there already.
            if let admin = command as? any AdminCommand, admin.admin.json, !failure.answered {
                try? FileHandle.standardOutput.write(contentsOf: Data((failure.problemDocument.jsonText + "\n").utf8))
            }
            try? FileHandle.standardError.write(contentsOf: Data("baton: \(failure.message)\n".utf8))
            Foundation.exit(failure.status.rawValue)
        } catch let error where error.isDatabaseFailure {
            // What PostgreSQL said and its SQLSTATE, not PostgresNIO's generic description.
            try? FileHandle.standardError.write(contentsOf: Data("baton: \(error.logDescription)\n".utf8))
            Foundation.exit(AdminFailure.Status.failed.rawValue)
        } catch let error as ValidationError {
            // A setting found wrong once the command runs: the message says which, without the
            // usage text (the command line itself parsed).
            try? FileHandle.standardError.write(contentsOf: Data("baton: \(error.message)\n".utf8))
            Foundation.exit(AdminFailure.Status.usage.rawValue)
        } catch {
            exit(withError: error)
        }
    }
}

/// A logger writing to standard error in the configured format, at the configured level (for
/// commands that read no settings: `BATON_LOG_LEVEL`, else info).
func makeLogger(_ label: String) -> Logger {
    LogSetup.configure(
        level: ProcessInfo.processInfo.environment["BATON_LOG_LEVEL"].flatMap {
            Logger.Level(rawValue: $0.lowercased())
        }
            ?? .info,
        format: ProcessInfo.processInfo.environment["BATON_LOG_FORMAT"].flatMap { LogFormat(rawValue: $0.lowercased()) }
            ?? .automatic)
    var logger = Logger(label: label)
    logger.logLevel = LogSetup.level
    return logger
}

/// The process's logging, set up by the first `configure` (swift-log allows one bootstrap).
enum LogSetup {
    private static let chosen = Mutex<(level: Logger.Level, format: LogFormat)?>(nil)

    static func configure(level: Logger.Level, format: LogFormat) {
        let first = chosen.withLock { chosen in
            if chosen != nil { return false }
            chosen = (level, format)
            return true
        }
        guard first else { return }
        // Every logger starts at the configured level, a library's own (`Logger(label:)`) too:
        // Hummingbird's connection counter logs each connection at trace.
        LoggingSystem.bootstrap { label in
            switch format {
            case .text:
                var handler = StreamLogHandler.standardError(label: label)
                handler.logLevel = level
                return handler
            case .logfmt, .json:
                return LineLogHandler(label: label, format: format, logLevel: level)
            }
        }
    }

    /// The level loggers are made with.
    static var level: Logger.Level { chosen.withLock { $0?.level } ?? .info }
}

extension Duration: @retroactive ExpressibleByArgument {
    public init?(argument: String) {
        guard let duration = DurationFormat.parse(argument) else { return nil }
        self = duration
    }
}

/// Writes a line to standard output at once (unbuffered, so it shows up even through a pipe; a
/// reader gone does not stop a server that reports here).
func say(_ line: String) {
    try? FileHandle.standardOutput.write(contentsOf: Data((line + "\n").utf8))
}
