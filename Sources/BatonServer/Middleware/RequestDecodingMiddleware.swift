import Baton
import BatonAPI
import HTTPTypes
import OpenAPIRuntime

/// Turns a request body the generated code could not decode into a 400 naming the field at fault,
/// and refuses a `null` where the document's schema has none (which the generated code would read
/// as an absent field).
///
/// Foundation's decoding errors are too coarse to say where (a stage that is neither form fails
/// as a whole; a bad `run_at` loses its path in the date transcoder), so the body, as read by
/// Baton's reader (see ``ExactJSONServerMiddleware``, inside which this runs), is decoded again by
/// ``RequestBody``, whose error names the path. Any other decoding failure (a query parameter of
/// the wrong type) is answered with the generated code's own description.
struct RequestDecodingMiddleware: ServerMiddleware {
    /// The request body type of each operation that takes one.
    static let bodies: [String: any (Decodable & Sendable).Type] = [
        "enqueueJob": Components.Schemas.JobRequest.self, "enqueueJobs": Components.Schemas.BatchRequest.self,
        "bulkJobs": Components.Schemas.BulkRequest.self, "putSchedule": Components.Schemas.ScheduleRequest.self,
        "setLaneSetting": Components.Schemas.LaneSettingRequest.self,
        "setRateLimit": Components.Schemas.RateLimitRequest.self,
        "setFairKeySource": Components.Schemas.FairKeySource.self,
    ]

    let document: APIDocument

    func intercept(
        _ request: HTTPRequest, body: HTTPBody?, metadata: ServerRequestMetadata, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, ServerRequestMetadata) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        if let body = ForeignJSON.current?.document.withLock({ $0 }),
            let path = document.misplacedNull(in: body, operationID: operationID)
        {
            throw Problem.invalid(path, "\(path) must not be null: leave it out for its default")
        }
        do {
            return try await next(request, body, metadata)
        } catch let error as ServerError where error.operationInput == nil && error.underlyingError is DecodingError {
            guard let type = Self.bodies[operationID], let document = ForeignJSON.current?.document.withLock({ $0 })
            else { throw error }
            do {
                _ = try RequestBody.decode(type, from: document)
            } catch {
                throw Problem.invalid(error.path, error.reason)
            }
            throw error
        }
    }
}
