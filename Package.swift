// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "baton",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "Baton", targets: ["Baton"]),
        .library(name: "BatonPostgres", targets: ["BatonPostgres"]),
        .library(name: "BatonWorker", targets: ["BatonWorker"]),
        .executable(name: "baton", targets: ["BatonCLI"]),
    ],
    dependencies: [
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
    ],
    targets: [
        .target(name: "Baton", dependencies: [.product(name: "Logging", package: "swift-log")]),
        .target(
            name: "BatonPostgres",
            dependencies: [
                "Baton",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            plugins: ["EmbedMigrations"]
        ),
        .executableTarget(name: "EmbedMigrationsTool"),
        .plugin(name: "EmbedMigrations", capability: .buildTool(), dependencies: ["EmbedMigrationsTool"]),
        .target(
            name: "BatonWorker",
            dependencies: [
                "Baton", "BatonPostgres",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .target(name: "LocalPostgres", dependencies: [.product(name: "Logging", package: "swift-log")]),
        .executableTarget(
            name: "BatonCLI",
            dependencies: [
                "Baton", "BatonPostgres", "BatonWorker", "LocalPostgres",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .target(
            name: "BatonTestSupport",
            dependencies: ["BatonPostgres", "LocalPostgres", .product(name: "PostgresNIO", package: "postgres-nio")]
        ),
        .executableTarget(
            name: "BatonTestWorker",
            dependencies: [
                "Baton", "BatonPostgres", "BatonWorker",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(name: "BatonTests", dependencies: ["Baton"]),
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
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
    ]
)
