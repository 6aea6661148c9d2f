/// A test over a stage's output, for the stage's `next` rules and `repeat`: data, never code.
///
/// A path is dotted, as in the `http` task's templates, and starts at `output` (the stage's
/// output) or `input` (the same value: it is the next run's input when the stage repeats), e.g.
/// `output.body.next_cursor` or `output.items.0.id` (names without spaces, control characters or
/// braces). A path that names nothing is absent.
///
/// In JSON a condition is `"{{path}}"` (``truthy(_:)``), `{"path": P, "equals": V}` or
/// `{"path": P, "present": true|false}`.
public enum FlowCondition: Sendable, Hashable {
    /// The value at the path is there and not `null`, `false`, `0`, `""`, `[]` or `{}`.
    case truthy(String)
    /// The value at the path equals this one (numbers by value: `1` equals `1.0`).
    case equals(String, JSONValue)
    /// The value at the path is there and not `null` (`true`), or is not (`false`).
    case present(String, Bool)

    public var path: String {
        switch self {
        case .truthy(let path), .equals(let path, _), .present(let path, _): path
        }
    }

    /// Whether the condition holds for `output`.
    public func holds(for output: JSONValue) -> Bool {
        let value = Self.value(at: path, in: output)
        switch self {
        case .truthy:
            return value?.isTruthy ?? false
        case .equals(_, let expected):
            return value == expected
        case .present(_, let present):
            let there = if let value, value != .null { true } else { false }
            return there == present
        }
    }

    /// The value at a dotted `path` (its first name, `output` or `input`, is `output` itself), or
    /// nil if it names nothing.
    static func value(at path: String, in output: JSONValue) -> JSONValue? {
        var value = output
        for segment in path.split(separator: ".").dropFirst() {
            switch value {
            case .object(let fields):
                guard let field = fields[String(segment)] else { return nil }
                value = field
            case .array(let items):
                guard let index = Int(segment), items.indices.contains(index) else { return nil }
                value = items[index]
            default:
                return nil
            }
        }
        return value
    }

    /// Paths nest no deeper than this (as template tags).
    public static let maxPathDepth = 32

    /// Checks the path's form; `where` is the JSON path of the field, for the error.
    func check(at field: String) throws(BatonError) {
        try Self.check(path, at: field, of: "a condition")
    }

    /// Checks a dotted path's form (`output.body.next_cursor`); `what` has it, for the error.
    static func check(_ path: String, at field: String, of what: String) throws(BatonError) {
        let segments = path.split(separator: ".", omittingEmptySubsequences: false)
        guard let root = segments.first, root == "output" || root == "input" else {
            throw .invalidChain(
                path: field, reason: "\(what)'s path starts at output or input (e.g. output.body.next_cursor)")
        }
        guard segments.count <= Self.maxPathDepth else {
            throw .invalidChain(path: field, reason: "\(what)'s path nests at most \(Self.maxPathDepth) deep")
        }
        guard
            segments.allSatisfy({
                !$0.isEmpty && !$0.unicodeScalars.contains { $0.value <= 0x20 || $0 == "{" || $0 == "}" }
            })
        else {
            throw .invalidChain(
                path: field, reason: "\"\(path)\" is not a path: names joined by dots, without spaces or braces")
        }
    }

    // MARK: JSON

    /// The stored and wire form.
    public var json: JSONValue {
        switch self {
        case .truthy(let path): .string("{{\(path)}}")
        case .equals(let path, let value): ["path": .string(path), "equals": value]
        case .present(let path, let present): ["path": .string(path), "present": .bool(present)]
        }
    }

    /// Reads the JSON form; `field` is its JSON path, for the error.
    public init(json: JSONValue, at field: String) throws(BatonError) {
        switch json {
        case .string(let text):
            guard text.hasPrefix("{{"), text.hasSuffix("}}"), text.count > 4 else {
                throw .invalidChain(
                    path: field,
                    reason: "a condition is \"{{path}}\", {\"path\", \"equals\"} or {\"path\", \"present\"}")
            }
            let path = text.dropFirst(2).dropLast(2).trimmingSpaces
            self = .truthy(path)
        case .object(let fields):
            guard case .string(let path)? = fields["path"] else {
                throw .invalidChain(path: "\(field).path", reason: "a condition needs a path")
            }
            if let unknown = fields.keys.sorted().first(where: { !["path", "equals", "present"].contains($0) }) {
                throw .invalidChain(path: "\(field).\(unknown)", reason: "a condition has path, equals or present")
            }
            switch (fields["equals"], fields["present"]) {
            case (let value?, nil): self = .equals(path, value)
            case (nil, .bool(let present)?): self = .present(path, present)
            case (nil, _?): throw .invalidChain(path: "\(field).present", reason: "present is true or false")
            case (nil, nil), (_?, _?):
                throw .invalidChain(path: field, reason: "a condition gives one of equals or present")
            }
        default:
            throw .invalidChain(
                path: field, reason: "a condition is \"{{path}}\", {\"path\", \"equals\"} or {\"path\", \"present\"}")
        }
        try check(at: field)
    }
}

/// What a task stage does once it has succeeded (after any `repeat` has ended), when `if` holds:
/// go on at a later stage, or finish the chain with this output. The rules of a stage are tried
/// in order; when none holds the next stage follows, as without rules.
public struct FlowRule: Sendable, Hashable {
    public enum Action: Sendable, Hashable {
        /// Go on at the later stage of this name, fed this stage's output; the stages between are skipped.
        case goto(String)
        /// Complete the job with this stage's output; the stages after it are skipped.
        case finish
    }

