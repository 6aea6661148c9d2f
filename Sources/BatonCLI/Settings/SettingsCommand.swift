import ArgumentParser
import Configuration

/// `baton settings`: every setting's value and where it came from, as `serve`, `worker`, `dev`
/// and `migrate` would see it with the same flags, environment and config file.
struct SettingsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "settings",
        abstract: "Show every setting's value and where it comes from (flag, environment, config file, default).",
        discussion: "Secrets (the database URL, API tokens) show as (set). --reference prints the documented table.")

    @Flag(help: "Print the table of every setting (Markdown) instead.")
    var reference = false

    @OptionGroup var runtime: RuntimeOptions
    @OptionGroup var database: DatabaseOptions
    @OptionGroup var worker: WorkerOptions
    @OptionGroup var metrics: WorkerMetricsOptions
    @OptionGroup var server: ServerOptions

    func run() async throws {
        if reference {
            say(Setting.referenceTable)
            return
        }
        var flags: [Setting: ConfigContent] = [:]
        let groups: [any SettingFlags] = [runtime, database, worker, metrics, server]
        for group in groups { flags.merge(group.flags) { _, new in new } }
        let settings = try await Settings.load(flags: flags)
        let rows = try settings.described()
        let keyWidth = rows.map(\.setting.key.count).max() ?? 0
        let valueWidth = min(40, rows.map(\.value.count).max() ?? 0)
        for row in rows {
            say(
                row.setting.key.padding(toLength: keyWidth, withPad: " ", startingAt: 0) + "  "
                    + row.value.padding(toLength: max(valueWidth, row.value.count), withPad: " ", startingAt: 0)
                    + "  " + row.source)
        }
        // The same checks the commands make before they start.
        _ = try settings.worker()
        _ = try settings.workerMetrics()
        _ = try settings.apiTokens()
        _ = try settings.builtinTasks()
        if try settings.string(.databaseURL) != nil { _ = try settings.database() }
    }
}
