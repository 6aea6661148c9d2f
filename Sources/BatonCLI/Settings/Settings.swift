import ArgumentParser
import Baton
import BatonYAML
import Configuration
import Foundation
import Yams

/// The settings of a server command, each read from the first place that has it: the command's
/// flags, then the environment (`BATON_…`), then the config file (`--config` or `BATON_CONFIG`,
/// JSON or YAML), then the default.
///
/// The sources are swift-configuration providers. They are asked one by one rather than through a
/// `ConfigReader`, whose optional reads turn a value of the wrong type into "not set": here a
/// malformed value is an error that names where it came from, and a config file's unknown key
/// (a typo) is refused rather than ignored.
struct Settings: Sendable {
    struct Source: Sendable {
        /// Where a setting came from, for messages: `--lease`, `BATON_WORKER_LEASE`, `worker.lease in baton.yaml`.
        var describe: @Sendable (Setting) -> String
        /// A provider's or a snapshot's value of a key, as a type.
        var value: @Sendable (AbsoluteConfigKey, ConfigType) throws -> ConfigValue?
        /// Put before a setting's key (the environment's keys start with `baton`).
        var prefix: [String] = []

        init(describe: @escaping @Sendable (Setting) -> String, provider: any ConfigProvider, prefix: [String] = []) {
            self.describe = describe
            self.value = { try provider.value(forKey: $0, type: $1).value }
            self.prefix = prefix
        }

        init(describe: @escaping @Sendable (Setting) -> String, snapshot: any ConfigSnapshot) {
            self.describe = describe
            self.value = { try snapshot.value(forKey: $0, type: $1).value }
        }
    }

    private let sources: [Source]
    let environment: [String: String]
    /// The config file's `schedules`, `lanes`, `rate_limits` and `fair_keys`, those it has.
    let sections: SettingsFileSections

    init(sources: [Source], environment: [String: String], sections: SettingsFileSections = SettingsFileSections()) {
        self.sources = sources
        self.environment = environment
        self.sections = sections
    }

    /// The flags given (`flags`), this process's environment, and the config file either names.
    static func load(
        flags: [Setting: ConfigContent], environment: [String: String] = ProcessInfo.processInfo.environment
    ) async throws -> Settings {
        var sources = [
            Source(
                describe: { $0.flag ?? $0.key },
                provider: InMemoryProvider(
                    name: "flags",
                    values: Dictionary(
                        uniqueKeysWithValues: flags.map {
                            (AbsoluteConfigKey($0.key.components), ConfigValue($0.value, isSecret: $0.key.isSecret))
                        }
                    ))),
            Source(
                describe: { $0.environmentVariable },
                provider: EnvironmentVariablesProvider(environmentVariables: environment), prefix: ["baton"]),
        ]
        let early = Settings(sources: sources, environment: environment)
        var sections = SettingsFileSections()
        if let path = try early.string(.config) {
            let file = try await configFile(path)
            sources.append(file.source)
            sections = file.sections
        }
        return Settings(sources: sources, environment: environment, sections: sections)
    }

