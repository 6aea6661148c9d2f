import HTTPTypes
import Hummingbird

/// Who may call a route.
enum Access: Sendable {
    /// No token needed.
    case open
    /// A token with one of these roles.
    case roles(Set<Role>)

    static let admin = Access.roles([.admin])
    static let readers = Access.roles([.admin, .read])
    /// Reading one job: an `enqueue` token too, for the jobs it enqueued (checked by the route).
    static let jobReaders = Access.roles([.admin, .read, .enqueue])
    static let enqueuers = Access.roles([.admin, .enqueue])
    static let anyToken = Access.roles(Set(Role.allCases))

    /// The caller, if the request may go on: 401 without a known token, 403 for a role not allowed.
    func authorize(_ request: Request, tokens: APITokens) throws -> Caller? {
        guard case .roles(let roles) = self else { return nil }
        guard let header = request.headers[.authorization], header.count > 7,
            header.prefix(7).lowercased() == "bearer ",
            let caller = tokens.caller(token: header.dropFirst(7).drop(while: { $0 == " " }))
        else { throw Problem.unauthorized }
        guard roles.contains(caller.role) else { throw Problem.forbidden(caller.role) }
        return caller
    }
}
