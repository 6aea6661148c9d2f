import Foundation
import NIOSSL
import PostgresNIO

/// How Baton's connections to PostgreSQL use TLS, with libpq's meaning of each setting, so that a
/// URL that works with `psql` works with Baton (`DatabaseTLSTests` compare the two on a real
/// server, mode by mode).
///
/// - `sslmode`: `disable` (never), `allow` (plain first, TLS if the server refuses plain),
///   `prefer` (TLS if the server offers it, else plain; the default), `require` (TLS or nothing),
///   `verify-ca` (TLS, the server's chain checked against `sslrootcert`), `verify-full` (also its
///   host name).
/// - `sslrootcert`: a PEM file of trusted CAs, or `system` for the system's (then the default mode
///   is `verify-full` and a weaker one is refused, as in libpq 16). By default
///   `~/.postgresql/root.crt` if it exists. When there is a root certificate, every mode that uses
///   TLS checks the chain, as libpq does (so `require` with `sslrootcert` is `verify-ca`).
/// - `sslcert`, `sslkey`: a client certificate and its key, sent in every mode that uses TLS (for
///   `clientcert=verify-ca|verify-full` in `pg_hba.conf`). By default `~/.postgresql/postgresql.crt`
///   and `.key` if they exist. The key must not be readable by group or others (0600; 0640 when
///   owned by root), as libpq requires.
///
/// Unlike libpq, the two fallbacks (`allow`: plain refused, then TLS; `prefer`: TLS handshake
/// failed, then plain) are decided once, by ``DatabaseConfiguration/checkConnection(logger:)``
/// when a process starts, not again for every connection of its pool. Over a Unix socket TLS is not
/// used, as with libpq. Files named but unreadable or malformed are refused at once, naming the
/// setting and the file (libpq would skip a missing `sslrootcert` in the modes that do not need it).
public struct DatabaseTLS: Sendable {
    public enum Mode: String, Sendable, CaseIterable {
        case disable, allow, prefer, require
        case verifyCA = "verify-ca"
        case verifyFull = "verify-full"
    }

    /// `sslmode`.
    public let mode: Mode
    /// `sslrootcert`: a PEM file, or `system`; nil for none.
    public let rootCertificate: String?
    /// `sslcert` and `sslkey`: nil for none.
    public let certificate: String?
    public let key: String?

    /// What a connection does first, and what it does if that fails in the way libpq retries.
    private(set) var first: Attempt
    private(set) var fallback: Attempt?

    enum Attempt: Sendable {
        case plain
        /// TLS if the server offers it, plain if it does not.
        case prefer(TLSConfiguration)
        case require(TLSConfiguration)
    }

