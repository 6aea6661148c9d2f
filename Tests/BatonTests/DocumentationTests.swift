import Foundation
import Testing

/// The documentation holds together: the README stays a first hour's read, and every link between
/// the documents (and into the tree) leads somewhere, down to the heading.
@Suite struct DocumentationTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The Markdown files a reader follows links through: the README, `docs/` and `deploy/`.
    static var documents: [String] {
        var paths = ["README.md"]
        for directory in ["docs", "deploy"] {
            let enumerator = FileManager.default.enumerator(atPath: root.appending(path: directory).path)
            while let path = enumerator?.nextObject() as? String {
                if path.hasSuffix(".md") { paths.append("\(directory)/\(path)") }
            }
        }
        return paths.sorted()
    }

    @Test func theReadmeIsShort() throws {
        let lines = try String(contentsOf: Self.root.appending(path: "README.md"), encoding: .utf8)
            .split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count <= 300, "README.md has \(lines.count) lines; reference belongs in docs/")
    }

    @Test func everyRelativeLinkResolves() throws {
        var broken: [String] = []
        var anchorsOf: [String: Set<String>] = [:]
        func anchors(_ path: String) throws -> Set<String> {
            if let known = anchorsOf[path] { return known }
            let found = Self.anchors(in: try String(contentsOf: Self.root.appending(path: path), encoding: .utf8))
            anchorsOf[path] = found
            return found
        }
        var checked = 0
        for document in Self.documents {
            let text = try String(contentsOf: Self.root.appending(path: document), encoding: .utf8)
            let directory = (document as NSString).deletingLastPathComponent
            for match in text.matches(of: /\]\(([^)\s]+)\)/) {
                let target = String(match.1)
                guard target.firstMatch(of: /^[a-z]+:/) == nil else { continue }
                checked += 1
                let parts = target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
                let path =
                    parts[0].isEmpty
                    ? document
                    : ((directory as NSString).appendingPathComponent(String(parts[0])) as NSString)
                        .standardizingPath
                var isDirectory: ObjCBool = false
                guard
                    FileManager.default.fileExists(
                        atPath: Self.root.appending(path: path).path, isDirectory: &isDirectory)
                else {
                    broken.append("\(document): \(target): no such file")
                    continue
                }
                if parts.count == 2, !isDirectory.boolValue, path.hasSuffix(".md"),
                    !(try anchors(path)).contains(String(parts[1]))
                {
                    broken.append("\(document): \(target): no such heading")
                }
            }
        }
        #expect(checked > 50, "links checked: \(checked)")
        #expect(broken.isEmpty, "\(broken.joined(separator: "\n"))")
    }

    /// A code comment that points into the documents (`docs/benchmarks.md#plans-made-once`, where
    /// the figures behind a choice are kept) points at a heading that exists.
    @Test func everyPointerFromTheCodeIntoTheDocsResolves() throws {
        var broken: [String] = []
        var checked = 0
        for directory in ["Sources", "migrations"] {
            let enumerator = FileManager.default.enumerator(atPath: Self.root.appending(path: directory).path)
            while let path = enumerator?.nextObject() as? String {
                guard path.hasSuffix(".swift") || path.hasSuffix(".sql") else { continue }
                let text = try String(
                    contentsOf: Self.root.appending(path: "\(directory)/\(path)"), encoding: .utf8)
                for match in text.matches(of: /(docs\/[a-z0-9_\-]+\.md)#([a-z0-9_\-]+)/) {
                    checked += 1
                    let document = Self.root.appending(path: String(match.1))
                    guard let target = try? String(contentsOf: document, encoding: .utf8) else {
                        broken.append("\(directory)/\(path): \(match.1): no such file")
                        continue
                    }
                    if !Self.anchors(in: target).contains(String(match.2)) {
                        broken.append("\(directory)/\(path): \(match.1)#\(match.2): no such heading")
                    }
                }
            }
        }
        #expect(broken.isEmpty, "\(broken.joined(separator: "\n"))")
        #expect(checked >= 30, "pointers checked: \(checked)")
    }

    /// GitHub's anchors for the headings of `text` (outside code blocks): lower case, punctuation
    /// dropped, spaces as hyphens, a repeated one numbered.
    static func anchors(in text: String) -> Set<String> {
        var anchors: Set<String> = []
        var seen: [String: Int] = [:]
        var fenced = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") { fenced.toggle() }
            guard !fenced, let heading = line.firstMatch(of: /^#+ (.*)$/) else { continue }
            var title = String(heading.1).replacing("`", with: "")
            title = title.replacing(/\[([^\]]*)\]\([^)]*\)/) { String($0.1) }
            let slug = String(
                title.lowercased().unicodeScalars.filter {
                    CharacterSet.alphanumerics.contains($0) || $0 == "-" || $0 == "_" || $0 == " "
                }
            ).replacing(" ", with: "-")
            let count = seen[slug, default: 0]
            anchors.insert(count == 0 ? slug : "\(slug)-\(count)")
            seen[slug] = count + 1
        }
        return anchors
    }
}
