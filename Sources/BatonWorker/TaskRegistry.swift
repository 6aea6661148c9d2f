import Baton
import BatonHTTPTask

/// The tasks a worker can run, by name. Comes with the built-in `noop`, `sleep` and `http`.
public struct TaskRegistry: Sendable {
    /// Runs one attempt: args, the input as JSON text, the context; returns the output as JSON text
    /// and what the task decided comes next (``Next``), if it did.
    package typealias Runner =
        @Sendable (_ args: JSONValue, _ input: String, _ context: StageContext) async throws -> (
            output: String, then: FlowRule.Action?
        )

    package private(set) var runners: [String: Runner] = [:]
    /// The checks of registered tasks' args that a job is held to before it is enqueued.
    private var argsChecks: [String: ChainDefinition.ArgsCheck] = [:]

    /// A registry with the built-in tasks (`noop`, `sleep`, and `http` configured by the process's
    /// environment), unless `builtins` is false.
    public init(builtins: Bool = true) {
        if builtins {
            register(NoopTask.name, NoopTask.run)
            register(SleepTask.name, SleepTask.run)
            register(HTTPTask.name) { args, input, context in
                do {
                    return try await HTTPTask.environment.get().run(args: args, input: input, context: context)
                } catch let error as OutboundPolicyError {
                    throw TaskFailure.permanent("the http task is not configured: \(error)")
                }
            }
            argsChecks[HTTPTask.name] = HTTPRequestArgs.check
        }
    }

    /// Registers the built-in `http` task with its own configuration (outbound policy, secrets)
    /// in place of the one the environment gives.
    public mutating func register(_ http: HTTPTask) {
        register(HTTPTask.name, http.run)
        argsChecks[HTTPTask.name] = HTTPRequestArgs.check
    }

    /// Registers a typed task under `T.name`. Args or input that do not decode as the task's
    /// types fail the stage for good: another attempt would not decode them either.
    public mutating func register<T: BatonTask>(_ type: T.Type) {
        register(T.name) { args, input, context in
            let task: T
            let value: T.Input
            do {
                task = try args.decode(as: T.self)
            } catch {
                throw TaskFailure.permanent("args do not decode as \(T.name): \(error)")
            }
            do {
                value = try JSONValue(parsing: input).decode(as: T.Input.self)
            } catch {
                throw TaskFailure.permanent("input does not decode as \(T.Input.self): \(error)")
            }
            let output = try await task.run(value, context: context)
            return (try JSONValue(encoding: output).jsonText, (output as? any FlowDecision)?.decision)
        }
    }

    /// Registers an untyped task working on JSON values.
    public mutating func register(
        name: String,
        _ run:
            @escaping @Sendable (_ args: JSONValue, _ input: JSONValue, _ context: StageContext) async throws ->
            JSONValue
    ) {
        register(name) { args, input, context in
            try await run(args, try JSONValue(parsing: input), context).jsonText
        }
    }

    /// Registers a task that returns its output as JSON text.
    package mutating func register(
        _ name: String,
        _ run: @escaping @Sendable (_ args: JSONValue, _ input: String, _ context: StageContext) async throws -> String
    ) {
        register(name, runner: { args, input, context in (try await run(args, input, context), nil) })
    }

    package mutating func register(_ name: String, runner: @escaping Runner) {
        runners[name] = runner
        argsChecks[name] = nil
    }

    /// Names of every registered task, sorted.
    public var names: [String] { runners.keys.sorted() }

    /// What the registered tasks check of their args before a job is enqueued (the `http` task:
    /// its request, ``HTTPRequestArgs``); other tasks' args pass. Give it to ``BatonClient`` so
    /// that a job the worker would refuse is refused at enqueue.
    public var argsCheck: ChainDefinition.ArgsCheck {
        let checks = argsChecks
        return { task, args, path throws(BatonError) in try checks[task]?(task, args, path) }
    }
}
