// swift-tools-version:6.0
// Server framework integrations of swift-crash-reporting, and the example servers their tests
// drive: a nested package, so that an app without these frameworks never resolves them (the root
// package's CrashReporting stays Foundation-only). One package for every framework's example, so
// CI builds the shared server stack (SwiftNIO, swift-log, swift-service-lifecycle) once.
import PackageDescription

let package = Package(
    name: "swift-crash-reporting-integrations",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "CrashReportingHummingbird", targets: ["CrashReportingHummingbird"]),
        .library(name: "CrashReportingVapor", targets: ["CrashReportingVapor"]),
        .library(name: "CrashReportingServiceLifecycle", targets: ["CrashReportingServiceLifecycle"]),
        .library(name: "CrashReportingMetrics", targets: ["CrashReportingMetrics"]),
    ],
    dependencies: [
        .package(name: "swift-crash-reporting", path: ".."),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/vapor/vapor", from: "4.122.3"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.3"),
    ],
    targets: [
        // What every framework's middleware shares: the per-request bookkeeping (screen view,
        // request in flight, breadcrumb, rate-limited non-fatal report), traceparent parsing and
        // the current ServiceContext's trace; event-loop heartbeats for hang detection.
        // Framework-free: swift-distributed-tracing and NIOCore only.
        .target(
            name: "CrashReportingServerCore",
            dependencies: [
                .product(name: "CrashReporting", package: "swift-crash-reporting"),
                .product(name: "Instrumentation", package: "swift-distributed-tracing"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        // A RouterMiddleware: a breadcrumb per request, the route as the server's screen view,
        // 5xx answers and thrown errors as non-fatal reports (rate-limited).
        .target(
            name: "CrashReportingHummingbird",
            dependencies: [
                "CrashReportingServerCore",
                .product(name: "CrashReporting", package: "swift-crash-reporting"),
                .product(name: "Hummingbird", package: "hummingbird"),
            ]
        ),
        // An AsyncMiddleware for Vapor 4, the same behaviour as the Hummingbird one.
        .target(
            name: "CrashReportingVapor",
            dependencies: [
                "CrashReportingServerCore",
                .product(name: "CrashReporting", package: "swift-crash-reporting"),
                .product(name: "Vapor", package: "vapor"),
            ]
        ),
        // A Service for ServiceGroup: delivery starts with the group, pending work is flushed
        // (bounded) at graceful shutdown, and the session ends cleanly.
        .target(
            name: "CrashReportingServiceLifecycle",
            dependencies: [
                .product(name: "CrashReporting", package: "swift-crash-reporting"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // swift-metrics counters and gauges of delivery and requests in flight, as a Service.
        .target(
            name: "CrashReportingMetrics",
            dependencies: [
                .product(name: "CrashReporting", package: "swift-crash-reporting"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // tools/bench-middleware's first figure: the middleware's own work per request, no server.
        .executableTarget(
            name: "RequestReporterBenchmark",
            dependencies: [
                "CrashReportingServerCore",
                .product(name: "CrashReporting", package: "swift-crash-reporting"),
            ]
        ),
        // The example server the tests drive over loopback (and a starting point to copy).
        .executableTarget(
            name: "HummingbirdExample",
            dependencies: [
                "CrashReportingHummingbird", "CrashReportingServiceLifecycle", "CrashReportingServerCore",
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // The Vapor example server the tests drive.
        .executableTarget(
            name: "VaporExample",
            dependencies: [
                "CrashReportingVapor",
                .product(name: "Vapor", package: "vapor"),
            ]
        ),
        .testTarget(name: "IntegrationTests", dependencies: [
            "HummingbirdExample", "VaporExample", "CrashReportingHummingbird", "CrashReportingMetrics", "CrashReportingServerCore",
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "MetricsTestKit", package: "swift-metrics"),
            .product(name: "Instrumentation", package: "swift-distributed-tracing"),
        ]),
    ]
)

for target in package.targets {
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    target.swiftSettings = settings
}
