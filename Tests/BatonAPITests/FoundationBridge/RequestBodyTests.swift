import Baton
import Testing

@testable import BatonAPI

/// A request body that does not decode is refused at the JSON path of the field at fault, a stage
/// read as the form its keys say it is.
struct RequestBodyTests {
    static let cases: [(String, String)] = [
        (#"{"queue": "q"}"#, "stages"),
        (#"{"stages": [{"task": "noop", "retries": 3}]}"#, "stages[0].retries"),
        (#"{"stages": [{"task": 7}]}"#, "stages[0].task"),
        (#"{"stages": [{"task": "noop", "timeout": 30}]}"#, "stages[0].timeout"),
        (#"{"stages": [{"task": "noop", "max_attempts": 1.5}]}"#, "stages[0].max_attempts"),
        (#"{"stages": [{"task": "noop", "backoff": {"kind": "random"}}]}"#, "stages[0].backoff.kind"),
        (#"{"stages": [{"group": [{"task": "noop", "timeout": 5}]}]}"#, "stages[0].group[0].timeout"),
        (#"{"stages": [{"group": [{"group": [{"task": "noop", "lane": {}}]}]}]}"#, "stages[0].group[0].group[0].lane"),
        (#"{"stages": [{"group": [], "task": "noop"}]}"#, "stages[0].task"),
        (#"{"stages": [{"name": "x"}]}"#, "stages[0].task"),
        (#"{"stages": [{"task": "noop"}], "run_at": "tomorrow"}"#, "run_at"),
        (#"{"stages": [{"task": "noop"}], "priority": "high"}"#, "priority"),
        (#"{"stages": [{"task": "noop"}], "colour": "red"}"#, "colour"),
        (#"{"stages": "noop"}"#, "stages"),
        (#"[1, 2]"#, ""),
    ]

    @Test(arguments: cases)
    func aBodyThatDoesNotDecodeNamesThePath(_ body: String, _ path: String) throws {
        let json = try JSONValue(parsing: body)
        do {
            _ = try RequestBody.decode(Components.Schemas.JobRequest.self, from: json)
            Issue.record("\(body) decoded")
        } catch {
            #expect(error.path == path, "\(body): \(error)")
            #expect(!error.reason.isEmpty)
        }
    }

    @Test func aBatchNamesTheJob() throws {
        let body = try JSONValue(parsing: #"{"jobs": [{"stages": [{"task": "noop"}]}, {"stages": [{"task": 1}]}]}"#)
        #expect(
            throws: InvalidRequestBody(
                path: "jobs[1].stages[0].task", reason: "jobs[1].stages[0].task must be a string")
        ) {
            _ = try RequestBody.decode(Components.Schemas.BatchRequest.self, from: body)
        }
    }
}

/// The document the generated code came from: every operation named, tagged, with its roles, and
/// every refusal a problem.
struct OpenAPIDocumentTests {
    let document = try! JSONValue(parsing: EmbeddedOpenAPI.json)

    @Test func everyOperationIsNamedTaggedAndHasItsRoles() {
        let tags = Set((document["tags"]?.arrayValue ?? []).compactMap { $0["name"]?.stringValue })
        #expect(tags == ["jobs", "queues", "lanes", "workers", "schedules", "audit", "system"])
        var ids = Set<String>()
        for (path, item) in document["paths"]?.objectValue ?? [:] {
            for (method, operation) in item.objectValue ?? [:] {
                let what = "\(method) \(path)"
                let id = operation["operationId"]?.stringValue
                #expect(id.map { ids.insert($0).inserted } == true, "\(what): a unique operationId")
                #expect(operation["tags"]?.arrayValue?.count == 1, "\(what): one tag")
                #expect(operation["tags"]?.arrayValue?.allSatisfy { tags.contains($0.stringValue ?? "") } == true)
                let roles = operation["x-baton-roles"]?.arrayValue?.compactMap(\.stringValue)
                #expect(roles.map { Set($0).isSubset(of: ["admin", "enqueue", "read"]) } == true, "\(what): roles")
                for (status, response) in operation["responses"]?.objectValue ?? [:] where status.hasPrefix("4") {
                    let resolved = resolve(response)
                    #expect(resolved["content"]?["application/problem+json"] != nil, "\(what) \(status): a problem")
                }
            }
        }
        #expect(ids.count == 35)
    }

    @Test func everyReferenceResolves() {
        var missing: [String] = []
        func walk(_ value: JSONValue) {
            switch value {
            case .object(let fields):
                if let reference = fields["$ref"]?.stringValue, resolve(value) == value { missing.append(reference) }
                fields.values.forEach(walk)
            case .array(let items): items.forEach(walk)
            default: break
            }
        }
        walk(document)
        #expect(missing.isEmpty)
        #expect(document["openapi"] == "3.1.0")
    }

    private func resolve(_ value: JSONValue) -> JSONValue {
        guard let reference = value["$ref"]?.stringValue, reference.hasPrefix("#/") else { return value }
        return reference.dropFirst(2).split(separator: "/").reduce(document as JSONValue?) { $0?[String($1)] } ?? value
    }
}
