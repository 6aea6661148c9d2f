import Foundation
import Subprocess
import SystemPackage

/// PostgreSQL's programs (initdb, pg_ctl, pg_config, pgbouncer), run with swift-subprocess. It
/// starts a child with no signal blocked and the usual ones at their default action (the spawning
/// thread is often one of NIO's, whose blocked signals would otherwise be inherited: a PgBouncer
/// started so never saw SIGTERM), keeps none of this process's descriptors open in it (a server
/// outliving the call would hold this process's sockets open, so peers would never see them
/// closed), and waits for the child's own exit, by its pidfd.
extension LocalPostgres {
    /// Runs a PostgreSQL program (as `user` if given) and throws with its output if it fails.
    static func run(
        _ executable: URL, _ arguments: [String], as user: String?, what: String, log: URL? = nil
    ) async throws {
        var command = executable.path
        var commandArguments = arguments
        if let user {
            if let runuser = ["/usr/sbin/runuser", "/sbin/runuser", "/usr/bin/runuser"].first(where: {
                FileManager.default.isExecutableFile(atPath: $0)
            }) {
                command = runuser
                commandArguments = ["-u", user, "--", executable.path] + arguments
            } else {
                command = "/bin/su"
                let quoted = ([executable.path] + arguments).map {
                    "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'"
                }
                commandArguments = ["-s", "/bin/sh", user, "-c", quoted.joined(separator: " ")]
            }
        }
        // Output goes to a file, not a pipe: the server that pg_ctl starts would inherit the pipe
        // and keep it open, and reading it to the end would never return.
        let outputFile = FileManager.default.temporaryDirectory.appending(path: "baton-pg-\(UUID().uuidString).out")
        defer { try? FileManager.default.removeItem(at: outputFile) }
        let status = try await runWritingOutput(command, commandArguments, to: outputFile, what: what)
        let output = (try? String(contentsOf: outputFile, encoding: .utf8)) ?? ""
        guard status == 0 else {
            var message = "\(what) failed (exit \(status)): \(output.trimmingCharacters(in: .whitespacesAndNewlines))"
            if let log, let text = try? String(contentsOf: log, encoding: .utf8) {
                message += "\nserver log:\n" + text.split(separator: "\n").suffix(15).joined(separator: "\n")
            }
            throw LocalPostgresError(message)
        }
    }

    /// What `command` prints.
    static func output(of command: String, _ arguments: [String]) async throws -> String {
        let file = FileManager.default.temporaryDirectory.appending(path: "baton-output-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        guard try await runWritingOutput(command, arguments, to: file, what: command) == 0 else {
            throw LocalPostgresError("\(command) failed")
        }
        return try String(contentsOf: file, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Runs `command` (found on the PATH unless a path) from `/`, which the server's user can
    /// always enter (unlike, say, /root), its standard output and error in `file`; returns its
    /// exit status (128 + the signal if killed).
    private static func runWritingOutput(
        _ command: String, _ arguments: [String], to file: URL, what: String
    ) async throws -> Int32 {
        let output = try FileDescriptor.open(
            FilePath(file.path), .writeOnly, options: [.create, .truncate],
            permissions: [.ownerReadWrite, .groupRead, .otherRead])
        do {
            let result = try await Subprocess.run(
                command.hasPrefix("/") ? .path(FilePath(command)) : .name(command), arguments: Arguments(arguments),
                workingDirectory: "/", input: .none, output: .fileDescriptor(output, closeAfterSpawningProcess: true),
                error: .combinedWithOutput)
            return result.terminationStatus.exitCode
        } catch {
            throw LocalPostgresError("\(what): cannot run \(command): \(error)")
        }
    }
}

extension TerminationStatus {
    /// The shell's way: the exit code, or 128 + the signal that ended the process.
    package var exitCode: Int32 {
        switch self {
        case .exited(let code): code
        case .signaled(let signal): 128 + signal
        }
    }
}
