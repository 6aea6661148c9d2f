import Baton
import Foundation

/// Who owns a setting (a schedule, a lane's width): a settings file, which replaces what it owns
/// whenever a process reading it starts, or the API (and the CLI and dashboard, through it).
public enum SettingSource: String, Sendable {
    case api, settings
}
