import Foundation

/// A `multipart/form-data` body (RFC 7578) from parts already filled in: the `http` task's
/// `multipart` args once their templates are rendered.
public struct MultipartForm: Sendable {
    public struct Part: Sendable {
        public var name: String
        public var filename: String?
        public var contentType: String?
        public var bytes: [UInt8]

        public init(name: String, filename: String? = nil, contentType: String? = nil, bytes: [UInt8]) {
            self.name = name
            self.filename = filename
            self.contentType = contentType
            self.bytes = bytes
        }
    }

    public let boundary: String
    public let bytes: [UInt8]

    /// The value of the request's `Content-Type`.
    public var contentType: String { "multipart/form-data; boundary=\(boundary)" }

    /// The form, under a random boundary that none of the parts holds.
    public init(_ parts: [Part]) {
        var generator = SystemRandomNumberGenerator()
        while true {
            let boundary = "baton-" + String(generator.next(), radix: 16) + String(generator.next(), radix: 16)
            let marker = Array(boundary.utf8)
            if parts.contains(where: { Self.holds($0.bytes, marker) }) { continue }
            self.init(parts, boundary: boundary)
            return
        }
    }

    init(_ parts: [Part], boundary: String) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(parts.reduce(0) { $0 + $1.bytes.count + 160 })
        for part in parts {
            bytes += Array("--\(boundary)\r\n".utf8)
            var disposition = "Content-Disposition: form-data; name=\"\(Self.quoted(part.name))\""
            if let filename = part.filename { disposition += "; filename=\"\(Self.quoted(filename))\"" }
            bytes += Array((disposition + "\r\n").utf8)
            if let type = part.contentType { bytes += Array("Content-Type: \(type)\r\n".utf8) }
            bytes += Array("\r\n".utf8)
            bytes += part.bytes
            bytes += Array("\r\n".utf8)
        }
        bytes += Array("--\(boundary)--\r\n".utf8)
        self.boundary = boundary
        self.bytes = bytes
    }

    /// A name or file name inside quotes, as browsers write it (WHATWG's multipart/form-data
    /// encoding): `"`, CR and LF percent-encoded.
    static func quoted(_ text: String) -> String {
        text.replacingOccurrences(of: "\"", with: "%22").replacingOccurrences(of: "\r", with: "%0D")
            .replacingOccurrences(of: "\n", with: "%0A")
    }

    private static func holds(_ bytes: [UInt8], _ marker: [UInt8]) -> Bool {
        guard bytes.count >= marker.count else { return false }
        for start in 0...(bytes.count - marker.count) where bytes[start] == marker[0] {
            if bytes[start..<start + marker.count].elementsEqual(marker) { return true }
        }
        return false
    }

    /// Bytes from base64 text; ASCII white space (line breaks of MIME's base64) is skipped.
    public static func bytes(base64 text: String) -> [UInt8]? {
        let compact = String(text.unicodeScalars.filter { !" \t\r\n".unicodeScalars.contains($0) })
        return Data(base64Encoded: compact).map { Array($0) }
    }
}
