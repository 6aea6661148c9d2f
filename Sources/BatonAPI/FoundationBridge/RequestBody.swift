import Baton
import Foundation

/// Why a request body does not decode as its type, and where.
public struct InvalidRequestBody: Error, Sendable, Hashable, CustomStringConvertible {
    /// The JSON path of the field at fault (`stages[1].timeout`); empty for the body itself.
    public var path: String
    public var reason: String

    public var description: String { path.isEmpty ? reason : "\(path): \(reason)" }
}

/// Request bodies decoded with Baton's decoder, each failure named by its JSON path.
///
/// The generated types decode with any decoder, but a stage that is neither a task nor a group
/// fails as a whole (`oneOf`, no discriminator); here a stage is read as the form its keys say it
/// is (an object with `group` is a group stage, a group member with `stages` a sub-chain), so
/// that its own error comes out.
public enum RequestBody {
    public static func decode<T: Decodable>(_ type: T.Type, from json: JSONValue) throws(InvalidRequestBody) -> T {
        do {
            return try json.decode(as: T.self)
        } catch let error as DecodingError {
            throw invalid(error, document: json)
        } catch {
            throw InvalidRequestBody(path: "", reason: "\(error)")
        }
    }

    static func invalid(_ error: DecodingError, at prefix: [any CodingKey] = [], document: JSONValue)
        -> InvalidRequestBody
    {
        func failure(_ path: [any CodingKey], _ reason: (String) -> String) -> InvalidRequestBody {
            let rendered = JSONPath.render(prefix + path)
            return InvalidRequestBody(path: rendered, reason: reason(rendered.isEmpty ? "the body" : rendered))
        }
        switch error {
        case .valueNotFound(let type, let context)
        where type == Components.Schemas.StageRequest.self || type == Components.Schemas.GroupMemberRequest.self:
            // No form decoded: read the stage (or member) as the form it says it is, for its own error.
            let path = prefix + context.codingPath
            if type == Components.Schemas.StageRequest.self, let stage = document.value(at: path),
                stage["stages"] != nil, stage["map"] == nil
            {
                return failure(context.codingPath) { "\($0) is a sub-chain, which only a group member can be" }
            }
            if let stage = document.value(at: path) {
                let form: any Decodable.Type =
                    if type == Components.Schemas.GroupMemberRequest.self, stage["stages"] != nil {
                        Components.Schemas.SubChainRequest.self
                    } else if stage["map"] != nil {
                        Components.Schemas.MapStageRequest.self
                    } else if stage["group"] != nil {
                        Components.Schemas.GroupStageRequest.self
                    } else if stage["await"] != nil {
                        Components.Schemas.AwaitStageRequest.self
                    } else {
                        Components.Schemas.TaskStageRequest.self
                    }
                do {
                    _ = try stage.decode(as: form)
                } catch let inner as DecodingError {
                    return invalid(inner, at: path, document: document)
                } catch {}
            }
            return failure(context.codingPath) { "\($0) must be a task stage or a group stage" }
        case .keyNotFound(let key, let context):
            return failure(context.codingPath + [key]) { "\($0) is required" }
        case .typeMismatch(let type, let context):
            return failure(context.codingPath) { "\($0) must be \(describe(type))" }
        case .valueNotFound(let type, let context):
            return failure(context.codingPath) { "\($0) must be \(describe(type)), not null" }
        case .dataCorrupted(let context):
            // The generated code's refusal of a field its schema does not name.
            if context.debugDescription.hasPrefix("Additional properties are disabled"),
                let key = context.codingPath.last
            {
                return failure(context.codingPath) { _ in "unknown field \"\(key.stringValue)\"" }
            }
            return failure(context.codingPath) { "\($0): \(context.debugDescription)" }
        @unknown default:
            return failure([]) { "\($0) is not valid: \(error)" }
        }
    }

    /// A Swift type as the JSON it is read from.
    private static func describe(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Bool.Type: "true or false"
        case is any FixedWidthInteger.Type: "an integer"
        case is any BinaryFloatingPoint.Type: "a number"
        case is Date.Type: "an RFC 3339 time"
        default: "\(type)".hasPrefix("Array") ? "an array" : "an object"
        }
    }
}
