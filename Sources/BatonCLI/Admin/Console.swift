import Baton
import BatonAPI
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where an admin command writes: its width, whether it may colour, and the two streams.
struct Console: Sendable {
    /// Lines are cut to this many columns: `COLUMNS` when set, else the terminal's width (of
    /// standard output, else of standard error: `baton jobs list | less` fits the terminal
    /// `less` shows it on), else 80; with `--wide`, never.
    var width: Int
    /// Colours only on a terminal, and never with `--no-color`, `NO_COLOR` or `TERM=dumb`.
    var color: Bool
    /// Standard error is a terminal: live progress may redraw there.
    var interactiveErrors: Bool

    /// The width of `--wide`: lines are not cut.
    static let unlimited = 1_000_000

    init(noColor: Bool, wide: Bool = false) {
        let environment = ProcessInfo.processInfo.environment
        let terminal = isatty(STDOUT_FILENO) == 1
        let columns = environment["COLUMNS"].flatMap { Int($0) }.flatMap { $0 >= 20 ? $0 : nil }
        width =
            wide
            ? Self.unlimited
            : columns ?? Self.terminalWidth(STDOUT_FILENO) ?? Self.terminalWidth(STDERR_FILENO) ?? 80
        color =
            terminal && !noColor && environment["NO_COLOR"].map(\.isEmpty) ?? true && environment["TERM"] != "dumb"
        interactiveErrors = isatty(STDERR_FILENO) == 1
    }

    private static func terminalWidth(_ descriptor: Int32) -> Int? {
        var size = winsize()
        guard isatty(descriptor) == 1, ioctl(descriptor, UInt(TIOCGWINSZ), &size) == 0, size.ws_col >= 40 else {
            return nil
        }
        return Int(size.ws_col)
    }

    /// Writes `text` and a newline to standard output. When whoever read it has gone (`baton jobs
    /// list | head -1`), the command ends quietly with the status a shell gives a process that
    /// SIGPIPE ended (141), as `yes | head` does: `FileHandle.write(_:)` would crash on the closed pipe.
    func out(_ text: String) {
        do {
            try FileHandle.standardOutput.write(contentsOf: Data((text + "\n").utf8))
        } catch {
            exit(128 + SIGPIPE)
        }
    }

    /// Writes `text` and a newline to standard error (nothing if it is closed).
    func err(_ text: String) { try? FileHandle.standardError.write(contentsOf: Data((text + "\n").utf8)) }

    /// `value` as the API's JSON, on one line: what `--json` prints.
    func json(_ value: some Encodable) throws {
        out(try JSONValue(encoding: value).jsonText)
    }

    // MARK: colours

    enum Color: String {
        case red = "31", green = "32", yellow = "33", blue = "34", magenta = "35", cyan = "36", gray = "90"
        case bold = "1"
    }

    func paint(_ text: String, _ color: Color?) -> String {
        guard self.color, let color else { return text }
        return "\u{1B}[\(color.rawValue)m\(text)\u{1B}[0m"
    }

    /// The colour of a job's or a stage's state.
    static func color(ofState state: String) -> Color? {
        switch state {
        case "completed": .green
        case "running": .cyan
        case "retryable": .yellow
        case "waiting": .magenta
        case "discarded": .red
        case "cancelled", "pending", "scheduled": .gray
        default: nil
        }
    }

    func state(_ state: String) -> String { paint(state, Self.color(ofState: state)) }
}