    /// Reads the settings as libpq would: `mode` nil is `prefer` (`verify-full` with
    /// `sslrootcert=system`); files left nil are looked for under `home`'s `.postgresql`.
    /// Throws, naming the setting and the file, when a file cannot be read or used.
    public init(
        mode: Mode? = nil, rootCertificate: String? = nil, certificate: String? = nil, key: String? = nil,
        home: String? = ProcessInfo.processInfo.environment["HOME"]
    ) throws(ConfigurationError) {
        let system = rootCertificate == "system"
        let mode = mode ?? (system ? .verifyFull : .prefer)
        self.mode = mode
        self.rootCertificate = rootCertificate
        self.certificate = certificate
        self.key = key
        guard mode != .disable else {
            (first, fallback) = (.plain, nil)
            return
        }
        if system, mode != .verifyFull {
            throw ConfigurationError(
                "sslmode=\(mode.rawValue) may not be used with sslrootcert=system: use sslmode=verify-full")
        }

        var configuration = TLSConfiguration.makeClientConfiguration()
        let defaults = home.map { URL(fileURLWithPath: $0).appending(path: ".postgresql").path }
        // The trusted roots: named, or the default file if it is there.
        let rootFile = rootCertificate ?? defaults.map { "\($0)/root.crt" }.flatMap(Self.existing)
        if system {
            configuration.trustRoots = .default
        } else if let rootFile {
            configuration.trustRoots = .certificates(try Self.certificates(rootFile, setting: "sslrootcert"))
        } else if mode == .verifyCA || mode == .verifyFull {
            throw ConfigurationError(
                "sslmode=\(mode.rawValue) needs the CA to check the server against: set sslrootcert to its PEM file"
                    + " (or to system for the system's), or create \(defaults.map { "\($0)/root.crt" } ?? "~/.postgresql/root.crt")"
            )
        }
        configuration.certificateVerification =
            switch mode {
            case .verifyFull: .fullVerification
            case .verifyCA: .noHostnameVerification
            default: system || rootFile != nil ? .noHostnameVerification : .none
            }

        // The client certificate: named, or the default pair if its certificate is there.
        let certificateFile = certificate ?? defaults.map { "\($0)/postgresql.crt" }.flatMap(Self.existing)
        if let certificateFile {
            let keyFile = key ?? defaults.map { "\($0)/postgresql.key" } ?? "postgresql.key"
            let chain = try Self.certificates(certificateFile, setting: "sslcert")
            configuration.certificateChain = chain.map { .certificate($0) }
            configuration.privateKey = .privateKey(try Self.privateKey(keyFile))
        } else if let key {
            throw ConfigurationError("sslkey \(key) is set but sslcert is not: set both, or neither")
        }
        // Made once here so that a key that does not match its certificate is refused now.
        do {
            _ = try NIOSSLContext(configuration: configuration)
        } catch {
            throw ConfigurationError("sslcert/sslkey cannot be used together (\(error))")
        }

        switch mode {
        case .disable: (first, fallback) = (.plain, nil)
        case .allow: (first, fallback) = (.plain, .require(configuration))
        case .prefer: (first, fallback) = (.prefer(configuration), .plain)
        case .require, .verifyCA, .verifyFull: (first, fallback) = (.require(configuration), nil)
        }
    }

    /// These settings with `first` tried and found wanting: the fallback becomes the only attempt.
    func fallingBack() -> DatabaseTLS? {
        guard let fallback else { return nil }
        var copy = self
        copy.first = fallback
        copy.fallback = nil
        return copy
    }

    // MARK: Files

    private static func existing(_ path: String) -> String? {
        FileManager.default.fileExists(atPath: path) ? path : nil
    }

    private static func read(_ path: String, setting: String) throws(ConfigurationError) -> [UInt8] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw ConfigurationError("\(setting) \(path): cannot read it: no such file")
        }
        guard !isDirectory.boolValue, let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError(
                "\(setting) \(path): cannot read it: \(isDirectory.boolValue ? "a directory" : "permission denied")")
        }
        return Array(data)
    }

    private static func certificates(_ path: String, setting: String) throws(ConfigurationError) -> [NIOSSLCertificate]
    {
        let bytes = try read(path, setting: setting)
        guard let certificates = try? NIOSSLCertificate.fromPEMBytes(bytes), !certificates.isEmpty else {
            throw ConfigurationError("\(setting) \(path): not a PEM certificate file")
        }
        return certificates
    }

    private static func privateKey(_ path: String) throws(ConfigurationError) -> NIOSSLPrivateKey {
        var status = stat()
        if stat(path, &status) == 0 {
            // libpq's rule: 0600 or less when owned by the user, 0640 or less when owned by root.
            let allowed: mode_t = status.st_uid == 0 ? 0o640 : 0o600
            if status.st_mode & 0o777 & ~allowed != 0 {
                throw ConfigurationError(
                    "sslkey \(path): readable by others (mode \(String(status.st_mode & 0o777, radix: 8))): chmod 600 it"
                )
            }
        }
        let bytes = try read(path, setting: "sslkey")
        guard let key = try? NIOSSLPrivateKey(bytes: bytes, format: .pem) else {
            throw ConfigurationError("sslkey \(path): not a PEM private key (an encrypted key is not supported)")
        }
        return key
    }

}
