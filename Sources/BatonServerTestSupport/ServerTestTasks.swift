import Baton
import BatonWorker
import Foundation
import Synchronization

/// The built-in tasks and the test tasks below.
package let serverTestTasks: TaskRegistry = {
    var tasks = TaskRegistry()
    tasks.register(Add.self)
    tasks.register(Sum.self)
    tasks.register(FailFirst.self)
    tasks.register(Carry.self)
    // Hands on an even number; fails for good on anything else (a map's failures).
    tasks.register(name: "even-only") { _, input, _ in
        guard let n = try? input.decode(as: Int.self), n.isMultiple(of: 2) else {
            throw TaskFailure.permanent("not even: \(input.jsonText)")
        }
        return input
    }
    // What a stage sees: its input, args, the job's metadata and the first stage's output.
    tasks.register(name: "echo") { args, input, context in
        ["input": input, "args": args, "metadata": context.metadata, "first": context.output(at: 0) ?? nil]
    }
    // Reports the progress its args give (`fraction`, `message`, `checkpoint`; nothing when none),
    // then runs on for `hold_ms`, or until the test opens the gate its `gate` names, before
    // returning its input.
    tasks.register(name: "report") { args, input, context in
        let (fraction, message) = (args["fraction"]?.numberValue?.double, args["message"]?.stringValue)
        if let checkpoint = args["checkpoint"] {
            try context.progress(fraction, message, checkpoint: checkpoint)
        } else if fraction != nil || message != nil {
            context.progress(fraction, message)
        }
        if let gate = args["gate"]?.stringValue {
            try await TestGates.shared.wait(gate)
        } else {
            try await Task.sleep(for: .milliseconds(args["hold_ms"]?.numberValue?.integer(as: Int.self) ?? 0))
        }
        return input
    }
    // Logs `lines` lines (1 by default) of `text` through `context.logger` at info, then fails its
    // first attempt when `fail_first` is true.
    tasks.register(name: "chatty") { args, input, context in
        let logger = context.logger
        let lines = args["lines"]?.numberValue?.integer(as: Int.self) ?? 1
        let text = args["text"]?.stringValue ?? "line"
        for line in 1...max(1, lines) {
            logger.info("\(text) \(line) of attempt \(context.attempt)", metadata: ["n": "\(line)"])
        }
        if args["fail_first"] == true, context.attempt == 1 { throw StageError("first attempt fails after logging") }
        return input
    }
    return tasks
}()

/// A one-stage job of `chatty` whose first attempt logs a line and fails, and whose second, a
/// millisecond later, logs a line and completes: two attempts, each with its log.
package let serverTestChattyJob: JSONValue = [
    "stages": [["task": "chatty", "args": ["fail_first": true], "backoff": ["kind": "constant", "initial": "1ms"]]]
]

/// A chain whose path a `repeat` and a `goto` shape (run by `add`, its first stage on the `default`
/// queue by name): `count` runs three times (-3 → 0), then goes to `last` past `skipped`; output 10.
package let serverTestLoopedChain: JSONValue = [
    "input": -3,
    "stages": [
        [
            "task": "add", "name": "count", "args": ["n": 1], "repeat": ["while": "{{output}}", "max": 10],
            "queue": "default", "next": [["if": ["path": "output", "equals": 0], "goto": "last"]],
        ],
        ["task": "add", "name": "skipped", "args": ["n": 100]],
        ["task": "add", "name": "last", "args": ["n": 10]],
    ],
]

/// Named gates a test task waits at until the test opens them: a stage held running for exactly as
/// long as a test needs to look at it, however slow the machine.
package actor TestGates {
    package static let shared = TestGates()
    private var opened: Set<String> = []
    private var waiting: [String: [UUID: CheckedContinuation<Void, any Error>]] = [:]

    /// Returns once `gate` is open; throws `CancellationError` if the task is cancelled first.
    package func wait(_ gate: String) async throws {
        if opened.contains(gate) { return }
        let id = UUID()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                if Task.isCancelled {
                    continuation.resume(throwing: CancellationError())
                } else {
                    waiting[gate, default: [:]][id] = continuation
                }
            }
        } onCancel: {
            Task { await self.cancel(id, at: gate) }
        }
    }

    package func open(_ gate: String) {
        opened.insert(gate)
        for continuation in (waiting.removeValue(forKey: gate) ?? [:]).values { continuation.resume() }
    }

    private func cancel(_ id: UUID, at gate: String) {
        waiting[gate]?.removeValue(forKey: id)?.resume(throwing: CancellationError())
    }
}

/// Hands on numbers a typed task reads as Swift's exact types.
package struct Carry: BatonTask {
    package static let name = "carry"

    package struct Numbers: Codable, Sendable {
        package var id: Int64
        package var count: UInt64
        package var price: Decimal
        package var big: JSONValue
        package var rest: [String: JSONValue]

        package init(id: Int64, count: UInt64, price: Decimal, big: JSONValue, rest: [String: JSONValue]) {
            (self.id, self.count, self.price, self.big, self.rest) = (id, count, price, big, rest)
        }
    }

    package init() {}

    package func run(_ input: Numbers, context: StageContext) async throws -> Numbers { input }
}

package struct Add: BatonTask {
    package static let name = "add"
    package var n: Int
    package init(n: Int) { self.n = n }
    package func run(_ input: Int, context: StageContext) async throws -> Int { input + n }
}

package struct Sum: BatonTask {
    package static let name = "sum"
    package init() {}
    package func run(_ input: [Int], context: StageContext) async throws -> Int { input.reduce(0, +) }
}

/// Fails the first time it runs for a given `key`, then returns its input: for good (a job
/// discarded once that succeeds when retried), or, with `retryable`, as an attempt its stage's
/// policy retries.
package struct FailFirst: BatonTask {
    package static let name = "fail-first"
    package var key: String
    package var retryable: Bool?
    package static let seen = Mutex(Set<String>())
    package init(key: String, retryable: Bool? = nil) {
        self.key = key
        self.retryable = retryable
    }

    package func run(_ input: Int, context: StageContext) async throws -> Int {
        guard Self.seen.withLock({ $0.insert(key).inserted }) else { return input }
        if retryable == true { throw TaskFailure("first run of \(key) fails") }
        throw TaskFailure.permanent("first run of \(key) fails")
    }
}
