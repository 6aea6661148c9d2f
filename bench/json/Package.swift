// swift-tools-version: 6.3
// What Baton's own JSON reader, writer and coders buy over Foundation's, measured with
// ordo-one/benchmark. A package of its own, so that the main package's build does not carry the
// benchmark harness:
//
//   cd bench/json && swift package benchmark
import PackageDescription

let package = Package(
    name: "baton-json-benchmarks",
    platforms: [.macOS(.v14)],
    dependencies: [
        // Through the `baton` link: a path dependency is known by its directory name, which a clone
        // of the repository may not share.
        .package(path: "baton"),
        // Only the malloc interposer: the default ARC runtime interposer is not in the mirror.
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "JSONCoding",
            dependencies: [
                .product(name: "Baton", package: "baton"), .product(name: "BatonAPI", package: "baton"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/JSONCoding",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        )
    ]
)
