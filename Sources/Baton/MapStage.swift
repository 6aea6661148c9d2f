/// A stage that fans out over data: the array in its input (the output before it, or the array at
/// a path in it) runs `stages` once per element, each run a member job fed its element, and the
/// next stage is fed their outputs (each its last stage's) in element order. An empty array goes
/// straight on with `[]`; something else than an array fails the stage for good, naming the path
/// and what was found. A member that fails for good fails the map, as in a group.
///
/// Every element starts at once (no bound on how many are in flight yet), and the members are
/// written in one statement: the map's cost is one insert per element, not a round trip.
public struct MapStage: Sendable, Hashable {
    /// Where the array is: `output` (the stage's whole input) or a dotted path in it
    /// (`output.invoices`), as in flow conditions. Written `"{{output.invoices}}"` in JSON.
    public var path: String
    public var stages: [StageSpec]

    public init(over path: String = "output", stages: [StageSpec]) {
        self.path = path
        self.stages = stages
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
