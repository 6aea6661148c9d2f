/// A stage that fans out over data: the array in its input (the output before it, or the array at
/// a path in it) runs `stages` once per element, each run a member job fed its element, and the
/// next stage is fed their outputs (each its last stage's) in element order. An empty array goes
/// straight on with `[]`; something else than an array fails the stage for good, naming the path
/// and what was found. A member that fails for good fails the map, as in a group.
///
/// Without a bound every element starts at once, the members written in one statement; with
/// `concurrency`, that many start at once and each run that completes starts the next element, in
/// element order (the others wait in a table of their own, not as jobs).
public struct MapStage: Sendable, Hashable {
    /// The highest bound on runs at once.
    public static let maxConcurrency = 100_000

    /// Where the array is: `output` (the stage's whole input) or a dotted path in it
    /// (`output.invoices`), as in flow conditions. Written `"{{output.invoices}}"` in JSON.
    public var path: String
    public var stages: [StageSpec]
    /// At most this many runs unfinished at once; nil: no bound.
    public var concurrency: Int?

    public init(over path: String = "output", stages: [StageSpec], concurrency: Int? = nil) {
        self.path = path
        self.stages = stages
        self.concurrency = concurrency
    }

    /// What the stage's input gives: its elements, or why it is not an array.
    public func elements(of input: JSONValue) -> Result<[JSONValue], StageError> {
        switch FlowCondition.value(at: path, in: input) {
        case .array(let items)?: .success(items)
        case nil: .failure(StageError("map over \(path): nothing is there, not an array"))
        case let value?: .failure(StageError("map over \(path): \(Self.kind(of: value)) found, not an array"))
        }
    }

    /// `"{{path}}"`, the JSON form.
    var template: String { "{{\(path)}}" }

    /// The path of a JSON form, `"{{output.invoices}}"` (or a bare `output.invoices`).
    public static func path(of template: String) -> String {
        guard template.hasPrefix("{{"), template.hasSuffix("}}"), template.count > 4 else { return template }
        return template.dropFirst(2).dropLast(2).trimmingSpaces
    }

    private static func kind(of value: JSONValue) -> String {
        switch value {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}
