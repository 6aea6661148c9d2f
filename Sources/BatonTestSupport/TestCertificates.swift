import Foundation

/// Certificates for TLS tests, made with openssl in a fresh directory: a CA (`ca.crt`, `ca.key`),
/// CAs that signed nothing, and leaves the CA signed, each `NAME.crt` and `NAME.key` (EC P-256,
/// valid two days, keys mode 0600).
public struct TestCertificates: Sendable {
    /// A certificate the CA signs: its file name, common name and subjectAltName
    /// (`DNS:localhost,IP:127.0.0.1`).
    public struct Leaf: Sendable {
        public var name: String
        public var commonName: String
        public var subjectAltName: String

        public init(_ name: String, commonName: String, subjectAltName: String) {
            self.name = name
            self.commonName = commonName
            self.subjectAltName = subjectAltName
        }
    }

    public let directory: URL

    public func file(_ name: String) -> URL { directory.appending(path: name) }
    public func path(_ name: String) -> String { file(name).path }

    public static func make(leaves: [Leaf], otherCAs: [String] = []) async throws -> TestCertificates {
        let directory = FileManager.default.temporaryDirectory.appending(path: "baton-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        func quoted(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'" }
        var script = #"""
            set -e
            cd "$1"
            ca() {
                openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
                    -subj "/CN=$2" -keyout "$1.key" -out "$1.crt" \
                    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
            }
            leaf() {
                openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=$2" \
                    -keyout "$1.key" -out "$1.csr"
                printf 'basicConstraints=CA:FALSE\nsubjectAltName=%s\n' "$3" > "$1.ext"
                openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
                    -out "$1.crt" -extfile "$1.ext"
            }
            ca ca "Baton test CA"

            """#
        for name in otherCAs { script += "ca \(quoted(name)) \(quoted("A CA that signed nothing here: \(name)"))\n" }
        for leaf in leaves {
            script += "leaf \(quoted(leaf.name)) \(quoted(leaf.commonName)) \(quoted(leaf.subjectAltName))\n"
        }
        script += "chmod 600 ./*.key\n"
        let run = try await ChildProcess(URL(fileURLWithPath: "/bin/sh"), ["-c", script, "sh", directory.path])
        guard try await run.waitForExit(timeout: .seconds(60)) == 0 else {
            throw TestFailure("openssl: \((try? String(contentsOf: run.errors, encoding: .utf8)) ?? "")")
        }
        return TestCertificates(directory: directory)
    }
}
