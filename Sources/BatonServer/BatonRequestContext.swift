import Hummingbird
import Logging

/// The request context of the control plane: Hummingbird's core storage and nothing else; the
/// caller is resolved per operation (see `AccessMiddleware`).
struct BatonRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
    }
}
