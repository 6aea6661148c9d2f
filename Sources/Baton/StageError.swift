/// A stage's failure as a value: a message for people, a `code` a program can switch on, and
/// `details` as JSON (an HTTP status and the start of the body, a provider's decline reason).
/// Each failed attempt is stored as one (the job's `errors`), shown by the API, the CLI and the
/// dashboard, and `JobHandle.result()` throws the last inside ``BatonError/jobFailed(id:state:error:)``.
///
/// A task fails with one by throwing ``TaskFailure`` (which says whether to retry) or a
/// `StageError` itself (retried by the stage's policy).
public struct StageError: Error, Sendable, Hashable, CustomStringConvertible, ExpressibleByStringInterpolation {
    public var message: String
    /// Short and stable (`card_declined`, `http_status`), at most ``StageError/codeLimit`` characters.
    public var code: String?
    /// Anything a caller may need, as JSON, at most ``StageError/detailsLimit`` bytes.
    public var details: JSONValue?

    /// A longer code is cut.
    public static let codeLimit = 100
    /// Larger details are dropped (the message says so): a failure is recorded whatever it carries.
    public static let detailsLimit = 64 * 1024

    public init(_ message: String, code: String? = nil, details: JSONValue? = nil) {
        self.message = message
        self.code = code.map { String($0.prefix(Self.codeLimit)) }
        self.details = details == .null ? nil : details
    }

    public init(stringLiteral message: String) {
        self.init(message)
    }

    public var description: String { code.map { "\($0): \(message)" } ?? message }

    /// As it can be stored: details that PostgreSQL cannot hold (a NUL) or that are too large are
    /// dropped, and the message says why.
    package var storable: StageError {
        guard let details else { return self }
        var storable = self
        do {
            try details.checkStorable(at: "details")
            let bytes = details.jsonText.utf8.count
            guard bytes <= Self.detailsLimit else {
                storable.details = nil
                storable.message += " (details of \(bytes) bytes dropped: over \(Self.detailsLimit))"
                return storable
            }
        } catch {
            storable.details = nil
            storable.message += " (details dropped: \(error))"
        }
        return storable
    }
}