    /// A JSON or YAML file of settings, its keys checked against the known ones, and its
    /// structured sections (``SettingsFileSections``, read apart).
    private static func configFile(_ path: String) async throws -> (source: Source, sections: SettingsFileSections) {
        let url = URL(fileURLWithPath: path)
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw ValidationError("cannot read the config file \(path): \(error.localizedDescription)")
        }
        let isJSON: Bool
        switch url.pathExtension.lowercased() {
        case "json": isJSON = true
        case "yaml", "yml": isJSON = false
        default: throw ValidationError("config file \(path): name it .json, .yaml or .yml")
        }
        let name = url.lastPathComponent
        // Read here, numbers as written, whether JSON or YAML: `schedules` holds jobs.
        var document: JSONValue
        do {
            if isJSON {
                document = try JSONValue(parsing: data)
            } else {
                document =
                    try Yams.compose(yaml: String(decoding: data, as: UTF8.self)).map(JSONValue.init(yaml:)) ?? .null
            }
        } catch let error as YAMLNotJSON {
            throw ValidationError("config file \(path): \(error)")
        } catch {
            throw ValidationError("config file \(path) is not valid \(isJSON ? "JSON" : "YAML"): \(error)")
        }
        let tree = document.objectTree
        let known = Set(Setting.all.map(\.key)).subtracting(["config"])
        let structured = SettingsFileSections.names
        for key in leafKeys(tree)
        where !known.contains(key) && !structured.contains(where: { key == $0 || key.hasPrefix($0 + ".") }) {
            throw ValidationError(
                "config file \(path): unknown setting \"\(key)\"; settings are \(known.sorted().joined(separator: ", "))"
            )
        }
        // The other settings through swift-configuration's JSON snapshot, which reads scalars and
        // lists of them (a YAML file is written as JSON for it): the structured sections are read apart.
        var sections = SettingsFileSections()
        if case .object(var object) = document {
            sections = SettingsFileSections(taking: &object, file: name)
            document = .object(object)
        }
        let bytes = Array((document == .null ? "{}" : document.jsonText).utf8)
        let snapshot: JSONSnapshot
        do {
            snapshot = try JSONSnapshot(data: bytes.span.bytes, providerName: name, parsingOptions: .default)
        } catch {
            throw ValidationError("config file \(path): \(error)")
        }
        return (Source(describe: { "\($0.key) in \(name)" }, snapshot: snapshot), sections)
    }

    /// The dotted paths of a parsed file's values (an empty file has none).
    private static func leafKeys(_ tree: Any?, prefix: String = "") -> [String] {
        if tree == nil, prefix.isEmpty { return [] }
        guard let object = tree as? [String: Any] else { return [prefix] }
        if object.isEmpty, !prefix.isEmpty { return [prefix] }
        return object.flatMap { key, value in leafKeys(value, prefix: prefix.isEmpty ? key : prefix + "." + key) }
    }

    // MARK: typed reads (nil: not set anywhere; the caller applies the default)

    func string(_ setting: Setting) throws -> String? {
        guard let (content, _) = try lookup(setting, as: [.string]) else {
            if setting == .databaseURL, let url = environment["DATABASE_URL"], !url.isEmpty { return url }
            return nil
        }
        return content.text
    }

    func int(_ setting: Setting) throws -> Int? {
        guard case .int(let number)? = try lookup(setting, as: [.int])?.content else { return nil }
        return number
    }

    func bool(_ setting: Setting) throws -> Bool? {
        guard case .bool(let flag)? = try lookup(setting, as: [.bool])?.content else { return nil }
        return flag
    }

    /// A list: an array in a file, comma-separated in the environment, a repeated flag.
    func list(_ setting: Setting) throws -> [String]? {
        guard let (content, _) = try lookup(setting, as: [.stringArray, .string]) else { return nil }
        let items: [String] =
            switch content {
            case .stringArray(let items): items
            default: content.text.split(separator: ",").map(String.init)
            }
        return items.map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// A duration written `250ms`, `30s`, `10m`, `24h` (a bare number in a file is seconds).
    func duration(_ setting: Setting) throws -> Duration? {
        guard let (content, source) = try lookup(setting, as: [.string, .int, .double]) else { return nil }
        switch content {
        case .int(let seconds): return .seconds(seconds)
        case .double(let seconds): return .seconds(seconds)
        default:
            guard let duration = DurationFormat.parse(content.text) else {
                throw ValidationError("\(source): \"\(content.text)\" is not a duration (write 250ms, 30s, 10m, 24h)")
            }
            return duration
        }
    }

    /// Every setting with its value (secrets hidden) and where it came from, for `baton settings`.
    func described() throws -> [(setting: Setting, value: String, source: String)] {
        try Setting.all.map { setting in
            let found = try lookup(setting, as: [.string, .int, .double, .bool, .stringArray])
            guard let (content, source) = found else {
                if setting == .databaseURL, environment["DATABASE_URL"]?.isEmpty == false {
                    return (setting, "(set)", "DATABASE_URL")
                }
                return (setting, setting.defaultValue ?? "(unset)", "default")
            }
            return (setting, setting.isSecret ? "(set)" : content.text, source)
        }
    }

    /// The first source that has `setting`, as the first of `types` it converts to. A source that
    /// has it in none of them is an error naming the source; an empty string counts as unset.
    private func lookup(_ setting: Setting, as types: [ConfigType]) throws -> (content: ConfigContent, source: String)?
    {
        for source in sources {
            let key = AbsoluteConfigKey(source.prefix + setting.components)
            var failure: (any Error)?
            for type in types {
                do {
                    guard let value = try source.value(key, type) else { break }
                    if case .string(let text) = value.content, text.isEmpty { break }
                    return (value.content, source.describe(setting))
                } catch {
                    failure = failure ?? error
                }
            }
            if failure != nil {
                throw ValidationError("\(source.describe(setting)): expected \(Self.expected(types.first!))")
            }
        }
        return nil
    }

    private static func expected(_ type: ConfigType) -> String {
        switch type {
        case .int: "a whole number"
        case .bool: "true or false"
        case .stringArray: "a list"
        default: "a string"
        }
    }
}

extension ConfigContent {
    /// The value as written: a list comma-separated.
    fileprivate var text: String {
        switch self {
        case .string(let text): text
        case .int(let number): String(number)
        case .double(let number): String(number)
        case .bool(let flag): String(flag)
        case .stringArray(let items): items.joined(separator: ",")
        default: "\(self)"
        }
    }
}

/// The flags a group of options contributes to `Settings` (only those given).
protocol SettingFlags {
    var flags: [Setting: ConfigContent] { get }
}

extension Dictionary where Key == Setting, Value == ConfigContent {
    /// Adds `value` under `setting` when it was given.
    mutating func add(_ setting: Setting, _ value: ConfigContent?) {
        if let value { self[setting] = value }
    }
}

extension JSONValue {
    /// Objects as `[String: Any]` and anything else as itself: the shape `leafKeys` walks.
    fileprivate var objectTree: Any {
        guard case .object(let fields) = self else { return self }
        return fields.mapValues(\.objectTree)
    }
}
