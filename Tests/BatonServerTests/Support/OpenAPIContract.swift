import Baton
import Foundation

@testable import BatonServer

/// The published OpenAPI document, used to check each exchange a test makes with the server:
/// the operation exists, its query parameters are declared, the status is one it documents, and
/// the body has the documented media type and schema.
struct OpenAPIContract: Sendable {
    let document: JSONValue
    let validator: SchemaValidator

    static let shared: OpenAPIContract = {
        let document = try! JSONValue(parsing: OpenAPIDocument.json)
        return OpenAPIContract(document: document, validator: SchemaValidator(document: document))
    }()

    /// (path template, method) of every operation.
    var operations: [(path: String, method: String, operation: JSONValue)] {
        guard case .object(let paths)? = document["paths"] else { return [] }
        return paths.sorted { $0.key < $1.key }.flatMap { path, item -> [(String, String, JSONValue)] in
            guard case .object(let methods) = item else { return [] }
            return methods.sorted { $0.key < $1.key }.map { (path, $0.key.uppercased(), $0.value) }
        }
    }

    /// The operation serving `path` (concrete, no query) with `method`: literal segments win
    /// over `{parameters}`, as in the server.
    func operation(method: String, path: String) -> (template: String, operation: JSONValue)? {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        let matching = operations.filter { candidate in
            let template = candidate.path.split(separator: "/", omittingEmptySubsequences: false)
            return template.count == segments.count
                && zip(template, segments).allSatisfy { $0.hasPrefix("{") || $0 == $1 }
        }
        guard let best = matching.max(by: { literals($0.path) < literals($1.path) }) else { return nil }
        return matching.first { $0.path == best.path && $0.method == method }.map { ($0.path, $0.operation) }
    }

    private func literals(_ template: String) -> Int {
        template.split(separator: "/").filter { !$0.hasPrefix("{") }.count
    }

    /// Follows a `$ref` to a component, or returns the value itself.
    func resolve(_ value: JSONValue) -> JSONValue {
        guard case .string(let ref)? = value["$ref"], ref.hasPrefix("#/") else { return value }
        var node: JSONValue? = document
        for part in ref.dropFirst(2).split(separator: "/") { node = node?[String(part)] }
        return node ?? .null
    }

    /// Parameters an operation declares, resolved.
    func parameters(of operation: JSONValue) -> [JSONValue] {
        guard case .array(let list)? = operation["parameters"] else { return [] }
        return list.map(resolve)
    }

    /// What is wrong with one exchange; empty if it matches the document.
    func problems(
        method: String, path: String, query: [String], requestBody: JSONValue?, status: Int, contentType: String?,
        body: JSONValue?
    ) -> [String] {
        let exchange = "\(method) \(path) → \(status)"
        guard let (template, operation) = self.operation(method: method, path: path) else {
            // Not an operation: only the router's own answers may come back, as problems.
            guard status == 404 || status == 405 else { return ["\(exchange): no such operation in the document"] }
            return contentType?.hasPrefix("application/problem+json") == true
                ? validator.errors(body ?? .null, againstRef: "#/components/schemas/Problem").map {
                    "\(exchange): \($0)"
                }
                : ["\(exchange): not a problem+json answer"]
        }
        var problems: [String] = []
        let declared = Set(
            parameters(of: operation).filter { $0["in"] == "query" }.compactMap { parameter -> String? in
                if case .string(let name)? = parameter["name"] { return name }
                return nil
            })
        for name in query where !declared.contains(name) {
            problems.append("\(exchange): query parameter \(name) is not declared for \(method) \(template)")
        }
        if (200..<300).contains(status), let requestBody,
            case .string(let ref)? = operation["requestBody"]?["content"]?["application/json"]?["schema"]?["$ref"]
        {
            problems += validator.errors(requestBody, againstRef: ref).map { "\(exchange) request: \($0)" }
        }
        guard let response = operation["responses"]?[String(status)].map(resolve) else {
            return problems + ["\(exchange): status \(status) is not documented for \(method) \(template)"]
        }
        guard case .object(let content)? = response["content"] else {
            if let body {
                problems.append("\(exchange): documented without a body, but one came: \(body.jsonText.prefix(200))")
            }
            return problems
        }
        let mediaType = contentType.map { String($0.split(separator: ";")[0]) } ?? "none"
        guard let schema = content[mediaType]?["schema"] else {
            return problems + ["\(exchange): media type \(mediaType) is not documented (\(content.keys.sorted()))"]
        }
        if mediaType.hasSuffix("json") {
            problems += validator.errors(body ?? .null, against: schema).map { "\(exchange): \($0)" }
        }
        return problems
    }
}
