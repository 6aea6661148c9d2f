/// Which servers of a multi-host connection string a connection may use: libpq's
/// `target_session_attrs`, with its meanings.
///
/// Baton's pool, its LISTEN connection and `baton migrate` write, so they default to
/// ``readWrite`` where libpq defaults to ``any``: a standby, or a primary a failover manager has
/// made read-only, is then skipped at connect rather than found out at the first write. Name
/// `any` to connect without looking.
package enum TargetSessionAttributes: String, Sendable, CaseIterable {
    case any
    case readWrite = "read-write"
    case readOnly = "read-only"
    case primary
    case standby
    case preferStandby = "prefer-standby"

    /// What a server told about itself after connecting.
    package struct ServerState: Sendable, Equatable {
        /// `pg_is_in_recovery()`: a hot standby.
        package var inRecovery: Bool
        /// `transaction_read_only` of a new session: a standby, or `default_transaction_read_only`.
        package var readOnly: Bool

        package init(inRecovery: Bool, readOnly: Bool) {
            self.inRecovery = inRecovery
            self.readOnly = readOnly
        }
    }

    package init(parameter text: String) throws(ConfigurationError) {
        guard let known = Self(rawValue: text) else {
            throw ConfigurationError(
                "invalid target_session_attrs value: \"\(text)\" (one of "
                    + Self.allCases.map(\.rawValue).joined(separator: ", ") + ")")
        }
        self = known
    }

    /// Whether a server must be asked about itself before a connection to it is used.
    package var needsCheck: Bool { self != .any }

    /// Whether a server in `state` will do. `prefer-standby` takes a standby in its first pass
    /// through the hosts, anything in its second (``acceptsInSecondPass(_:)``).
    package func accepts(_ state: ServerState) -> Bool {
        switch self {
        case .any: true
        case .readWrite: !state.readOnly
        case .readOnly: state.readOnly
        case .primary: !state.inRecovery
        case .standby, .preferStandby: state.inRecovery
        }
    }

    /// Whether a second pass through every host follows a first that found none acceptable, and
    /// what it accepts: only `prefer-standby` has one, and it takes any server.
    package var hasSecondPass: Bool { self == .preferStandby }

    /// Why a server in `state` was passed over, in libpq's words.
    package func refusal(_ state: ServerState) -> String {
        switch self {
        case .readWrite: "session is read-only"
        case .readOnly: "session is not read-only"
        case .primary: "server is in hot standby mode"
        case .standby, .preferStandby: "server is not in hot standby mode"
        case .any: "accepted"
        }
    }
}
