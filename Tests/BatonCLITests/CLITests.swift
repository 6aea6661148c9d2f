import Baton
import BatonPostgres
import BatonTestSupport
import Foundation
import LocalPostgres
import Testing

/// The `baton` binary itself, run as a subprocess.
@Suite(.timeLimit(.minutes(3)))
struct CLITests {
    /// Runs `baton` with `arguments`; returns (exit status, standard output, standard error).
    func baton(_ arguments: [String]) async throws -> (Int32, String, String) {
        let child = try await ChildProcess(try ChildProcess.builtBinary("baton"), arguments)
        let status = try await child.waitForExit(timeout: .seconds(120))
        return (status, child.standardOutput, child.standardError)
    }

    /// Runs `baton-bench` with `arguments`.
    func bench(_ arguments: [String]) async throws -> (Int32, String, String) {
        let child = try await ChildProcess(try ChildProcess.builtBinary("baton-bench"), arguments)
        let status = try await child.waitForExit(timeout: .seconds(120))
        return (status, child.standardOutput, child.standardError)
    }

    /// The shipped binary runs what operators run; the engine's benchmark is a binary of its own.
    @Test func theShippedBinaryHasNoBenchmark() async throws {
        let (status, output, _) = try await baton(["--help"])
        #expect(status == 0)
        #expect(!output.contains("bench"), "\(output)")
    }

    @Test func migrateCreatesTheSchemaFromTheSQLBuiltIntoTheBinary() async throws {
        try await TestDatabase.with { db async throws in
            let url = db.url.replacingOccurrences(
                of: "schema=\(db.configuration.schema)", with: "schema=cli_\(db.configuration.schema)")
            let (status, output, errors) = try await baton(["migrate", "--database-url", url])
            #expect(status == 0)
            #expect(output.contains("applied 0019_schema.sql"))
            #expect(!errors.contains("hasn't been called yet"), "PostgresNIO's warning: \(errors)")
            let (again, repeated, _) = try await baton(["migrate", "--database-url", url])
            #expect(again == 0)
            #expect(repeated.contains("up to date"))
            try await db.pool.execute("DROP SCHEMA cli_\(unescaped: db.configuration.schema) CASCADE")
        }
    }

