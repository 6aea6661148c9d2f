/// A stage that fans out over data: the array in its input (the output before it, or the array at
/// a path in it) runs `stages` once per element, each run a member job fed its element, and the
/// next stage is fed their outputs (each its last stage's) in element order. An empty array goes
/// straight on with `[]`; something else than an array fails the stage for good, naming the path
/// and what was found.
///
/// What a run that fails for good (discarded, or cancelled) does is the map's ``Failures``: by
/// default it fails the map, as a member fails a group; a map that goes on (`"failures":
/// "continue"`) runs every element and hands on `{"results": [...], "failures": [...]}` (see
/// ``MapResults``), unless `stop_after` runs fail first. Retrying a failed map starts again only
/// its runs that did not complete, each at the stage it stopped on.
///
/// Without a bound every element starts at once, the members written in one statement; with
/// `concurrency`, that many start at once and each run that completes starts the next element, in
/// element order (the others wait in a table of their own, not as jobs).
public struct MapStage: Sendable, Hashable {
    /// The highest bound on runs at once.
    public static let maxConcurrency = 100_000
    /// The most elements a map runs, unless it says fewer (`maxElements`): its elements travel to
    /// the database in one outcome, and its runs are written in one transaction.
    public static let elementLimit = 1_000_000

    /// Where the array is: `output` (the stage's whole input) or a dotted path in it
    /// (`output.invoices`), as in flow conditions. Written `"{{output.invoices}}"` in JSON.
    public var path: String
    public var stages: [StageSpec]
    /// At most this many runs unfinished at once; nil: no bound.
    public var concurrency: Int?
    public var failures: Failures
    /// More elements than this fail the stage for good (`"max_elements"`; nil: ``elementLimit``),
    /// or are refused at enqueue when the map is the first stage, over the job's input.
    public var maxElements: Int?

    /// What a run that fails for good does to its map.
    public enum Failures: Sendable, Hashable {
        /// Fails the map (`"failures": "all"`, the default: all must succeed). Runs still going
        /// are left to finish, ignored; a bounded map starts no more.
        case failTheMap
        /// The map goes on (`"failures": "continue"`) and hands on each run's result or failure;
        /// with `stopAfter`, it fails once that many runs have failed (`"stop_after"`).
        case `continue`(stopAfter: Int?)
    }

    public init(
        over path: String = "output", stages: [StageSpec], concurrency: Int? = nil, failures: Failures = .failTheMap,
        maxElements: Int? = nil
    ) {
        self.path = path
        self.stages = stages
        self.concurrency = concurrency
        self.failures = failures
        self.maxElements = maxElements
    }

    /// The output of a map that goes on past failures with no element: `{"results": [], "failures": []}`.
    public var emptyOutput: JSONValue {
        switch failures {
        case .failTheMap: []
        case .continue: ["results": [], "failures": []]
        }
    }

    /// What the stage's input gives: its elements, or why it is not an array.
    public func elements(of input: JSONValue) -> Result<[JSONValue], StageError> {
        switch FlowCondition.value(at: path, in: input) {
        case .array(let items)? where items.count > (maxElements ?? Self.elementLimit):
            .failure(
                StageError(
                    "map over \(path): \(items.count) elements, more than its limit of \(maxElements ?? Self.elementLimit)"
                ))
        case .array(let items)?: .success(items)
        case nil: .failure(StageError("map over \(path): nothing is there, not an array"))
        case let value?: .failure(StageError("map over \(path): \(Self.kind(of: value)) found, not an array"))
        }
    }

    /// Reads `"failures"` (`"all"` or `"continue"`) and `"stop_after"` of a stored or requested map:
    /// `stop_after` alone means `continue`; with `"all"` it is refused, as is any other word.
    public static func failures(_ word: String?, stopAfter: Int?, at path: String) throws(BatonError) -> Failures {
        switch (word, stopAfter) {
        case (nil, nil), ("all", nil): return .failTheMap
        case (nil, let stop?), ("continue", let stop?):
            guard (1...maxConcurrency).contains(stop) else {
                throw .invalidChain(path: "\(path).stop_after", reason: "must be within 1...\(maxConcurrency)")
            }
            return .continue(stopAfter: stop)
        case ("continue", nil): return .continue(stopAfter: nil)
        case ("all", _?):
            throw .invalidChain(
                path: "\(path).stop_after", reason: #"stops a map that goes on past failures: "failures": "continue""#)
        case (let word?, _):
            throw .invalidChain(path: "\(path).failures", reason: #"must be "all" or "continue", got "\#(word)""#)
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

/// What a map that goes on past failures (``MapStage/Failures/continue(stopAfter:)``) hands on:
/// each element's result in element order (`nil` for a run that failed), and its runs' failures.
public struct MapResults<Result: Codable & Sendable>: Codable, Sendable {
    public var results: [Result?]
    public var failures: [MapFailure]

    public init(results: [Result?], failures: [MapFailure]) {
        self.results = results
        self.failures = failures
    }
}

extension MapResults: Equatable where Result: Equatable {}

/// A run of a map that failed for good: its element's index, how it ended (`discarded` or
/// `cancelled`) and its last error.
public struct MapFailure: Codable, Sendable, Hashable {
    public var index: Int
    public var state: String
    public var error: String?

    public init(index: Int, state: String, error: String?) {
        self.index = index
        self.state = state
        self.error = error
    }
}
