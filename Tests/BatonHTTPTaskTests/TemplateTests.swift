import Baton
import BatonHTTPTask
import Testing

struct TemplateTests {
    static let scope: JSONValue = [
        "input": ["body": ["upload_url": "https://s.example/u?sig=a&x=1", "n": 3, "ok": true, "none": nil]],
        "stages": ["allocate": ["output": ["body": ["id": "up-7", "items": [["k": "first"]]]]]],
        "job": ["id": 42, "metadata": ["customer": "c-1"]],
    ]

    @Test func tagsAreFilledWithoutEscaping() throws {
        let template = try Template(parsing: "{{input.body.upload_url}}&extra={{ job.id }}")
        #expect(try template.render(in: Self.scope) == "https://s.example/u?sig=a&x=1&extra=42")
        #expect(
            try Template(parsing: "<{{{input.body.upload_url}}}>").render(in: Self.scope)
                == "<https://s.example/u?sig=a&x=1>")
    }

    @Test func valuesOfEveryTypeHaveOneText() throws {
        func render(_ text: String) throws -> String { try Template(parsing: text).render(in: Self.scope) }
        #expect(try render("{{input.body.n}}/{{input.body.ok}}/{{input.body.none}}") == "3/true/")
        #expect(try render("{{stages.allocate.output.body.items}}") == #"[{"k":"first"}]"#)
        #expect(try render("{{stages.allocate.output.body.items.0.k}}") == "first")
        #expect(try render("no tags at all } {") == "no tags at all } {")
    }

    @Test func aMissingValueIsAnErrorNamingWhereThePathStopped() throws {
        #expect(throws: TemplateError("{{input.body.gone}} names no value: input.body has no \"gone\"")) {
            try Template(parsing: "{{input.body.gone}}").render(in: Self.scope)
        }
        #expect(throws: TemplateError.self) {
            try Template(parsing: "{{stages.allocate.output.body.items.5}}").render(in: Self.scope)
        }
        #expect(throws: TemplateError.self) { try Template(parsing: "{{secrets.X}}").render(in: Self.scope) }
    }

    @Test func malformedTagsAreRefusedWhenRead() {
        for text in [
            "{{", "a {{input", "{{}}", "{{#section}}x{{/section}}", "{{> partial}}", "{{! note}}",
            "{{input..x}}", "{{input.a b}}", "{{{input}}",
        ] {
            #expect(throws: TemplateError.self, "\(text)") { try Template(parsing: text) }
        }
    }

    @Test func aSoleTagIsKnownSoJSONCanKeepTheValuesType() throws {
        #expect(try Template(parsing: "{{ input.body.n }}").soleTag == ["input", "body", "n"])
        #expect(try Template(parsing: "n={{input.body.n}}").soleTag == nil)
        let json: JSONValue = [
            "count": "{{input.body.n}}", "label": "n={{input.body.n}}", "list": ["{{input.body.ok}}"],
        ]
        #expect(try HTTPRequestArgs.render(json: json, in: Self.scope) == ["count": 3, "label": "n=3", "list": [true]])
    }
}
