import Baton

/// Text with `{{path}}` tags, filled from a JSON scope: the `http` task's URL, headers, query
/// values and bodies.
///
/// A tag names a value by a dotted path: `{{input.body.upload_url}}`, `{{stages.allocate.output.body.id}}`,
/// `{{job.id}}`, `{{secrets.API_TOKEN}}`; an array element by its index (`{{input.items.0}}`).
/// Nothing is escaped (a URL's `&` stays `&`). A string is inserted as it is, a number or boolean
/// as its JSON text, `null` as nothing, an array or object as compact JSON. A path that names no
/// value is an error, not an empty string: a request with a hole in it is not sent. This is the
/// variable subset of mustache (`{{{x}}}` is accepted too); sections, partials and comments are
/// refused.
public struct Template: Sendable, Hashable {
    public enum Part: Sendable, Hashable {
        case text(String)
        case tag([String])
    }

    public let parts: [Part]

    /// Tags nest no deeper than this.
    public static let maxPathDepth = 32

    public init(parsing text: String) throws(TemplateError) {
        var parts: [Part] = []
        var rest = Substring(text)
        while let open = rest.range(of: "{{") {
            if open.lowerBound > rest.startIndex { parts.append(.text(String(rest[..<open.lowerBound]))) }
            var afterOpen = rest[open.upperBound...]
            // Mustache's unescaped form `{{{x}}}` means the same here: nothing is ever escaped.
            let triple = afterOpen.first == "{"
            if triple { afterOpen = afterOpen.dropFirst() }
            guard let close = afterOpen.range(of: triple ? "}}}" : "}}") else {
                throw TemplateError("\"{{\" without a closing \"\(triple ? "}}}" : "}}")\"")
            }
            parts.append(.tag(try Self.path(afterOpen[..<close.lowerBound])))
            rest = afterOpen[close.upperBound...]
        }
        if !rest.isEmpty { parts.append(.text(String(rest))) }
        self.parts = parts
    }

    private static func path(_ tag: Substring) throws(TemplateError) -> [String] {
        let trimmed = tag.drop(while: { $0 == " " }).reversed().drop(while: { $0 == " " }).reversed()
        let name = String(trimmed)
        guard let first = name.first else { throw TemplateError("an empty tag {{}}") }
        guard first.isLetter || first.isNumber || first == "_" else {
            throw TemplateError(
                "{{\(name)}} is not a value: only {{path.to.value}} tags are supported (no sections, partials or comments)"
            )
        }
        let segments = name.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard segments.count <= maxPathDepth else { throw TemplateError("{{\(name)}} is nested too deep") }
        for segment in segments {
            guard !segment.isEmpty, segment.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" })
            else {
                throw TemplateError(
                    "{{\(name)}} is not a path: use names of letters, digits, _ and - joined by dots")
            }
        }
        return segments
    }

    /// The path when the whole template is a single tag (`"{{input.count}}"`): in a JSON body such a
    /// string is replaced by the value itself, keeping its JSON type.
    public var soleTag: [String]? {
        if parts.count == 1, case .tag(let path) = parts[0] { return path }
        return nil
    }

    /// Every tag's path.
    public var tags: [[String]] {
        parts.compactMap { if case .tag(let path) = $0 { path } else { nil } }
    }

    public func render(in scope: JSONValue) throws(TemplateError) -> String {
        var text = ""
        for part in parts {
            switch part {
            case .text(let literal): text += literal
            case .tag(let path): text += Self.text(of: try Self.value(at: path, in: scope))
            }
        }
        return text
    }

    /// The value a path names in `scope`.
    public static func value(at path: [String], in scope: JSONValue) throws(TemplateError) -> JSONValue {
        var value = scope
        for (depth, segment) in path.enumerated() {
            switch value {
            case .object(let fields) where fields[segment] != nil:
                value = fields[segment]!
            case .array(let items) where Int(segment).map(items.indices.contains) == true:
                value = items[Int(segment)!]
            default:
                let reached = path.prefix(depth).joined(separator: ".")
                throw TemplateError(
                    "{{\(path.joined(separator: "."))}} names no value"
                        + (depth == 0 ? "" : ": \(reached) has no \"\(segment)\""))
            }
        }
        return value
    }

    private static func text(of value: JSONValue) -> String {
        switch value {
        case .null: ""
        case .string(let string): string
        default: value.jsonText
        }
    }
}

/// Why a template cannot be read or filled.
public struct TemplateError: Error, Sendable, Hashable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
