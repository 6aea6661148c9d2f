import Baton
import BatonAPI
import HTTPTypes

/// What the server reads from its own OpenAPI document (`Sources/BatonAPI/openapi.yaml`, compiled
/// in): who may call each operation (`x-baton-roles`), the query parameters each declares, and the
/// methods of each path. The generated code knows the rest; what no schema says stays here.
struct APIDocument: Sendable {
    struct Operation: Sendable {
        var method: HTTPRequest.Method
        var path: String
        /// Roles admitted; empty: open to anyone.
        var roles: Set<Role>
        /// Also open, without a bearer token, to a request with a signal's one-time token in
        /// `?token=`, which the handler checks (`x-baton-signal-token`).
        var signalToken: Bool
        /// Concerns the whole cluster rather than queues (`x-baton-cluster`): refused to a token
        /// limited to queues.
        var clusterWide: Bool
        /// Each query parameter's JSON Schema type (`integer`, `boolean`, `string`), or its format
        /// where the format asks more of a string (`date-time`).
        var queryParameters: [String: String]
        /// Query parameters of `key=value` items also written `<name>.<key>=<value>`
        /// (`x-baton-dotted`; `?metadata.tenant=42`), which OpenAPI 3.0 cannot declare.
        var dottedParameters: Set<String>
        /// The JSON body's schema, if the operation takes one.
        var body: JSONValue?
    }

    static let shared = APIDocument(json: EmbeddedOpenAPI.json)

    /// The document as served at `/openapi.json`.
    let document: JSONValue
    /// By operation id.
    let operations: [String: Operation]
    let allowedMethods: AllowedMethods

    init(json: String) {
        // The document is compiled in from a file the build has read already: it parses.
        let document = try! JSONValue(parsing: json)
        self.document = document
        var operations: [String: Operation] = [:]
        for (path, item) in document["paths"]?.objectValue ?? [:] {
            let pathParameters = Self.parameters(item["parameters"], in: document)
            for (method, operation) in item.objectValue ?? [:] {
                guard let id = operation["operationId"]?.stringValue else { continue }
                let parameters = pathParameters + Self.parameters(operation["parameters"], in: document)
                operations[id] = Operation(
                    method: HTTPRequest.Method(method.uppercased())!, path: path,
                    roles: Set(
                        (operation["x-baton-roles"]?.arrayValue ?? []).compactMap(\.stringValue).compactMap(Role.init)),
                    signalToken: operation["x-baton-signal-token"] == .bool(true),
                    clusterWide: operation["x-baton-cluster"] == .bool(true),
                    queryParameters: Dictionary(
                        parameters.filter { $0["in"] == "query" }.compactMap { parameter in
                            parameter["name"]?.stringValue.map {
                                ($0, Self.type(of: parameter["schema"], in: document))
                            }
                        },
                        uniquingKeysWith: { $1 }),
                    dottedParameters: Set(
                        parameters.filter { $0["in"] == "query" && $0["x-baton-dotted"] == .bool(true) }
                            .compactMap { $0["name"]?.stringValue }),
                    body: operation["requestBody"]?["content"]?["application/json"]?["schema"])
            }
        }
        self.operations = operations
        allowedMethods = AllowedMethods(operations.values.map { ($0.path, $0.method) })
    }

    /// The JSON path of the first `null` in `body` where the operation's schema does not allow one
    /// (an optional field given as null rather than left out), or nil. The generated code reads such
    /// a null as absent; the schema says it is not a value of the field's type.
    func misplacedNull(in body: JSONValue, operationID: String) -> String? {
        // Most bodies hold no null at all: then the schema is not walked.
        guard body.containsNull, let schema = operations[operationID]?.body else { return nil }
        return misplacedNull(body, schema: schema, path: "")
    }

