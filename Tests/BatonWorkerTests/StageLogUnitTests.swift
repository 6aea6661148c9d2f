import Foundation
import Logging
import Testing

@testable import BatonWorker

/// ``StageLog`` and its lines, without a database.
struct StageLogUnitTests {
    @Test func aLineSaysWhenWhatAndItsKeysInOrder() {
        #expect(StageLogHandler.time(Date(timeIntervalSince1970: 86_400 * 3 + 3_723.045)) == "01:02:03.045")
        #expect(StageLogHandler.time(Date(timeIntervalSince1970: 59.9)) == "00:00:59.900")
        let log = StageLog()
        var logger = log.logger(over: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        logger[metadataKey: "job"] = "7"
        logger.debug("fetched", metadata: ["status": "200", "bytes": "512"])
        let line = log.text ?? ""
        #expect(line.hasSuffix(" debug fetched bytes=512 status=200"), "\(line)")
        #expect(!line.contains("job="), "the attempt's own keys are where it is kept")
    }

    @Test func theLast64KiBAreKeptWithANoteOfWhatWasCut() {
        let log = StageLog()
        #expect(log.text == nil)
        let line = String(repeating: "x", count: 1023)
        for _ in 0..<100 { log.append(line) }
        let text = log.text ?? ""
        #expect(
            text.hasPrefix("[36 earlier lines (36864 bytes) cut: the last 64 KiB are kept]\n"), "\(text.prefix(80))")
        #expect(text.utf8.count - text.prefix { $0 != "\n" }.utf8.count - 1 == 64 * 1024 - 1)
    }
}
