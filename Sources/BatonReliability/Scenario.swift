import Baton
import Foundation
import Logging
import Synchronization

/// The scenarios, modelled on what independent PostgreSQL job-queue benchmarks run.
enum Scenario: String, CaseIterable, Sendable {
    case workerCrash = "worker-crash"
    case databaseRestart = "database-restart"
    case connectionsKilled = "connections-killed"
    case poolPressure = "pool-pressure"
    case vacuumHeld = "vacuum-held"
    case overload
    case laneSoak = "lane-soak"
    case failover
    case failoverAsync = "failover-async"

    var summary: String {
        switch self {
        case .workerCrash: "2 workers under steady mixed load; one SIGKILLed and restarted at intervals"
        case .databaseRestart: "PostgreSQL restarted mid-run (fast, then immediate); nothing else restarted"
        case .connectionsKilled: "pg_terminate_backend on every Baton connection, four times a second"
        case .poolPressure: "300 idle connections held by another client"
        case .vacuumHeld: "a transaction holding an xid under steady load: throughput before, during, after"
        case .overload: "producers at 1.5x what the workers can do, then normal: the backlog drains"
        case .laneSoak: "Workers running ordered stages over many lanes with random failures: no overlap, FIFO"
        case .failover: "pg_auto_failover, synchronous standby: the primary's host lost, the standby promoted"
        case .failoverAsync: "pg_auto_failover, asynchronous standby: the primary lost with what it had not sent"
        }
    }

    func run(quick: Bool, logger: Logger) async throws -> ScenarioResult {
        switch self {
        case .workerCrash: try await Self.workerCrash(quick: quick, logger: logger)
        case .databaseRestart: try await Self.databaseRestart(quick: quick, logger: logger)
        case .connectionsKilled: try await Self.connectionsKilled(quick: quick, logger: logger)
        case .poolPressure: try await Self.poolPressure(quick: quick, logger: logger)
        case .vacuumHeld: try await Self.vacuumHeld(quick: quick, logger: logger)
        case .overload: try await Self.overload(quick: quick, logger: logger)
        case .laneSoak: try await Self.laneSoak(quick: quick, logger: logger)
        case .failover: try await Self.failover(synchronous: true, quick: quick, logger: logger)
        case .failoverAsync: try await Self.failover(synchronous: false, quick: quick, logger: logger)
        }
    }
}

/// What a scenario measured, and what it found that must not happen.
struct ScenarioResult: Sendable {
    var scenario: Scenario
    var tally: Tally
    /// The scenario's own figures, in the order printed.
    var measured: [(String, String)] = []
    var extraViolations: [String] = []

    var violations: [String] { tally.violations + extraViolations }

    func text(seconds: Double) -> String {
        let fields = tally.fields + measured
        let width = fields.map(\.0.count).max() ?? 0
        var lines = fields.map { "  " + $0.0.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + $0.1 }
        lines.append(
            "  " + "took".padding(toLength: width, withPad: " ", startingAt: 0) + "  " + format(seconds) + " s")
        lines.append(violations.isEmpty ? "  ok" : violations.map { "  VIOLATION: \($0)" }.joined(separator: "\n"))
        if let diagnostics = tally.diagnostics { lines.append(diagnostics) }
        return lines.joined(separator: "\n")
    }

    func json(seconds: Double, quick: Bool, settings: [String: String]) -> String {
        var object: [String: JSONValue] = [
            "scenario": .string(scenario.rawValue), "quick": .bool(quick), "seconds": .number(Int(seconds.rounded())),
            "server_settings": .object(settings.mapValues(JSONValue.string)),
            "violations": .array(violations.map(JSONValue.string)),
        ]
        for (key, value) in tally.fields + measured {
            object[key] = JSONNumber(value).map(JSONValue.number) ?? .string(value)
        }
        return JSONValue.object(object).jsonText
    }
}

func format(_ value: Double, _ digits: Int = 1) -> String { String(format: "%.\(digits)f", value) }

/// Median and maximum, in seconds, of what was measured.
func spread(_ values: [Double]) -> String {
    guard !values.isEmpty else { return "n/a" }
    let sorted = values.sorted()
    return "median \(format(sorted[sorted.count / 2])) s, max \(format(sorted.last!)) s (\(values.count))"
}

/// A value the tasks of a scenario share (a `Mutex` in a class, so closures can capture it).
final class Shared<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>

    init(_ value: Value) { mutex = Mutex(value) }

    func withLock<Result: Sendable>(_ body: (inout Value) -> Result) -> Result {
        mutex.withLock { body(&$0) }
    }

    var value: Value { mutex.withLock { $0 } }
}
