import Baton
import Foundation

/// Checks JSON against the JSON Schema subset OpenAPI 3.1 documents use here. Pure: no I/O.
///
/// Two kinds of message come back. Most say how the value breaks the schema. The others say the
/// *schema* uses something this validator cannot check (an unknown keyword, a malformed keyword
/// value, a `$ref` that does not resolve). Those are always reported, even from inside
/// `oneOf`/`anyOf`/`not` branches, so a test can never pass because part of the document went
/// unchecked.
struct SchemaValidator: Sendable {
    /// The whole OpenAPI document: `$ref`s such as `#/components/schemas/Job` resolve in it.
    let document: JSONValue

    /// Every way `value` breaks `schema`, each as "<json path>: <what is wrong>" (e.g.
    /// "$.stages[2].state: "bogus" is not one of [...]"). Empty: valid.
    func errors(_ value: JSONValue, against schema: JSONValue, at path: String = "$") -> [String] {
        var seen = Set<String>()
        // The same schema problem can be met through several branches; report it once.
        return check(value, schema, path, Context()).map(\.message).filter { seen.insert($0).inserted }
    }

    /// Same, after resolving a `$ref` string like "#/components/schemas/Job" (throws nothing; an
    /// unresolvable ref is reported as an error string).
    func errors(_ value: JSONValue, againstRef ref: String, at path: String = "$") -> [String] {
        errors(value, against: .object(["$ref": .string(ref)]), at: path)
    }
}

// MARK: - Keywords

extension SchemaValidator {
    /// Validation keywords, in the order they are applied (so messages come out in a stable order).
    private static let keywordOrder = [
        "$ref", "type", "enum", "const", "format", "pattern", "minLength", "maxLength", "minimum",
        "maximum", "minItems", "maxItems", "items", "required", "minProperties", "properties",
        "additionalProperties", "allOf", "anyOf", "oneOf", "not",
    ]

    /// Keywords that never affect validity. `format` is both: "date-time" is checked, the rest
    /// ("int64", "uri", "duration", …) are annotations.
    private static let annotations: Set<String> = [
        "description", "title", "example", "examples", "default", "deprecated", "readOnly",
        "writeOnly", "$comment", "contentMediaType", "discriminator", "externalDocs", "xml",
    ]

    private static let typeNames: Set<String> = [
        "null", "boolean", "object", "array", "number", "integer", "string",
    ]

    /// RFC 3339 `date-time`. `[0-9]` rather than `\d`, which also matches non-ASCII digits;
    /// `\A…\z` rather than `^…$`, which would accept a trailing newline.
    private static let dateTimePattern =
        #"\A[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])[Tt]([01][0-9]|2[0-3]):[0-5][0-9]:([0-5][0-9]|60)(\.[0-9]+)?([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-9])\z"#

    /// Deep enough for any real response; shallow enough never to exhaust a thread's stack.
    private static let maxDepth = 200

    private func check(_ value: JSONValue, _ schema: JSONValue, _ path: String, _ context: Context) -> [Issue] {
        guard context.depth < Self.maxDepth else {
            return [.problem(path, "schema nesting deeper than \(Self.maxDepth) levels")]
        }
        var context = context
        context.depth += 1
        switch schema {
        case .bool(true):
            return []
        case .bool(false):
            return [.failure(path, "\(brief(value)) is not allowed (schema is false)")]
        case .object(let keywords):
            let known = Set(Self.keywordOrder).union(Self.annotations)
            var issues = keywords.keys.sorted().filter { !known.contains($0) }.map {
                Issue.problem(path, "unsupported schema keyword \"\($0)\"")
            }
            for key in Self.keywordOrder {
                if let argument = keywords[key] {
                    issues += apply(key, argument, in: keywords, to: value, path, context)
                }
            }
            return issues
        default:
            return [.problem(path, "schema must be an object or a boolean, not \(brief(schema))")]
        }
    }

