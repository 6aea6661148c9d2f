import ArgumentParser
import Baton
import Foundation
import Logging

@main
struct BatonCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "baton",
        abstract: "Baton: a PostgreSQL-backed job queue whose jobs are chains of stages.",
        version: "0.1.0",
        subcommands: [Dev.self, Serve.self, Worker.self, Migrate.self, Bench.self]
    )
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
