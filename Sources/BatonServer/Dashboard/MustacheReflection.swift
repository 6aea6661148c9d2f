import Mustache

/// A view reflected once for swift-mustache.
///
/// swift-mustache 2.1 finds `{{name}}` in a value that is not a `MustacheParent` by reflecting it
/// anew on every look-up (`Mirror(reflecting:)`, then every field's label and value, to keep the
/// one named). On Linux each field's value costs a look-up of its type by mangled name, so a page of
/// a few hundred rows spent most of its time there, far more than in its queries (`perf record` on
/// `baton serve`, docs/benchmarks.md#pages). This reflects each view once, fields into a dictionary,
/// nested views and arrays of them alike, and hands the dictionary to the template.
///
/// Views hold text, numbers, flags, optionals, arrays and other views (`struct`s): those are what
/// this turns into what swift-mustache reads. An optional that is nil is left out, as swift-mustache
/// leaves it out (a look-up then climbs to the enclosing view). `DashboardTests` renders every page
/// through it.
final class ReflectedView: MustacheParent {
    private var fields: [String: Any] = [:]

    init(_ value: Any) {
        for child in Mirror(reflecting: value).children {
            guard let label = child.label, let present = Self.unwrapped(child.value) else { continue }
            fields[label] = Self.reflected(present)
        }
    }

    func child(named name: String) -> Any? { fields[name] }

    /// `value` as swift-mustache is to read it: views reflected, arrays element by element.
    static func reflected(_ value: Any) -> Any {
        switch value {
        case is String, is Int, is Bool, is Double: return value
        default: break
        }
        let mirror = Mirror(reflecting: value)
        switch mirror.displayStyle {
        case .struct, .class: return ReflectedView(value)
        case .collection: return mirror.children.compactMap { unwrapped($0.value).map(reflected) }
        default: return value
        }
    }

    /// The value an optional holds, nil for none; any other value as it is.
    private static func unwrapped(_ value: Any) -> Any? {
        let mirror = Mirror(reflecting: value)
        guard mirror.displayStyle == .optional else { return value }
        return mirror.children.first.map { unwrapped($0.value) } ?? nil
    }
}
