import ArgumentParser
import Configuration
import Foundation
import Logging

/// The options every server command takes: the config file and logging.
struct RuntimeOptions: ParsableArguments, SettingFlags {
    @Option(help: "A JSON or YAML file of settings, below flags and the environment (BATON_CONFIG).")
    var config: String?

    @Option(help: "trace, debug, info, notice, warning, error or critical (BATON_LOG_LEVEL; default info).")
    var logLevel: String?

    @Option(help: "text, logfmt or json (BATON_LOG_FORMAT; default text on a terminal, else logfmt).")
    var logFormat: String?

    var flags: [Setting: ConfigContent] {
        var flags: [Setting: ConfigContent] = [:]
        flags.add(.config, config.map(ConfigContent.string))
        flags.add(.logLevel, logLevel.map(ConfigContent.string))
        flags.add(.logFormat, logFormat.map(ConfigContent.string))
        return flags
    }

    /// The settings from these flags, `others`, the environment and the config file; logging is
    /// set up from them.
    func settings(_ others: any SettingFlags...) async throws -> Settings {
        var flags = self.flags
        for group in others { flags.merge(group.flags) { _, new in new } }
        let settings = try await Settings.load(flags: flags)
        try settings.bootstrapLogging()
        _ = Metrics.registry
        return settings
    }
}

extension Settings {
    /// Sets the process's log format and level (once; later calls change nothing).
    func bootstrapLogging() throws {
        let level = try string(.logLevel).map { name in
            guard let level = Logger.Level(rawValue: name.lowercased()) else {
                throw ValidationError(
                    "log.level \"\(name)\": use trace, debug, info, notice, warning, error or critical")
            }
            return level
        }
        let format = try string(.logFormat).map { name in
            guard let format = LogFormat(rawValue: name.lowercased()) else {
                throw ValidationError("log.format \"\(name)\": use text, logfmt or json")
            }
            return format
        }
        LogSetup.configure(level: level ?? .info, format: format ?? .automatic)
    }
}
