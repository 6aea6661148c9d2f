import BatonTestParallelism

/// How many tests Swift Testing runs at once in this process: bounded before it starts
/// (`Sources/BatonTestParallelism/parallelism.c` says why), unless the caller's environment
/// sets `SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH` itself.
public enum TestParallelism {
    public static var width: Int { Int(baton_test_parallelism_width()) }
}
