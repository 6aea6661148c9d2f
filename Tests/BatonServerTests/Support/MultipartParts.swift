import Foundation

/// A strict reader of `multipart/form-data`, for tests: the parts between the boundary lines.
enum MultipartParts {
    struct Part: Equatable {
        var disposition: String?
        var contentType: String?
        var bytes: [UInt8]
    }

    static func parts(of body: [UInt8], boundary: String) -> [Part]? {
        let delimiter = Array("--\(boundary)".utf8)
        func find(_ needle: [UInt8], from start: Int) -> Int? {
            guard body.count >= needle.count, start <= body.count - needle.count else { return nil }
            return (start...(body.count - needle.count)).first { body[$0..<$0 + needle.count].elementsEqual(needle) }
        }
        guard body.starts(with: delimiter + Array("\r\n".utf8)) else { return nil }
        var parts: [Part] = []
        var at = delimiter.count + 2
        while true {
            guard let headersEnd = find(Array("\r\n\r\n".utf8), from: at) else { return nil }
            var part = Part(bytes: [])
            for line in String(decoding: body[at..<headersEnd], as: UTF8.self).components(separatedBy: "\r\n") {
                let pair = line.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                guard pair.count == 2 else { return nil }
                switch pair[0].lowercased() {
                case "content-disposition": part.disposition = pair[1]
                case "content-type": part.contentType = pair[1]
                default: return nil
                }
            }
            guard let end = find(Array("\r\n".utf8) + delimiter, from: headersEnd + 4) else { return nil }
            part.bytes = Array(body[(headersEnd + 4)..<end])
            parts.append(part)
            at = end + 2 + delimiter.count
            if body[at...].elementsEqual(Array("--\r\n".utf8)) { return parts }
            guard body[at...].starts(with: Array("\r\n".utf8)) else { return nil }
            at += 2
        }
    }
}
