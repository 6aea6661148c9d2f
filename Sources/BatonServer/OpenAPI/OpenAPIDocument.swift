/// The OpenAPI 3.1 description of the control plane, served at `/openapi.json`. Tests hold the
/// server to it: every route and method, and every response body they see, is checked against it.
enum OpenAPIDocument {
    static let json = #"""
        {}
        """#
}
