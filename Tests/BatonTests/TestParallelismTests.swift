import BatonTestSupport
import Foundation
import Testing

/// The bound on how many tests run at once is in the environment Swift Testing read at start
/// (set by BatonTestSupport's constructor before `main`, unless the caller set one).
@Test func theTestRunnersParallelismIsBounded() {
    let set = ProcessInfo.processInfo.environment["SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH"]
    #expect(set == String(TestParallelism.width))
    #expect(TestParallelism.width >= 1)
}
