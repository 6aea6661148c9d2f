import Logging

/// How the control plane listens and whom it lets in.
public struct ServerConfiguration: Sendable {
    public var host: String
    /// 0: any free port (see `BatonServer`'s `onListening`).
    public var port: Int
    public var tokens: APITokens
    /// The file `tokens` were read from (``APITokens/load(file:)``): read again on `SIGHUP`.
    public var tokensFile: String?
    /// Keys of the token fingerprints stored with jobs, newest first (see ``FingerprintKeys``);
    /// the database's own key is used after them.
    public var fingerprintKeys: [[UInt8]] = []
    /// Request bodies longer than this are refused with 413.
    public var maxBodySize: Int
    /// Whether `/metrics` asks for a token (any role), as every route but the health checks does.
    /// Prometheus sends one with `authorization: {credentials_file: …}`; turn this off only for a
    /// scraper that cannot, on a network you trust.
    public var metricsRequireToken: Bool
    /// A task is known if a worker that serves it sent a heartbeat this recently.
    public var taskWindow: Duration
    /// The longest a `?wait=` holds a request; longer waits are cut to this.
    public var maxWait: Duration
    /// The level of the one line logged per request.
    public var requestLogLevel: Logger.Level
    /// How slow a client may be, and how many may be connected (``ConnectionLimits``).
    public var connections = ConnectionLimits()

    public init(
        host: String = "127.0.0.1", port: Int = 8080, tokens: APITokens, maxBodySize: Int = 1 << 20,
        metricsRequireToken: Bool = true, taskWindow: Duration = .seconds(300), maxWait: Duration = .seconds(300),
        requestLogLevel: Logger.Level = .info
    ) {
        self.host = host
        self.port = port
        self.tokens = tokens
        self.maxBodySize = maxBodySize
        self.metricsRequireToken = metricsRequireToken
        self.taskWindow = taskWindow
        self.maxWait = maxWait
        self.requestLogLevel = requestLogLevel
    }
}