    private func misplacedNull(_ value: JSONValue, schema given: JSONValue, path: String) -> String? {
        let schema = Self.resolve(given, in: document)
        // All of several schemas (`JobRequestBody`: a `JobRequest` under a name of its own).
        if let parts = schema["allOf"]?.arrayValue {
            return parts.lazy.compactMap { self.misplacedNull(value, schema: $0, path: path) }.first
        }
        // No type, no structure: any JSON value, null included (a payload).
        let type = schema["type"]
        guard type != nil || schema["oneOf"] != nil else { return nil }
        switch value {
        case .null:
            return type?.arrayValue?.contains("null") == true || type == "null" ? nil : path
        case .object(let fields):
            if let variants = schema["oneOf"]?.arrayValue {
                // The variant whose required fields are there (a stage with `group` is a group).
                let variant = variants.first { variant in
                    let required = Self.resolve(variant, in: document)["required"]?.arrayValue ?? []
                    return required.allSatisfy { $0.stringValue.map { fields[$0] != nil } ?? false }
                }
                return variant.flatMap { misplacedNull(value, schema: $0, path: path) }
            }
            let properties = schema["properties"]?.objectValue ?? [:]
            for (key, field) in fields.sorted(by: { $0.key < $1.key }) {
                guard let property = properties[key] else { continue }
                if let found = misplacedNull(field, schema: property, path: JSONPath.appending(key, to: path)) {
                    return found
                }
            }
            return nil
        case .array(let items):
            guard let itemSchema = schema["items"] else { return nil }
            for (index, item) in items.enumerated() {
                if let found = misplacedNull(item, schema: itemSchema, path: "\(path)[\(index)]") { return found }
            }
            return nil
        default:
            return nil
        }
    }

    /// Whether the operation's path names a job (`/v1/jobs/{id}`).
    func takesJobID(_ operationID: String) -> Bool {
        operations[operationID]?.path.contains("{id}") == true
    }

    /// A parameter list with each `$ref` resolved.
    private static func parameters(_ list: JSONValue?, in document: JSONValue) -> [JSONValue] {
        (list?.arrayValue ?? []).map { resolve($0, in: document) }
    }

    /// A schema's `type`, through `$ref`s; `date-time` for a string of that format.
    private static func type(of schema: JSONValue?, in document: JSONValue) -> String {
        guard let schema else { return "string" }
        let resolved = resolve(schema, in: document)
        if resolved["format"] == "date-time" { return "date-time" }
        return resolved["type"]?.stringValue ?? "string"
    }

    private static func resolve(_ value: JSONValue, in document: JSONValue) -> JSONValue {
        guard let reference = value["$ref"]?.stringValue, reference.hasPrefix("#/") else { return value }
        return resolve(
            reference.dropFirst(2).split(separator: "/").reduce(document as JSONValue?) { $0?[String($1)] } ?? value,
            in: document)
    }
}

/// The methods of each route path (`/v1/jobs/{id}`), for the `Allow` of a 405.
struct AllowedMethods: Sendable {
    private let paths: [(segments: [Substring], allow: [HTTPRequest.Method])]

    init(_ routes: [(path: String, method: HTTPRequest.Method)]) {
        var methods: [String: [HTTPRequest.Method]] = [:]
        for route in routes { methods[route.path, default: []].append(route.method) }
        // Literal paths first: `/v1/jobs/batch` before `/v1/jobs/{id}`.
        paths = methods.map { path, methods in
            (path.split(separator: "/"), methods.sorted { $0.rawValue < $1.rawValue })
        }
        .sorted { $0.segments.filter { $0.hasPrefix("{") }.count < $1.segments.filter { $0.hasPrefix("{") }.count }
    }

    /// Every route path with its methods.
    var all: [(path: String, allow: [HTTPRequest.Method])] {
        paths.map { ("/" + $0.segments.joined(separator: "/"), $0.allow) }
    }

    /// The methods a request path takes, nil if no route has that path.
    func methods(for path: String) -> [HTTPRequest.Method]? {
        let segments = path.split(separator: "/")
        return paths.first { route in
            route.segments.count == segments.count
                && zip(route.segments, segments).allSatisfy { template, segment in
                    template.hasPrefix("{") || template == segment
                }
        }?.allow
    }
}
