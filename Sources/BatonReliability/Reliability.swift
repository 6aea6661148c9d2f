import ArgumentParser
import Baton
import BatonPostgres
import BatonWorker
import Foundation
import Logging
import PostgresNIO
import ServiceLifecycle

/// The reliability suite: fault scenarios against real processes, each printing what it measured.
@main
struct Reliability: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "BatonReliability",
        abstract: "Run Baton through faults, load and soak, and check that nothing is lost.",
        subcommands: [RunScenarios.self, ScenarioWorker.self], defaultSubcommand: RunScenarios.self)
}

struct RunScenarios: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run scenarios (all by default); exit 1 if any lost a job or broke a lane.",
        discussion: "Scenarios: \(Scenario.allCases.map(\.rawValue).joined(separator: ", ")).")

    @Argument(help: "Scenarios to run, by name.")
    var scenarios: [Scenario] = Scenario.allCases

    @Flag(help: "Shorter runs and smaller loads (what CI runs).")
    var quick = false

    @Option(help: "Append each result as a JSON line to this file.")
    var report: String?

    @Option(
        name: .customLong("setting"),
        help: "A PostgreSQL server setting for every scenario, as NAME=VALUE (repeatable).")
    var settings: [String] = []

    func run() async throws {
        var logger = Logger(label: "baton.reliability")
        logger.logLevel =
            ProcessInfo.processInfo.environment["BATON_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .warning
        var serverSettings: [String: String] = [:]
        for setting in settings {
            let parts = setting.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, !parts[0].isEmpty else {
                throw ValidationError("--setting \(setting): expected NAME=VALUE")
            }
            serverSettings[parts[0]] = parts[1]
        }
        try await Rig.$settings.withValue(serverSettings) { try await runAll(logger: logger) }
    }

    private func runAll(logger: Logger) async throws {
        var failed = false
        for scenario in scenarios {
            let started = ContinuousClock.now
            say("== \(scenario.rawValue)\(quick ? " (quick)" : ""): \(scenario.summary)")
            let result = try await scenario.run(quick: quick, logger: logger)
            var settingsLine = Rig.settings.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
            if settingsLine.isEmpty { settingsLine = ["defaults"] }
            say("  server settings: " + settingsLine.joined(separator: " "))
            let seconds = (ContinuousClock.now - started).seconds
            say(result.text(seconds: seconds))
            if let report {
                let line = result.json(seconds: seconds, quick: quick, settings: Rig.settings) + "\n"
                if let handle = FileHandle(forWritingAtPath: report) {
                    handle.seekToEndOfFile()
                    handle.write(Data(line.utf8))
                    try handle.close()
                } else {
                    try Data(line.utf8).write(to: URL(fileURLWithPath: report))
                }
            }
            failed = failed || !result.violations.isEmpty
        }
        if failed { throw ExitCode(1) }
    }
}

extension Scenario: ExpressibleByArgument {}

/// Writes a line to standard output at once (unbuffered), so that a result is seen as soon as it
/// is known, also through a pipe or in a file.
private func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// A worker process for the scenarios: the built-in tasks and `record`, which sleeps, fails a
/// share of its runs on purpose, and writes every run (job, stage, attempt, lane, worker, start,
/// end, failed) to `reliability_runs` before it returns.
struct ScenarioWorker: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "worker", abstract: "A worker serving `record` (started by the scenarios).")

    @Option(name: .customLong("database-url")) var url: String
    @Option var concurrency = 10
    @Option var lease: Duration = .seconds(5)
    @Option var id: String

    func run() async throws {
        var setup = Logger(label: "baton.reliability.worker")
        setup.logLevel =
            ProcessInfo.processInfo.environment["BATON_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .warning
        let logger = setup
        var database = try DatabaseConfiguration(url: url)
        database.maximumConnections = 10
        let postgres = DatabasePool(configuration: database, logger: logger)
        let schema = database.schema
        let worker = id
        var tasks = TaskRegistry()
        tasks.register(name: "record") { args, input, context in
            let started = Date()
            func int(_ key: String) -> Int? { args[key]?.numberValue?.integer() }
            let low = int("min_ms") ?? 0
            try await Task.sleep(for: .milliseconds(Int.random(in: low...max(low, int("max_ms") ?? low))))
            let failed = Int.random(in: 0..<100) < int("fail_percent") ?? 0
            try await postgres.execute(
                """
                INSERT INTO \(unescaped: schema).reliability_runs
                    (job, stage, attempt, lane, worker, started_at, ended_at, failed)
                VALUES (\(context.jobID), \(context.stageIndex), \(context.attempt), \(context.lane), \(worker),
                        \(started), \(Date()), \(failed))
                """, logger: logger)
            if failed { throw ReliabilityError("failed on purpose") }
            return input
        }
        let service = Worker(
            pool: postgres, tasks: tasks,
            configuration: WorkerConfiguration(
                queues: ["default": concurrency], lease: lease, drainGrace: .seconds(10), id: id),
            logger: logger)
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: [
                    .init(service: postgres),
                    .init(service: service, successTerminationBehavior: .gracefullyShutdownGroup),
                ],
                gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
    }
}

extension Duration: @retroactive ExpressibleByArgument {
    public init?(argument: String) {
        guard let duration = DurationFormat.parse(argument) else { return nil }
        self = duration
    }
}
