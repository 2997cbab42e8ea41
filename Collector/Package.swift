// swift-tools-version:6.0
// The collector: receives seed 000 uploads and seed 003 API logs, stores them (SQLite by default),
// groups crashes into issues and serves a dashboard. A nested package so that apps linking the
// runtime never resolve a server's dependencies.
import PackageDescription

let package = Package(
    name: "swift-crash-collector",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "crash-collector", targets: ["CrashCollector"]),
        .library(name: "Collector", targets: ["Collector"]),
    ],
    dependencies: [
        .package(name: "swift-crash-reporting", path: ".."),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // Already in the graph through Hummingbird; named because the collector imports them.
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        // --database postgres://…: several collectors share one database.
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),   // postgres-nio's, for sslmode=require
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),     // postgres-nio's: SHA-256 of idempotency scopes
        // The default store's SQLite: a WAL pool, cached statements, versioned migrations. It links the
        // system's libsqlite3 (Debian libsqlite3-dev) through its GRDBSQLite system library.
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
    ],
    targets: [
        // The system's zlib, to gunzip request bodies (named apart from the root package's CZlib).
        .systemLibrary(name: "CCollectorZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        // The system's libqrencode (Debian libqrencode-dev): the Connect App modal's QR code.
        .systemLibrary(name: "CQREncode", pkgConfig: "libqrencode", providers: [.apt(["libqrencode-dev"])]),
        .target(
            name: "Collector",
            dependencies: [
                "CCollectorZlib", "CQREncode",
                .product(name: "CrashReportModel", package: "swift-crash-reporting"),
                // Symbolication on arrival of records sent raw (stripped binaries): libdw, a symbol store, debuginfod.
                .product(name: "CrashSymbolication", package: "swift-crash-reporting"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),   // MaximumAvailableConnections
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),   // NIOThreadPool: uploads' work off the cooperative pool
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        .executableTarget(
            name: "CrashCollector",
            dependencies: [
                "Collector",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "CollectorTests",
            dependencies: ["Collector", "CCollectorZlib", "CrashCollector", .product(name: "CrashReportModel", package: "swift-crash-reporting"),
                           .product(name: "Logging", package: "swift-log"),
                           .product(name: "Hummingbird", package: "hummingbird"),   // the alert webhook's listener
                           .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                           .product(name: "PostgresNIO", package: "postgres-nio"),
                           .product(name: "GRDB", package: "GRDB.swift"),   // databases made as earlier collectors made them
                           .product(name: "Crypto", package: "swift-crypto")]   // the CSP's script hash, checked
        ),
    ]
)

for target in package.targets where target.type != .system {
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    target.swiftSettings = settings
}
