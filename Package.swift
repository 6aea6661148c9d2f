// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "baton",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "Baton", targets: ["Baton"]),
        .library(name: "BatonPostgres", targets: ["BatonPostgres"]),
        .library(name: "BatonWorker", targets: ["BatonWorker"]),
        .library(name: "BatonAPI", targets: ["BatonAPI"]),
        .library(name: "BatonHTTPClient", targets: ["BatonHTTPClient"]),
        .library(name: "BatonServer", targets: ["BatonServer"]),
        .executable(name: "baton", targets: ["BatonCLI"]),
        // The engine measured (`baton-bench`), apart from what operators run.
        .executable(name: "baton-bench", targets: ["BatonBench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // Without its default traits: no swift-configuration, no full Foundation.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1", traits: []),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/x-sheep/swift-property-based", from: "2.0.1"),
        .package(url: "https://github.com/apple/swift-configuration", from: "1.4.0", traits: [.defaults, "YAML"]),
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/apple/swift-openapi-generator", from: "1.14.3"),
        .package(url: "https://github.com/apple/swift-openapi-runtime", from: "1.13.4", traits: []),
        .package(url: "https://github.com/hummingbird-project/swift-openapi-hummingbird", from: "2.1.0"),
        .package(url: "https://github.com/swift-server/swift-openapi-async-http-client", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/swiftlang/swift-subprocess", from: "1.0.2"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache", from: "2.1.1"),
    ],
    targets: [
        .target(name: "Baton", dependencies: [.product(name: "Logging", package: "swift-log")]),
        // The `http` task's contract: its args, templates and expectations (pure, checked at
        // enqueue by the store and the API; run by BatonWorker's `HTTPTask`).
        .target(name: "BatonHTTPTask", dependencies: ["Baton"]),
        .target(
            name: "BatonPostgres",
            dependencies: [
                "Baton",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "_ConnectionPoolModule", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            plugins: ["EmbedMigrations"]
        ),
        // YAML read as JSON, numbers exact: the settings file and the OpenAPI document.
        .target(name: "BatonYAML", dependencies: ["Baton", .product(name: "Yams", package: "Yams")]),
        .executableTarget(
            name: "EmbedTool", dependencies: ["Baton", "BatonYAML", .product(name: "Yams", package: "Yams")]),
        .plugin(name: "EmbedMigrations", capability: .buildTool(), dependencies: ["EmbedTool"]),
        .plugin(name: "EmbedOpenAPI", capability: .buildTool(), dependencies: ["EmbedTool"]),
        .plugin(name: "EmbedDashboard", capability: .buildTool(), dependencies: ["EmbedTool"]),
        .target(
            name: "BatonWorker",
            dependencies: [
                "Baton", "BatonHTTPClient", "BatonHTTPTask", "BatonPostgres",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ]
        ),
        // The control plane's contract: types, server protocol and client generated from
        // openapi.yaml, which is also compiled in as the document `/openapi.json` serves.
        .target(
            name: "BatonAPI",
            dependencies: [
                "Baton", .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
            ],
            plugins: [.plugin(name: "OpenAPIGenerator", package: "swift-openapi-generator"), "EmbedOpenAPI"]
        ),
        // The control plane over HTTP, for Swift services that enqueue without PostgreSQL.
        .target(
            name: "BatonHTTPClient",
            dependencies: [
                "Baton", "BatonAPI",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "OpenAPIAsyncHTTPClient", package: "swift-openapi-async-http-client"),
            ]
        ),
        .target(
            name: "BatonServer",
            dependencies: [
                "Baton", "BatonAPI", "BatonHTTPTask", "BatonPostgres",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "OpenAPIHummingbird", package: "swift-openapi-hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Mustache", package: "swift-mustache"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
            ],
            // The dashboard's templates and assets, compiled in by EmbedDashboard.
            exclude: ["Dashboard/Resources"],
            plugins: ["EmbedDashboard"]
        ),
        .target(
            name: "LocalPostgres",
            dependencies: [
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
        .executableTarget(
            name: "BatonCLI",
            dependencies: [
                "Baton", "BatonAPI", "BatonHTTPClient", "BatonPostgres", "BatonWorker", "BatonServer", "BatonYAML",
                "LocalPostgres",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "Yams", package: "Yams"),
            ]
        ),
        .executableTarget(
            name: "BatonBench",
            dependencies: [
                "Baton", "BatonPostgres", "BatonWorker", "LocalPostgres",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // Bounds how many tests run at once, before Swift Testing starts (see its one file).
        .target(name: "BatonTestParallelism"),
        .target(
            name: "BatonTestSupport",
            dependencies: [
                "BatonPostgres", "BatonTestParallelism", "LocalPostgres",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
        // The control plane on loopback for tests: `withServer`, its tokens and test tasks.
        .target(
            name: "BatonServerTestSupport",
            dependencies: [
                "Baton", "BatonAPI", "BatonPostgres", "BatonServer", "BatonWorker", "BatonTestSupport", "LocalPostgres",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .executableTarget(
            name: "BatonTestWorker",
            dependencies: [
                "Baton", "BatonPostgres", "BatonWorker",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The reliability suite: fault, load and soak scenarios against real processes. Not a
        // product (nothing to install): scripts/reliability.sh builds and runs it.
        .executableTarget(
            name: "BatonReliability",
            dependencies: [
                "Baton", "BatonPostgres", "BatonWorker", "BatonTestSupport", "LocalPostgres",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The README's examples, compiled (and run by ExampleTests) so that they cannot drift.
        .executableTarget(
            name: "BatonQuickStart",
            dependencies: [
                "Baton", "BatonPostgres", "BatonWorker",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Examples/QuickStart"
        ),
        .executableTarget(
            name: "BatonHTTPEnqueue", dependencies: ["BatonAPI", "BatonHTTPClient"], path: "Examples/HTTPEnqueue"),
        .testTarget(
            name: "BatonTests",
            dependencies: [
                "Baton", "BatonHTTPTask", "BatonTestSupport",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        .testTarget(name: "BatonHTTPTaskTests", dependencies: ["Baton", "BatonHTTPTask"]),
        // The `baton` executable, run as a process: its commands, settings and exit codes.
        .testTarget(
            name: "BatonCLITests",
            dependencies: [
                "Baton", "BatonAPI", "BatonPostgres", "BatonTestSupport", "BatonServerTestSupport", "BatonCLI",
                "BatonBench",
                "LocalPostgres",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "BatonAPITests",
            dependencies: [
                "Baton", "BatonAPI", .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
            ]
        ),
        .testTarget(
            name: "BatonPostgresTests",
            dependencies: [
                "Baton", "BatonPostgres", "BatonTestSupport", .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        .testTarget(
            name: "BatonWorkerTests",
            dependencies: [
                "Baton", "BatonPostgres", "BatonWorker", "BatonTestSupport", "BatonTestWorker", "BatonCLI",
                "LocalPostgres",
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        .testTarget(
            name: "BatonServerTests",
            dependencies: [
                "Baton", "BatonAPI", "BatonHTTPClient", "BatonHTTPTask", "BatonPostgres", "BatonServer", "BatonWorker",
                "BatonTestSupport", "BatonServerTestSupport",
                "BatonCLI",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "HummingbirdHTTP2", package: "hummingbird"),
                .product(name: "Mustache", package: "swift-mustache"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "PropertyBased", package: "swift-property-based"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
    ]
)