    @Test func anUnreachableDatabaseIsReportedAtOnceWithItsCause() async throws {
        let (status, _, errors) = try await baton([
            "worker", "--database-url", "postgres://nobody@127.0.0.1:1/none?sslmode=disable",
        ])
        #expect(status != 0)
        // One plain line: where, and why.
        #expect(
            errors.trimmingCharacters(in: .whitespacesAndNewlines)
                .wholeMatch(
                    of: /(baton|Error): cannot connect to PostgreSQL at 127\.0\.0\.1:1\/none: connection refused/)
                != nil, "\(errors)")
    }

    /// A connection string libpq would refuse is refused before anything starts, with the
    /// setting's name and libpq's words; usage, exit 2.
    @Test(arguments: [
        ("postgres://h1,h2/db?target_session_attrs=writable", #"invalid target_session_attrs value: "writable""#),
        ("host=a,b,c port=1,2 dbname=db", "could not match 2 port numbers to 3 hosts"),
        ("postgres://h1:x,h2/db", #"invalid port number: "x""#),
        ("postgres://h/db?connect_timout=3", #"invalid URI query parameter: "connect_timout""#),
    ])
    func aBadConnectionStringIsRefusedNamingTheSetting(url: String, message: String) async throws {
        let (status, _, errors) = try await baton(["migrate", "--database-url", url])
        #expect(status == 2)
        #expect(errors.contains("database.url: " + message), "\(errors)")
    }

    /// `baton migrate` pointed at a standby (or any server that only reads) says so in libpq's
    /// words, for every host it tried, and fails; pointed at both, it finds the primary.
    @Test func migrateSaysAStandbyOnlyReadsAndFindsThePrimaryInAList() async throws {
        try await withLocalPostgres(LocalPostgres.Options(fast: true)) { primary in
            try await withStandby(of: primary) { standby in
                let (status, _, errors) = try await baton([
                    "migrate", "--database-url",
                    "postgres://postgres@127.0.0.1:\(standby.port)/postgres?sslmode=disable",
                ])
                #expect(status == 1)
                #expect(errors.contains("session is read-only"), "\(errors)")
                #expect(!errors.contains("PSQLError"), "\(errors)")
                let (found, output, _) = try await baton([
                    "migrate", "--database-url",
                    "postgres://postgres@127.0.0.1:\(standby.port),127.0.0.1:\(primary.port)/postgres?sslmode=disable",
                ])
                #expect(found == 0)
                #expect(output.contains("applied 0019_schema.sql"))
            }
        }
    }

    @Test func aWorkerWithoutADatabaseSaysHowToGiveOne() async throws {
        let process = try await baton(["worker"])
        #expect(process.0 != 0)
        #expect(process.2.contains("--database-url") || process.2.contains("BATON_DATABASE_URL"))
    }

    /// `baton-bench ARGUMENTS --json` against `db`: its report, once it exited 0 without
    /// PostgresNIO's warning of a lease before the pool ran.
    func benchReport(_ db: TestDatabase, _ arguments: [String]) async throws -> JSONValue {
        let (status, output, errors) = try await bench(["--database-url", db.url] + arguments + ["--json"])
        #expect(status == 0, "\(errors)")
        #expect(!errors.contains("hasn't been called yet"), "PostgresNIO's warning: \(errors)")
        let line = try #require(output.split(separator: "\n").last)
        return try #require(try? JSONValue(parsing: String(line)), "not JSON: \(output)")
    }

    @Test func benchReportsItsFiguresAsJSONAndLosesNothing() async throws {
        try await TestDatabase.with { db async throws in
            let report = try await benchReport(
                db, ["--jobs", "300", "--chain", "3", "--lanes", "4", "--concurrency", "20", "--pickup-samples", "5"])
            #expect(report["lost"] == 0)
            #expect(report["jobs"] == 300)
            #expect(report["stages"] == 900)
            for key in ["enqueue_per_s", "process_per_s", "pickup_p50_ms", "pickup_p99_ms", "hop_p50_ms"] {
                #expect(report[key]?.numberValue != nil, "missing \(key)")
            }
            // The cluster's WAL, which other tests write to as well: at least each job's row, inserted
            // and updated once per stage (a row of this chain is some 400 bytes).
            let wal = try #require(report["wal"]?["bytes_per_job"]?.numberValue?.double)
            #expect(wal > 400)
            // The producer's and the worker's CPU; PostgreSQL's only when the bench runs its own.
            #expect(try #require(report["baton_cpu_ms_per_job"]?.numberValue?.double) > 0)
            #expect(report["postgres_cpu_ms_per_job"] == .null)
        }
    }

    /// Jobs offered at a steady rate, the xmin horizon held from the second window on: every
    /// window is reported, the held ones said so, and every job offered finishes (issue 46's
    /// harness; it holds the shared test cluster's horizon for three seconds only).
    @Test func benchOffersAtARateWithTheHorizonHeldAndLosesNothing() async throws {
        try await TestDatabase.with { db async throws in
            let report = try await benchReport(
                db, ["--offered-rate", "100", "--duration", "6s", "--window", "3s", "--hold-after", "3s"])
            #expect(report["lost"] == 0)
            let offered = try #require(report["offered"]?.numberValue?.integer(as: Int.self))
            #expect((500...600).contains(offered), "offered \(offered)")
            #expect(report["finished"] == report["offered"])
            guard case .array(let windows)? = report["windows"] else {
                Issue.record("no windows in \(report)")
                return
            }
            #expect(windows.map { $0["horizon_held"] } == [false, true])
            for window in windows {
                for key in ["offered", "completed", "backlog", "dead_rows", "table_bytes", "pickup_p99_ms"] {
                    #expect(window[key]?.numberValue != nil, "missing \(key)")
                }
            }
        }
    }

    /// Through the delaying proxy every job still completes, and the round trips are counted.
    @Test func benchThroughADelayingProxyCountsRoundTrips() async throws {
        try await TestDatabase.with { db async throws in
            let report = try await benchReport(
                db,
                [
                    "--jobs", "200", "--chain", "2", "--concurrency", "20", "--pickup-samples", "5", "--network-delay",
                    "5",
                ])
            #expect(report["lost"] == 0)
            #expect(report["network_delay_ms"] == 5)
            let perJob = try #require(report["round_trips_per_job"]?.numberValue?.double)
            let perPickup = try #require(report["round_trips_per_pickup"]?.numberValue?.double)
            #expect(perJob > 0)
            // An idle pickup: its enqueue and the claim at least, each a round trip.
            #expect(perPickup >= 2)
            #expect(report["pickup_p50_ms"]?.numberValue != nil)
            // From the enqueue's call to the stage's start: the enqueue's way to the server, the
            // wake-up's way back, and the claim's round trip, 5 ms each way: 20 ms at the least.
            #expect(try #require(report["enqueue_call_to_start_p50_ms"]?.numberValue?.double) >= 20)
        }
    }

    @Test func benchRefusesANegativeNetworkDelay() async throws {
        let (status, _, errors) = try await bench(["--network-delay=-1"])
        #expect(status == 2)
        #expect(errors.contains("--network-delay 0 to 1000 (ms)"), "\(errors)")
    }
}
