import Baton
import Yams

/// Why a YAML node cannot be read as JSON: the path of the node at fault (`schedules.nightly.job`,
/// empty for the root) and the reason.
package struct YAMLNotJSON: Error, CustomStringConvertible {
    package var path: String
    package var reason: String

    package var description: String { "\(path.isEmpty ? "the document" : path): \(reason)" }
}

extension JSONValue {
    /// A YAML node as JSON: scalars by the tag YAML 1.2's core schema resolves, numbers kept as
    /// written (a settings file's job input, the OpenAPI document's examples); keys must be text;
    /// aliases are refused. The one reader of YAML into JSON for the settings file and the build.
    package init(yaml node: Node) throws(YAMLNotJSON) {
        self = try Self.json(node, path: "")
    }

    private static func json(_ node: Node, path: String) throws(YAMLNotJSON) -> JSONValue {
        switch node {
        case .scalar(let scalar):
            switch Tag.Name(rawValue: node.tag.rawValue) {
            case .null: return .null
            case .bool: return .bool(node.bool ?? false)
            case .int, .float:
                guard let number = JSONNumber(scalar.string) else {
                    throw YAMLNotJSON(path: path, reason: "write \(scalar.string) as a decimal number")
                }
                return .number(number)
            default: return .string(scalar.string)
            }
        case .sequence(let sequence):
            var items: [JSONValue] = []
            for (index, item) in sequence.enumerated() { items.append(try json(item, path: "\(path)[\(index)]")) }
            return .array(items)
        case .mapping(let mapping):
            var object: [String: JSONValue] = [:]
            for (key, value) in mapping {
                guard case .scalar(let name) = key else { throw YAMLNotJSON(path: path, reason: "keys must be text") }
                object[name.string] = try json(value, path: path.isEmpty ? name.string : "\(path).\(name.string)")
            }
            return .object(object)
        case .alias:
            throw YAMLNotJSON(path: path, reason: "YAML aliases are not read")
        }
    }
}
