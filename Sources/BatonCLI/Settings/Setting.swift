/// A setting of `baton serve`, `baton worker`, `baton dev` and `baton migrate`: its key in a config
/// file, its environment variable (`BATON_` and the key in capitals), its flag, and its default.
///
/// This table is the documentation: `baton settings --reference` prints it as docs/operations.md's table
/// (a test holds the two together), and every read goes through one of these.
struct Setting: Sendable, Hashable {
    /// The dotted key: `worker.lease` is `{"worker": {"lease": …}}` in a config file.
    var key: String
    /// The command-line flag, where there is one (secrets have none: a command line is public).
    var flag: String?
    /// The default, as written; nil when unset by default.
    var defaultValue: String?
    var help: String
    /// Never printed in full (a URL's password, tokens).
    var isSecret = false

    var components: [String] { key.split(separator: ".").map(String.init) }

    /// `BATON_WORKER_METRICS_PORT` for `worker.metrics-port`.
    var environmentVariable: String {
        "BATON_" + key.uppercased().map { $0.isLetter || $0.isNumber ? $0 : "_" }.map(String.init).joined()
    }
}

extension Setting {
    static let config = Setting(
        key: "config", flag: "--config", help: "A JSON or YAML file of settings (read below flags and the environment)."
    )

    static let databaseURL = Setting(
        key: "database.url", flag: "--database-url",
        help:
            "PostgreSQL, as libpq reads it: `postgres://user:password@h1:5432,h2:5432/db?sslmode=require` (several hosts tried in order, `target_session_attrs` default `read-write`) or `host=… dbname=…`; `DATABASE_URL` is read too.",
        isSecret: true)
    static let databaseSchema = Setting(
        key: "database.schema", flag: "--schema", defaultValue: "baton",
        help: "The PostgreSQL schema of Baton's tables (or `?schema=` in the URL).")
    static let databasePoolSize = Setting(
        key: "database.pool-size", flag: "--pool-size", defaultValue: "20",
        help: "Connections in the pool, per process (LISTEN takes one more).")
    static let databaseListenURL = Setting(
        key: "database.listen-url", flag: "--listen-url",
        help:
            "Where the LISTEN connection goes, when the pool goes through PgBouncer in transaction mode: PostgreSQL itself (same user and database).",
        isSecret: true)
    static let databaseSSLMode = Setting(
        key: "database.sslmode", flag: "--sslmode",
        help:
            "TLS as libpq means it (default `prefer`): `disable`, `allow`, `prefer`, `require`, `verify-ca`, `verify-full` (else the URL's `?sslmode=`, else `PGSSLMODE`)."
    )
    static let databaseSSLRootCert = Setting(
        key: "database.sslrootcert", flag: "--sslrootcert",
        help:
            "PEM file of the CAs the server's certificate is checked against, or `system` (else `?sslrootcert=`, `PGSSLROOTCERT`, `~/.postgresql/root.crt`)."
    )
    static let databaseSSLCert = Setting(
        key: "database.sslcert", flag: "--sslcert",
        help: "Client certificate, PEM (else `?sslcert=`, `PGSSLCERT`, `~/.postgresql/postgresql.crt`).")
    static let databaseSSLKey = Setting(
        key: "database.sslkey", flag: "--sslkey",
        help:
            "The client certificate's key, PEM, mode 0600 (else `?sslkey=`, `PGSSLKEY`, `~/.postgresql/postgresql.key`)."
    )

    static let workerQueues = Setting(
        key: "worker.queues", flag: "--queue", defaultValue: "default",
        help:
            "Queues to serve, each `NAME` or `NAME:CONCURRENCY` (flag repeatable; comma-separated in the environment).")
    static let workerConcurrency = Setting(
        key: "worker.concurrency", flag: "--concurrency", defaultValue: "10",
        help: "Stages run at once per queue, where the queue does not say.")
    static let workerLease = Setting(
        key: "worker.lease", flag: "--lease", defaultValue: "15s",
        help: "A worker silent this long is presumed dead and its stages are rescued (heartbeat every third of it).")
    static let workerGrace = Setting(
        key: "worker.grace", flag: "--grace", defaultValue: "30s",
        help: "On SIGTERM/SIGINT, running stages get this long to finish before they are put back.")
    static let workerRetention = Setting(
        key: "worker.retention", flag: "--retention", defaultValue: "24h",
        help: "Completed jobs are deleted this long after they finish.")
    static let workerRetentionDiscarded = Setting(
        key: "worker.retention-discarded", flag: "--retention-discarded", defaultValue: "14d",
        help: "Discarded jobs (the dead letters) are deleted this long after they failed.")
    static let workerRetentionCancelled = Setting(
        key: "worker.retention-cancelled", flag: "--retention-cancelled", defaultValue: "14d",
        help: "Cancelled jobs are deleted this long after they were cancelled.")
    static let workerRetentionAudit = Setting(
        key: "worker.retention-audit", flag: "--retention-audit", defaultValue: "90d",
        help: "Audit events (who changed what through the API, CLI or dashboard) are deleted this long after.")
    static let workerDiscardWebhook = Setting(
        key: "worker.discard-webhook", flag: "--discard-webhook",
        help: "POST each job this worker discards here, as JSON (`{\"event\": \"job.discarded\", …}`).")
    static let workerMetricsPort = Setting(
        key: "worker.metrics-port", flag: "--metrics-port",
        help: "Serve `/metrics` and `/healthz` on this port (off by default).")
    static let workerMetricsHost = Setting(
        key: "worker.metrics-host", flag: "--metrics-host", defaultValue: "0.0.0.0",
        help: "Address of the worker's metrics listener.")