    /// Applies one keyword. Its argument is checked before the value's type, so a malformed
    /// keyword is reported whatever the value is.
    private func apply(
        _ key: String, _ argument: JSONValue, in keywords: [String: JSONValue], to value: JSONValue,
        _ path: String, _ context: Context
    ) -> [Issue] {
        switch key {
        case "$ref":
            return checkRef(value, argument, path, context)

        case "type":
            let names: [String]? = if case .string(let name) = argument { [name] } else { strings(argument) }
            guard let names, !names.isEmpty else {
                return [.problem(path, "type must be a type name or a non-empty array of them, not \(brief(argument))")]
            }
            let unknown = names.filter { !Self.typeNames.contains($0) }
            guard unknown.isEmpty else {
                return unknown.map { .problem(path, "unknown type \"\($0)\"") }
            }
            if names.contains(where: { Self.value(value, hasType: $0) }) { return [] }
            return [.failure(path, "expected \(names.joined(separator: " or ")), got \(brief(value))")]

        case "enum":
            guard case .array(let options) = argument else {
                return [.problem(path, "enum must be an array, not \(brief(argument))")]
            }
            return options.contains(value) ? [] : [.failure(path, "\(brief(value)) is not one of \(brief(argument))")]

        case "const":
            return value == argument ? [] : [.failure(path, "expected \(brief(argument)), got \(brief(value))")]

        case "format":
            guard case .string(let format) = argument else {
                return [.problem(path, "format must be a string, not \(brief(argument))")]
            }
            guard format == "date-time", case .string(let text) = value else { return [] }
            if text.range(of: Self.dateTimePattern, options: .regularExpression) != nil { return [] }
            return [.failure(path, "\(brief(value)) is not an RFC 3339 date-time")]

        case "pattern":
            guard case .string(let pattern) = argument else {
                return [.problem(path, "pattern must be a string, not \(brief(argument))")]
            }
            guard let regex = try? NSRegularExpression(pattern: pattern) else {
                return [.problem(path, "pattern \(brief(argument)) is not a valid regular expression")]
            }
            guard case .string(let text) = value else { return [] }
            // Unanchored, as JSON Schema specifies: a match anywhere in the string is enough.
            if regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil { return [] }
            return [.failure(path, "\(brief(value)) does not match pattern \(brief(argument))")]

        case "minLength", "maxLength", "minItems", "maxItems", "minProperties":
            return checkSize(key, argument, value, path)

        case "minimum", "maximum":
            guard let limit = argument.numberValue?.double else {
                return [.problem(path, "\(key) must be a number, not \(brief(argument))")]
            }
            guard let number = value.numberValue?.double else { return [] }
            if key == "minimum" ? number >= limit : number <= limit { return [] }
            let relation = key == "minimum" ? "less than minimum" : "greater than maximum"
            return [.failure(path, "\(brief(value)) is \(relation) \(brief(argument))")]

        case "items":
            guard Self.isSchema(argument) else {
                return [.problem(path, "items must be a single schema (no tuple form), not \(brief(argument))")]
            }
            guard case .array(let elements) = value else { return [] }
            return elements.enumerated().flatMap { index, element in
                check(element, argument, "\(path)[\(index)]", context)
            }

        case "required":
            guard let names = strings(argument) else {
                return [.problem(path, "required must be an array of strings, not \(brief(argument))")]
            }
            guard case .object(let object) = value else { return [] }
            return names.filter { object[$0] == nil }.map { .failure(path, "missing required property \"\($0)\"") }

        case "properties":
            guard case .object(let schemas) = argument else {
                return [.problem(path, "properties must be an object, not \(brief(argument))")]
            }
            guard case .object(let object) = value else { return [] }
            return schemas.sorted { $0.key < $1.key }.flatMap { name, schema in
                object[name].map { check($0, schema, Self.path(path, name), context) } ?? []
            }

        case "additionalProperties":
            guard Self.isSchema(argument) else {
                return [.problem(path, "additionalProperties must be a schema, not \(brief(argument))")]
            }
            guard case .object(let object) = value else { return [] }
            var declared = Set<String>()
            if case .object(let schemas)? = keywords["properties"] { declared = Set(schemas.keys) }
            let extras = object.filter { !declared.contains($0.key) }.sorted { $0.key < $1.key }
            if argument == .bool(false) {
                return extras.map {
                    .failure(path, "unexpected property \"\($0.key)\" (additionalProperties is false)")
                }
            }
            return extras.flatMap { name, element in check(element, argument, Self.path(path, name), context) }

        case "allOf", "anyOf", "oneOf":
            return checkCombination(key, argument, value, path, context)

        case "not":
            guard Self.isSchema(argument) else {
                return [.problem(path, "not must be a schema, not \(brief(argument))")]
            }
            let inner = check(value, argument, path, context)
            if inner.isEmpty { return [.failure(path, "\(brief(value)) must not match the \"not\" schema")] }
            return inner.filter(\.isSchemaProblem)

        default:
            return [.problem(path, "unsupported schema keyword \"\(key)\"")]
        }
    }

