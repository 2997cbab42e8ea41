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
        // GET /metrics: counters and histograms through swift-metrics, in Prometheus' text format.
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        // Content-Encoding: gzip bodies, inflated into ByteBuffers with a cap.
        .package(url: "https://github.com/adam-fowler/compress-nio", from: "1.5.0"),
        // The alert webhook's POSTs (an HTTP client on the server's own event loops, not URLSession).
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        // The dashboard's HTML: Mustache templates, escaped by default (decision 0031).
        .package(url: "https://github.com/hummingbird-project/swift-mustache", from: "2.1.1"),
        // The default store's SQLite: a WAL pool, cached statements, versioned migrations. It links the
        // system's libsqlite3 (Debian libsqlite3-dev) through its GRDBSQLite system library.
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
    ],
    targets: [
        // The system's libqrencode (Debian libqrencode-dev): the Connect App modal's QR code.
        .systemLibrary(name: "CQREncode", pkgConfig: "libqrencode", providers: [.apt(["libqrencode-dev"])]),
        .target(
            name: "Collector",
            dependencies: [
                "CQREncode",
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
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "CompressNIO", package: "compress-nio"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Mustache", package: "swift-mustache"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            // Compiled in, so that the binary alone is the collector: GET /openapi.json, the runtime's
            // payload schema it $refs (a symlink to Schemas/diagnostics-payload.schema.json), and the
            // dashboard's templates (decision 0031).
            resources: [.embedInCode("Server/openapi.json"), .embedInCode("Server/diagnostics-payload.schema.json")]
                + ["alert-banner", "connect-modal", "error", "event", "issue", "issues", "layout", "logs", "not-found", "pages", "unauthorized"].map { .embedInCode("Dashboard/Templates/\($0).mustache") }
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
            dependencies: ["Collector", "CrashCollector", .product(name: "CrashReportModel", package: "swift-crash-reporting"),
                           .product(name: "Logging", package: "swift-log"),
                           .product(name: "Hummingbird", package: "hummingbird"),   // the alert webhook's listener
                           .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                           .product(name: "PostgresNIO", package: "postgres-nio"),
                           .product(name: "GRDB", package: "GRDB.swift"),   // databases made as earlier collectors made them
                           .product(name: "Crypto", package: "swift-crypto"),   // the CSP's script hash, checked
                           .product(name: "CompressNIO", package: "compress-nio"),   // gzip'd test bodies
                           .product(name: "NIOCore", package: "swift-nio")]
        ),
    ]
)

for target in package.targets where target.type != .system {
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    target.swiftSettings = settings
}