    static let apiHost = Setting(
        key: "api.host", flag: "--host", defaultValue: "127.0.0.1", help: "Address the HTTP API listens on.")
    static let apiPort = Setting(
        key: "api.port", flag: "--port", defaultValue: "8080", help: "Port of the HTTP API (0: any free port).")
    static let apiMaxBody = Setting(
        key: "api.max-body", flag: "--max-body", defaultValue: "1048576",
        help: "Largest request body accepted, in bytes.")
    static let apiMaxWait = Setting(
        key: "api.max-wait", flag: "--max-wait", defaultValue: "5m",
        help: "The longest a `?wait=` holds a request (longer waits are cut to this).")
    static let apiHeaderTimeout = Setting(
        key: "api.header-timeout", defaultValue: "10s",
        help: "A client that has not sent its request's head this long after connecting is disconnected.")
    static let apiBodyTimeout = Setting(
        key: "api.body-timeout", defaultValue: "60s",
        help: "A request whose body has not ended this long after its head is cut off (and not answered as a failure).")
    static let apiIdleTimeout = Setting(
        key: "api.idle-timeout", defaultValue: "75s",
        help: "A kept-alive connection with no next request this long is closed.")
    static let apiMaxConnections = Setting(
        key: "api.max-connections", defaultValue: "1024",
        help: "Connections open at once; more wait in the listen backlog until one closes.")
    static let apiMetricsOpen = Setting(
        key: "api.metrics-open", flag: "--metrics-open", defaultValue: "false",
        help: "Serve the API's `/metrics` without a token.")
    static let apiTokens = Setting(
        key: "api.tokens",
        help:
            "Bearer tokens, `role:token,…` (roles admin, enqueue, read; 16+ characters each), named `admin-1`, `read-2`…",
        isSecret: true)
    static let apiToken = Setting(
        key: "api.token", help: "A single admin token, when `api.tokens` is not set.", isSecret: true)
    static let apiTokensFile = Setting(
        key: "api.tokens-file",
        help:
            "A file of named tokens, one per line: `name role[:queue,…] secret [only=operation,…]`; read again on SIGHUP. Instead of `api.tokens`."
    )
    static let apiFingerprintKeys = Setting(
        key: "api.fingerprint-keys",
        help:
            "HMAC keys of the token fingerprints stored with jobs, newest first, comma-separated (32+ characters each); the database's own key after them.",
        isSecret: true)

    static let httpAllow = Setting(
        key: "http.allow",
        help: "Hosts the `http` task may call: patterns (`*.example.com`) and CIDRs, comma-separated; all by default.")
    static let httpDeny = Setting(
        key: "http.deny",
        help: "Hosts it may not (link-local and cloud metadata addresses are always denied).")
    static let httpTLS = Setting(
        key: "http.tls",
        help: "Private CAs and client certificates by host, comma-separated: "
            + "`*.corp.example ca=FILE cert=FILE key=FILE` (PEM files, read at start).")

    static let logLevel = Setting(
        key: "log.level", flag: "--log-level", defaultValue: "info",
        help: "trace, debug, info, notice, warning, error or critical.")
    static let logFormat = Setting(
        key: "log.format", flag: "--log-format", defaultValue: "text on a terminal, else logfmt",
        help: "`text`, `logfmt` or `json` (one object per line), on standard error.")

    /// Every setting, in the order documented.
    static let all: [Setting] = [
        config, databaseURL, databaseSchema, databasePoolSize, databaseListenURL, databaseSSLMode, databaseSSLRootCert,
        databaseSSLCert,
        databaseSSLKey,
        workerQueues, workerConcurrency, workerLease, workerGrace, workerRetention,
        workerRetentionDiscarded, workerRetentionCancelled, workerRetentionAudit, workerDiscardWebhook,
        workerMetricsPort,
        workerMetricsHost,
        apiHost, apiPort, apiMaxBody, apiMaxWait, apiHeaderTimeout, apiBodyTimeout, apiIdleTimeout, apiMaxConnections,
        apiMetricsOpen, apiTokens, apiToken, apiTokensFile,
        apiFingerprintKeys,
        httpAllow, httpDeny, httpTLS, logLevel, logFormat,
    ]

    /// docs/operations.md's table of settings, in Markdown.
    static var referenceTable: String {
        var lines = [
            "| Key (config file) | Environment | Flag | Default | |", "| --- | --- | --- | --- | --- |",
        ]
        for setting in all {
            let key = setting.key == "config" ? "—" : "`\(setting.key)`"
            lines.append(
                "| \(key) | `\(setting.environmentVariable)` | \(setting.flag.map { "`\($0)`" } ?? "—") | "
                    + "\(setting.defaultValue.map { $0.contains(" ") ? $0 : "`\($0)`" } ?? "—") | \(setting.help) |")
        }
        return lines.joined(separator: "\n")
    }
}