    /// Applies the schema a local `$ref` points to. Its sibling keywords are applied by the caller.
    private func checkRef(_ value: JSONValue, _ argument: JSONValue, _ path: String, _ context: Context) -> [Issue] {
        guard case .string(let ref) = argument else {
            return [.problem(path, "$ref must be a string, not \(brief(argument))")]
        }
        guard ref.hasPrefix("#") else {
            return [.problem(path, "only local $refs (\"#/…\") are supported, not \(brief(argument))")]
        }
        guard let schema = resolve(ref) else {
            return [.problem(path, "$ref \(brief(argument)) does not resolve in the document")]
        }
        // Meeting the same ref again at the same value path means a loop that never reaches data.
        let visit = Context.RefVisit(ref: ref, path: path)
        guard !context.refsInProgress.contains(visit) else {
            return [.problem(path, "$ref \(brief(argument)) loops back to itself")]
        }
        var context = context
        context.refsInProgress.insert(visit)
        return check(value, schema, path, context)
    }

    /// `allOf` needs every branch, `anyOf` at least one, `oneOf` exactly one.
    private func checkCombination(
        _ key: String, _ argument: JSONValue, _ value: JSONValue, _ path: String, _ context: Context
    ) -> [Issue] {
        guard case .array(let branches) = argument, !branches.isEmpty else {
            return [.problem(path, "\(key) must be a non-empty array of schemas, not \(brief(argument))")]
        }
        let outcomes = branches.map { check(value, $0, path, context) }
        if key == "allOf" { return outcomes.flatMap { $0 } }

        let problems = outcomes.flatMap { $0.filter(\.isSchemaProblem) }
        let matching = outcomes.indices.filter { outcomes[$0].isEmpty }
        if matching.isEmpty {
            // Say why each branch failed, briefly: its first failure and how many more there are.
            let reasons = outcomes.enumerated().map { index, issues in
                let failures = issues.filter { !$0.isSchemaProblem }
                let first = failures.first?.message ?? "invalid schema"
                let more = failures.count > 1 ? " (+\(failures.count - 1) more)" : ""
                return "\(key)[\(index)] → \(first)\(more)"
            }
            return problems + [.failure(path, "matches no \(key) branch [\(reasons.joined(separator: "; "))]")]
        }
        if key == "oneOf", matching.count > 1 {
            let list = matching.map(String.init).joined(separator: ", ")
            return problems + [
                .failure(path, "matches \(matching.count) oneOf branches (\(list)); exactly one must match")
            ]
        }
        return problems
    }

