import BatonHTTPTask
import Testing

/// `MultipartForm` read back by a reader of RFC 7578's shape.
struct MultipartFormTests {
    @Test func partsComeBackByteForByte() throws {
        let binary: [UInt8] = (0...255).map(UInt8.init) + Array("\r\n--not-the-boundary\r\n".utf8)
        let form = MultipartForm([
            .init(name: "purpose", bytes: Array("invoice".utf8)),
            .init(name: "file", filename: "a \"quoted\"\r\nname.bin", contentType: "application/pdf", bytes: binary),
            .init(name: "empty", filename: "e.txt", contentType: "text/plain", bytes: []),
        ])
        #expect(form.contentType == "multipart/form-data; boundary=\(form.boundary)")
        let parts = try #require(MultipartParts.parts(of: form.bytes, boundary: form.boundary))
        #expect(parts.count == 3)
        #expect(parts[0].disposition == #"form-data; name="purpose""#)
        #expect(parts[0].contentType == nil)
        #expect(parts[0].bytes == Array("invoice".utf8))
        #expect(parts[1].disposition == #"form-data; name="file"; filename="a %22quoted%22%0D%0Aname.bin""#)
        #expect(parts[1].contentType == "application/pdf")
        #expect(parts[1].bytes == binary)
        #expect(parts[2].bytes == [])
    }

    @Test func theBoundaryIsInNoPart() {
        for _ in 0..<50 {
            let form = MultipartForm([.init(name: "a", bytes: Array("baton-".utf8))])
            #expect(form.boundary.hasPrefix("baton-"))
            #expect(form.boundary.count > 20)
        }
        #expect(MultipartForm.bytes(base64: "aGVs\nbG8=\r\n") == Array("hello".utf8))
        #expect(MultipartForm.bytes(base64: "not base64!") == nil)
    }
}
