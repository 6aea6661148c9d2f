import Baton
import Foundation

/// What a response status means for the stage.
public enum HTTPStatusOutcome: String, Sendable, Hashable, CaseIterable {
    /// The stage succeeds with the response as its output.
    case success
    /// The attempt fails and is retried by the stage's policy (sooner if the answer says
    /// `Retry-After`).
    case retry
    /// The stage fails for good.
    case fail
}

/// The `http` task's reading of response statuses: by default 2xx succeed; 408, 425, 429 and 5xx
/// are retried; everything else fails for good. `expect` overrides by exact status (`"404"`) or
/// by class (`"4xx"`), the exact status first:
/// `{"404": "success", "409": "fail", "5xx": "retry"}`.
public struct HTTPExpectations: Sendable, Hashable {
    public var exact: [Int: HTTPStatusOutcome]
    /// By the hundreds digit: 4 for `4xx`.
    public var classes: [Int: HTTPStatusOutcome]

    public init(exact: [Int: HTTPStatusOutcome] = [:], classes: [Int: HTTPStatusOutcome] = [:]) {
        self.exact = exact
        self.classes = classes
    }

    init(_ value: JSONValue, path: String) throws(BatonError) {
        guard case .object(let fields) = value else {
            throw .invalidChain(path: path, reason: "must be an object such as {\"404\": \"success\"}")
        }
        self.init()
        for (key, value) in fields {
            guard case .string(let name) = value, let outcome = HTTPStatusOutcome(rawValue: name) else {
                throw .invalidChain(path: "\(path).\(key)", reason: "must be success, retry or fail")
            }
            let lowered = key.lowercased()
            if lowered.count == 3, lowered.hasSuffix("xx"), let digit = lowered.first?.wholeNumberValue,
                (1...5).contains(digit)
            {
                classes[digit] = outcome
            } else if let status = Int(key), (100...599).contains(status) {
                exact[status] = outcome
            } else {
                throw .invalidChain(path: "\(path).\(key)", reason: "must be a status (404) or a class (4xx)")
            }
        }
    }

    public func outcome(for status: Int) -> HTTPStatusOutcome {
        if let outcome = exact[status] ?? classes[status / 100] { return outcome }
        switch status {
        case 200..<300: return .success
        case 408, 425, 429, 500..<600: return .retry
        default: return .fail
        }
    }

    /// Whether a redirect with this status is followed: unless `expect` names it (or its class),
    /// in which case the redirect itself is the answer.
    public func follows(_ status: Int) -> Bool {
        [301, 302, 303, 307, 308].contains(status) && exact[status] == nil && classes[3] == nil
    }

    /// The delay a `Retry-After` value asks for: seconds (`120`) or an HTTP date; nil if neither.
    public static func retryAfter(_ value: String, now: Date = Date()) -> Duration? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if let seconds = Int(trimmed) { return seconds >= 0 ? .seconds(seconds) : nil }
        guard let date = httpDate(trimmed) else { return nil }
        return .milliseconds(max(0, Int64(date.timeIntervalSince(now) * 1000)))
    }

    /// An IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the form RFC 9110 says to send.
    public static func httpDate(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.date(from: text)
    }
}