    private func checkSize(_ key: String, _ argument: JSONValue, _ value: JSONValue, _ path: String) -> [Issue] {
        guard let limit = argument.numberValue?.integer(as: Int.self), limit >= 0 else {
            return [.problem(path, "\(key) must be a non-negative integer, not \(brief(argument))")]
        }
        let size: Int
        let units: (one: String, many: String)
        switch value {
        case .string(let text) where key.hasSuffix("Length"): (size, units) = (text.count, ("character", "characters"))
        case .array(let elements) where key.hasSuffix("Items"): (size, units) = (elements.count, ("item", "items"))
        case .object(let object) where key.hasSuffix("Properties"):
            (size, units) = (object.count, ("property", "properties"))
        default: return []
        }
        let isMinimum = key.hasPrefix("min")
        if isMinimum ? size >= limit : size <= limit { return [] }
        let counted = "\(size) \(size == 1 ? units.one : units.many)"
        return [.failure(path, "\(brief(value)) has \(counted), \(isMinimum ? "fewer" : "more") than \(key) \(limit)")]
    }
}

// MARK: - Helpers

extension SchemaValidator {
    /// One message, and whether it is about the schema (always reported) or the value.
    private struct Issue {
        let message: String
        let isSchemaProblem: Bool

        static func failure(_ path: String, _ text: String) -> Issue {
            Issue(message: "\(path): \(text)", isSchemaProblem: false)
        }

        static func problem(_ path: String, _ text: String) -> Issue {
            Issue(message: "\(path): \(text)", isSchemaProblem: true)
        }
    }

    private struct Context {
        struct RefVisit: Hashable {
            let ref: String
            let path: String
        }

        var depth = 0
        /// The `$ref`s being followed, each with the value path it was met at.
        var refsInProgress: Set<RefVisit> = []
    }

    /// Follows a local JSON pointer ("#", "#/components/schemas/Job"; "~1" is "/", "~0" is "~").
    private func resolve(_ ref: String) -> JSONValue? {
        let fragment = String(ref.dropFirst())
        // A URI fragment may percent-encode the pointer.
        let pointer = fragment.removingPercentEncoding ?? fragment
        if pointer.isEmpty { return document }
        guard pointer.hasPrefix("/") else { return nil }
        var node = document
        for raw in pointer.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
            let token = raw.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
            switch node {
            case .object(let object):
                guard let next = object[token] else { return nil }
                node = next
            case .array(let elements):
                guard let index = Int(token), elements.indices.contains(index) else { return nil }
                node = elements[index]
            default:
                return nil
            }
        }
        return node
    }

    /// The strings of a JSON array of strings; nil when it is anything else.
    private func strings(_ value: JSONValue) -> [String]? {
        guard case .array(let elements) = value else { return nil }
        var result: [String] = []
        for element in elements {
            guard case .string(let text) = element else { return nil }
            result.append(text)
        }
        return result
    }

    private static func isSchema(_ value: JSONValue) -> Bool {
        switch value {
        case .bool, .object: true
        default: false
        }
    }

    private static func value(_ value: JSONValue, hasType name: String) -> Bool {
        switch (name, value) {
        case ("null", .null), ("boolean", .bool), ("object", .object), ("array", .array),
            ("string", .string), ("number", .number):
            true
        case ("integer", .number(let number)):
            number.integer(as: Int64.self) != nil
        default:
            false
        }
    }

    /// "$.name" for plain keys, `$["odd key"]` for the rest, so every path reads unambiguously.
    private static func path(_ parent: String, _ key: String) -> String {
        let isPlain =
            key.first.map { $0 == "_" || ($0.isASCII && $0.isLetter) } ?? false
            && key.allSatisfy { $0 == "_" || ($0.isASCII && ($0.isLetter || $0.isNumber)) }
        return isPlain ? "\(parent).\(key)" : "\(parent)[\(JSONValue.string(key).jsonText)]"
    }

    /// The value as compact JSON, cut to about 80 characters.
    private func brief(_ value: JSONValue) -> String {
        let text = value.jsonText
        return text.count <= 80 ? text : text.prefix(79) + "…"
    }
}