    public var condition: FlowCondition
    public var action: Action

    public init(if condition: FlowCondition, _ action: Action) {
        self.condition = condition
        self.action = action
    }

    public var json: JSONValue {
        switch action {
        case .goto(let name): ["if": condition.json, "goto": .string(name)]
        case .finish: ["if": condition.json, "finish": true]
        }
    }

    public init(json: JSONValue, at field: String) throws(BatonError) {
        guard case .object(let fields) = json else {
            throw .invalidChain(
                path: field, reason: "a rule is {\"if\": condition, \"goto\": stage} or {\"if\", \"finish\": true}")
        }
        if let unknown = fields.keys.sorted().first(where: { !["if", "goto", "finish"].contains($0) }) {
            throw .invalidChain(path: "\(field).\(unknown)", reason: "a rule has if, and goto or finish")
        }
        guard let condition = fields["if"] else { throw .invalidChain(path: "\(field).if", reason: "a rule needs if") }
        self.condition = try FlowCondition(json: condition, at: "\(field).if")
        switch (fields["goto"], fields["finish"]) {
        case (.string(let name)?, nil): action = .goto(name)
        case (nil, .bool(true)?): action = .finish
        case (_?, nil): throw .invalidChain(path: "\(field).goto", reason: "goto names a later stage")
        case (nil, _?): throw .invalidChain(path: "\(field).finish", reason: "finish is true")
        case (nil, nil), (_?, _?): throw .invalidChain(path: field, reason: "a rule gives one of goto or finish")
        }
    }
}

/// Runs a task stage again, fed its own output, while `condition` holds over that output (a
/// paginated API walked while the answer names a next page; a remote job polled until it is
/// done). Each run has its own attempts and idempotency key. Reaching `max` runs with the
/// condition still holding fails the stage for good: an endless loop is a bug, not a workload.
public struct RepeatRule: Sendable, Hashable {
    /// `max` may be at most this.
    public static let maxRuns = 10_000

    public var condition: FlowCondition
    /// Runs in all, the first included (1...10,000).
    public var max: Int

    public init(while condition: FlowCondition, max: Int) {
        self.condition = condition
        self.max = max
    }

    public var json: JSONValue { ["while": condition.json, "max": .number(JSONNumber(max))] }

    public init(json: JSONValue, at field: String) throws(BatonError) {
        guard case .object(let fields) = json else {
            throw .invalidChain(path: field, reason: "repeat is {\"while\": condition, \"max\": runs}")
        }
        if let unknown = fields.keys.sorted().first(where: { !["while", "max"].contains($0) }) {
            throw .invalidChain(path: "\(field).\(unknown)", reason: "repeat has while and max")
        }
        guard let condition = fields["while"] else {
            throw .invalidChain(path: "\(field).while", reason: "repeat needs while")
        }
        guard case .number(let number)? = fields["max"], let max = number.integer(as: Int.self),
            (1...Self.maxRuns).contains(max)
        else {
            throw .invalidChain(
                path: "\(field).max", reason: "repeat needs max, a whole number of runs within 1...10000")
        }
        self.condition = try FlowCondition(json: condition, at: "\(field).while")
        self.max = max
    }
}

extension JSONValue {
    /// There and not `null`, `false`, `0`, `""`, `[]` or `{}`.
    public var isTruthy: Bool {
        switch self {
        case .null: false
        case .bool(let value): value
        case .number(let number): number != 0
        case .string(let text): !text.isEmpty
        case .array(let items): !items.isEmpty
        case .object(let fields): !fields.isEmpty
        }
    }
}

extension Substring {
    var trimmingSpaces: String {
        String(drop(while: { $0 == " " }).reversed().drop(while: { $0 == " " }).reversed())
    }
}

/// A task's output with what it decides comes next, for a task whose own result says where the
/// chain goes (`BatonTask.Output == Next<Value>`; the chain goes on with `Value`):
///
/// ```swift
/// struct Lookup: BatonTask {
///     func run(_ id: CustomerID, context: StageContext) async throws -> Next<Customer> {
///         guard let customer = try await crm.find(id) else { return .goto("create", Customer(id: id)) }
///         return customer.isCurrent ? .finish(customer) : .proceed(customer)
///     }
/// }
/// ```
///
/// It is stored as its value alone. A decision takes precedence over the stage's declared
/// `repeat` and `next` rules, which apply after `.proceed`. A `goto` names a later stage, whose
/// input must accept `Value`; a name that is not one fails the stage for good.
public enum Next<Value: Codable & Sendable>: Codable, Sendable {
    /// Go on as declared: the next stage, or the stage's own rules.
    case proceed(Value)
    /// Complete the job with this output; the stages after this one are skipped.
    case finish(Value)
    /// Go on at the later stage of this name, fed this output.
    case goto(String, Value)

    public var value: Value {
        switch self {
        case .proceed(let value), .finish(let value), .goto(_, let value): value
        }
    }

    public init(from decoder: any Decoder) throws {
        self = .proceed(try Value(from: decoder))
    }

    public func encode(to encoder: any Encoder) throws {
        try value.encode(to: encoder)
    }
}

/// What a task's ``Next`` decided, read by the worker without knowing its `Value`.
package protocol FlowDecision {
    var decision: FlowRule.Action? { get }
}

extension Next: FlowDecision {
    package var decision: FlowRule.Action? {
        switch self {
        case .proceed: nil
        case .finish: .finish
        case .goto(let name, _): .goto(name)
        }
    }
}
