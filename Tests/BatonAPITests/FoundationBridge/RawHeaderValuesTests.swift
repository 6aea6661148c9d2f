import Baton
import HTTPTypes
@_spi(Generated) import OpenAPIRuntime
import Testing

@testable import BatonAPI

/// swift-openapi-runtime percent-encodes the header values it writes and decodes those it reads;
/// `RawHeaderValues.swift` puts the declared headers back as they are on the wire.
struct RawHeaderValuesTests {
    /// A generated server's answer, through the server middleware, as the wire carries it.
    @Test func aLocationLeavesTheServerAsTheHandlerGaveIt() async throws {
        let converter = Converter(configuration: .baton)
        var headers = HTTPFields()
        try converter.setHeaderFieldAsURI(in: &headers, name: "Location", value: "/v1/jobs/7")
        #expect(headers[.location] == "%2Fv1%2Fjobs%2F7", "the runtime alone encodes it")
        let encoded = headers
        let (response, _) = try await RawHeaderValuesServerMiddleware().intercept(
            HTTPRequest(method: .post, scheme: nil, authority: nil, path: "/v1/jobs"), body: nil,
            metadata: .init(), operationID: "enqueueJob"
        ) { _, _, _ in (HTTPResponse(status: .created, headerFields: encoded), nil) }
        #expect(response.headerFields[.location] == "/v1/jobs/7")
    }

    /// A key sent by curl reaches the handler as sent, `%` included.
    @Test func anIdempotencyKeyReachesTheHandlerAsSent() async throws {
        let converter = Converter(configuration: .baton)
        let name = HTTPField.Name("Idempotency-Key")!
        for key in ["50%off", "a%2Fb", "a,b", "order 7/2", "é"] {
            var request = HTTPRequest(method: .post, scheme: nil, authority: nil, path: "/v1/jobs")
            request.headerFields[name] = key
            let alone = try? converter.getOptionalHeaderFieldAsURI(
                in: request.headerFields, name: "Idempotency-Key", as: String.self)
            if key.contains("%") { #expect(alone != key, "the runtime alone decodes \(key)") }
            _ = try await RawHeaderValuesServerMiddleware().intercept(
                request, body: nil, metadata: .init(), operationID: "enqueueJob"
            ) { request, _, _ in
                let read = try converter.getOptionalHeaderFieldAsURI(
                    in: request.headerFields, name: "Idempotency-Key", as: String.self)
                #expect(read == key)
                return (HTTPResponse(status: .created), nil)
            }
        }
    }

    /// The transform itself: what it encodes it decodes back; a malformed sequence is left alone.
    @Test(arguments: ["", "plain-key_1.0~", "50%off", "a/b c,d", "é€😀", "%", "%zz", "%E9"])
    func encodingIsUndoneByDecoding(value: String) {
        #expect(RawHeaderValues.decode(RawHeaderValues.encode(value)) == value)
        #expect(RawHeaderValues.encode("a/b é") == "a%2Fb%20%C3%A9")
        #expect(RawHeaderValues.decode("%zz") == "%zz", "malformed: left as it is")
        #expect(RawHeaderValues.decode("%E9") == "%E9", "not UTF-8 once decoded: left as it is")
        #expect(RawHeaderValues.decode("%2fv1%2Fjobs") == "/v1/jobs")
    }
}
