import Hummingbird
import Logging

/// The request context of the control plane: Hummingbird's core storage and nothing else; the
/// caller is resolved per route (see `Access`).
public struct BatonRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
    }
}
