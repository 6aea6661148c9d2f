import ArgumentParser
import Baton
import Foundation
import Logging

@main
struct BatonCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "baton",
        abstract: "Baton: a PostgreSQL-backed job queue whose jobs are chains of stages.",
        discussion: """
            Commands that talk to the control plane take --url (BATON_URL, default \
            http://127.0.0.1:8080), --token (BATON_TOKEN), --json and --no-color, before or after \
            the command. They exit with 0 on success, 1 when the operation failed, 2 on a usage \
            error, 3 when the server cannot be reached, 4 when it refuses the token, 5 when the job \
            is not found.
            """,
        version: BatonVersion.current,
        subcommands: [
            Dev.self, Serve.self, Worker.self, Migrate.self, Enqueue.self, Jobs.self, Queues.self, Lanes.self,
            Workers.self, Bench.self,
        ]
    )

    /// The admin commands' options, given before the command name. ArgumentParser lets a parent's
    /// option be given after the subcommand too, and then the parent takes it: a subcommand with an
    /// option of the same name (`bench --json`) must read this one as well.
    @OptionGroup(title: "Options of enqueue, jobs, queues, lanes and workers, before or after the command")
    var admin: AdminOptions

    /// Runs the command; failures exit with the statuses documented above (ArgumentParser's own
    /// usage errors included, which it would otherwise exit with as 64).
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var command = command as? any AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch let failure as AdminFailure {
            FileHandle.standardError.write(Data("baton: \(failure.message)\n".utf8))
            Foundation.exit(failure.status.rawValue)
        } catch {
            guard exitCode(for: error) == .validationFailure else { exit(withError: error) }
            FileHandle.standardError.write(Data((fullMessage(for: error) + "\n").utf8))
            Foundation.exit(AdminFailure.Status.usage.rawValue)
        }
    }
}

/// Logs to standard error; `BATON_LOG_LEVEL` (trace…critical) sets the level, info by default.
func makeLogger(_ label: String) -> Logger {
    LoggingBootstrap.once
    var logger = Logger(label: label)
    logger.logLevel =
        ProcessInfo.processInfo.environment["BATON_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .info
    return logger
}

enum LoggingBootstrap {
    static let once: Void = LoggingSystem.bootstrap { label in
        var handler = StreamLogHandler.standardError(label: label)
        handler.logLevel = .trace
        return handler
    }
}

extension Duration: @retroactive ExpressibleByArgument {
    public init?(argument: String) {
        guard let duration = DurationFormat.parse(argument) else { return nil }
        self = duration
    }
}

/// Writes a line to standard output at once (unbuffered, so it shows up even through a pipe).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}
