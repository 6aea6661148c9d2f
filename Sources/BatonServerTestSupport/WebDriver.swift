import AsyncHTTPClient
import Baton
import BatonTestSupport
import Foundation
import LocalPostgres
import NIOCore
import NIOHTTP1
import Testing

/// A real browser for the dashboard's tests: Debian's `chromium`, headless, driven by its
/// `chromedriver` over the W3C WebDriver protocol (JSON over HTTP on loopback). `.ci/run`
/// installs both; where they are missing the browser tests are skipped, unless
/// `BATON_REQUIRE_BROWSER=1` (set by CI) makes that a failure.
package final class Browser: Sendable {
    package static let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }
    package static let chromedriver = ["/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }
    /// Whether the browser tests can run here (or must: in CI a missing browser fails them).
    package static let isAvailable =
        (chromium != nil && chromedriver != nil) || ProcessInfo.processInfo.environment["BATON_REQUIRE_BROWSER"] == "1"

    private let driver: ChildProcess
    private let base: String
    private let session: String

    private init(driver: ChildProcess, base: String, session: String) {
        (self.driver, self.base, self.session) = (driver, base, session)
    }

    /// Runs `body` with a fresh headless browser window of `width`×`height`, then closes it.
    package static func with<T>(
        width: Int = 1280, height: Int = 900, _ body: (Browser) async throws -> T
    ) async throws -> T {
        guard let chromium, let chromedriver else {
            throw TestFailure(
                "the browser tests need Debian's chromium and chromium-driver (apt-get install chromium chromium-driver)"
            )
        }
        let port = try LocalPostgres.freePort()
        let driver = try await ChildProcess(
            URL(fileURLWithPath: chromedriver), ["--port=\(port)", "--allowed-ips=127.0.0.1"])
        let base = "http://127.0.0.1:\(port)"
        do {
            try await eventually("chromedriver to answer") {
                guard driver.isRunning else { throw TestFailure("chromedriver exited: \(driver.standardError)") }
                let status = try? await call(.GET, base + "/status")
                return status?["value"]?["ready"] == true
            }
            let created = try await call(
                .POST, base + "/session",
                [
                    "capabilities": [
                        "alwaysMatch": [
                            "browserName": "chrome",
                            "goog:chromeOptions": [
                                "binary": .string(chromium),
                                "args": [
                                    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                                    "--no-first-run", "--disable-extensions",
                                    .string("--window-size=\(width),\(height)"),
                                ],
                            ],
                            "goog:loggingPrefs": ["browser": "ALL"],
                        ]
                    ]
                ])
            guard let session = created["value"]?["sessionId"]?.stringValue else {
                throw TestFailure("chromedriver made no session: \(created.jsonText)")
            }
            let browser = Browser(driver: driver, base: base, session: session)
            do {
                let result = try await body(browser)
                _ = try? await call(.DELETE, base + "/session/\(session)")
                driver.signal(SIGTERM)
                _ = try? await driver.waitForExit(timeout: .seconds(10))
                return result
            } catch {
                _ = try? await call(.DELETE, base + "/session/\(session)")
                throw error
            }
        } catch {
            driver.signal(SIGKILL)
            _ = try? await driver.waitForExit(timeout: .seconds(10))
            throw error
        }
    }

    // MARK: pages

    package func open(_ url: String) async throws { try await command(.POST, "url", ["url": .string(url)]) }

    package func currentURL() async throws -> String { try await command(.GET, "url")["value"]?.stringValue ?? "" }

    /// Runs `script` in the page (as a function body) and returns what it returns.
    @discardableResult
    package func run(_ script: String, _ arguments: [JSONValue] = []) async throws -> JSONValue {
        try await command(.POST, "execute/sync", ["script": .string(script), "args": .array(arguments)])["value"]
            ?? .null
    }

    /// The text of the first element `selector` finds, as the user sees it; nil if none.
    package func text(_ selector: String) async throws -> String? {
        // Read in one script: a live region may be replaced between finding an element and
        // reading it.
        try await run("return document.querySelector(arguments[0])?.innerText.trim() ?? null", [.string(selector)])
            .stringValue
    }

    /// How many elements `selector` finds.
    package func count(_ selector: String) async throws -> Int {
        try await command(.POST, "elements", ["using": "css selector", "value": .string(selector)])["value"]?.items
            .count ?? 0
    }

    package func click(_ selector: String) async throws {
        guard let element = try await element(selector) else { throw TestFailure("nothing matches \(selector)") }
        try await command(.POST, "element/\(element)/click", [:])
    }

    package func type(_ text: String, into selector: String) async throws {
        guard let element = try await element(selector) else { throw TestFailure("nothing matches \(selector)") }
        try await command(.POST, "element/\(element)/value", ["text": .string(text)])
    }

    /// Accepts the page's `confirm()` dialog.
    package func acceptDialog() async throws { try await command(.POST, "alert/accept", [:]) }

    /// Waits until the text of `selector` satisfies `condition`; returns it.
    @discardableResult
    package func waitForText(
        _ selector: String, timeout: Duration = .seconds(30), _ condition: @escaping (String) -> Bool
    ) async throws -> String {
        var last = "nothing"
        do {
            return try await eventually(timeout: timeout, "\(selector) to read as expected") {
                () async throws -> String? in
                guard let text = try await self.text(selector) else { return nil }
                last = text
                return condition(text) ? text : nil
            }
        } catch {
            throw TestFailure("\(selector) read \(last.debugDescription): \(error)")
        }
    }

    /// The session's cookies, as `name=value` for a `Cookie` header (the HttpOnly one included:
    /// WebDriver reads what scripts cannot).
    package func cookieHeader() async throws -> String {
        let cookies = try await command(.GET, "cookie")["value"]?.items ?? []
        return cookies.compactMap { cookie in
            guard let name = cookie["name"]?.stringValue, let value = cookie["value"]?.stringValue else { return nil }
            return "\(name)=\(value)"
        }.joined(separator: "; ")
    }

    /// A cookie as the browser keeps it (name, value, httpOnly, sameSite, path…).
    package func cookie(named name: String) async throws -> JSONValue? {
        try await command(.GET, "cookie")["value"]?.items.first { $0["name"]?.stringValue == name }
    }

    /// What the page logged to its console at level SEVERE (errors, refused scripts, failed
    /// loads) since the last call.
    package func consoleErrors() async throws -> [String] {
        let entries = try await command(.POST, "se/log", ["type": "browser"])["value"]?.items ?? []
        return entries.filter { $0["level"] == "SEVERE" }.compactMap { $0["message"]?.stringValue }
    }

    /// Light or dark, as the operating system's setting would ask for (`prefers-color-scheme`).
    package func colorScheme(_ scheme: String) async throws {
        try await command(
            .POST, "goog/cdp/execute",
            [
                "cmd": "Emulation.setEmulatedMedia",
                "params": ["features": [["name": "prefers-color-scheme", "value": .string(scheme)]]],
            ])
    }

    package func resize(width: Int, height: Int) async throws {
        try await command(
            .POST, "window/rect", ["width": .number(JSONNumber(width)), "height": .number(JSONNumber(height))])
    }

    /// A PNG of the whole page.
    package func screenshot() async throws -> Data {
        let shot = try await command(
            .POST, "goog/cdp/execute",
            ["cmd": "Page.captureScreenshot", "params": ["captureBeyondViewport": true, "format": "png"]])
        guard let data = shot["value"]?["data"]?.stringValue.flatMap({ Data(base64Encoded: $0) }) else {
            throw TestFailure("no screenshot: \(shot.jsonText)")
        }
        return data
    }

    // MARK: protocol

    private func element(_ selector: String) async throws -> String? {
        let found = try await command(.POST, "elements", ["using": "css selector", "value": .string(selector)])
        return found["value"]?.items.first?["element-6066-11e4-a52e-4f735466cecf"]?.stringValue
    }

    @discardableResult
    private func command(_ method: HTTPMethod, _ path: String, _ body: JSONValue? = nil) async throws -> JSONValue {
        let answer = try await Self.call(method, base + "/session/\(session)/" + path, body)
        if let error = answer["value"]?["error"]?.stringValue {
            throw TestFailure("WebDriver \(path): \(error): \(answer["value"]?["message"]?.stringValue ?? "")")
        }
        return answer
    }

    private static func call(_ method: HTTPMethod, _ url: String, _ body: JSONValue? = nil) async throws -> JSONValue {
        var request = HTTPClientRequest(url: url)
        request.method = method
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: body.jsonText))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        let text = String(buffer: try await response.body.collect(upTo: 64 << 20))
        return (try? JSONValue(parsing: text)) ?? .string(text)
    }
}
