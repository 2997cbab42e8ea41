// swift-tools-version:6.0
// swift-crash-reporting: crash capture for Swift programs on Linux.
// The runtime depends on Foundation (with FoundationNetworking for uploads), the system's
// libunwind (loaded with dlopen), libdw (symbolication before upload) and zlib (gzip);
// crashtool adds swift-argument-parser.
import PackageDescription

let package = Package(
    name: "swift-crash-reporting",
    products: [
        .library(name: "CrashReporting", targets: ["CrashReporting"]),
        .library(name: "CrashReportModel", targets: ["CrashReportModel"]),
        .library(name: "CrashSymbolication", targets: ["CrashSymbolication"]),
        .library(name: "CrashReportingLogging", targets: ["CrashReportingLogging"]),
        .executable(name: "crashtool", targets: ["crashtool"]),
        // Delivery at crash time (opt-in): the program the crash handler runs to upload the record.
        .executable(name: "crash-sender", targets: ["crash-sender"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        // C. The only code that runs inside the signal handler lives in CrashTime/.
        .target(
            name: "CCrashCapture",
            cSettings: [
                .define("_GNU_SOURCE"),
                .headerSearchPath("Shared"),
            ],
            linkerSettings: [.linkedLibrary("dl"), .linkedLibrary("pthread")]
        ),
        .target(name: "CrashReportModel"),
        .target(name: "CrashReporting", dependencies: ["CCrashCapture", "CrashReportModel", "CrashSymbolication", "CZlib"]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        // swift-log integration, a separate product so that apps without swift-log don't pull it.
        .target(
            name: "CrashReportingLogging",
            dependencies: ["CrashReporting", .product(name: "Logging", package: "swift-log")]
        ),
        // libdw's headers at build time (Debian libdw-dev), libdw.so.1 opened at run time only when
        // something is symbolicated: apps link no libdw/libelf (Docs/Decisions/0024).
        .target(name: "CLibdwLoader", linkerSettings: [.linkedLibrary("dl"), .linkedLibrary("pthread")]),
        .target(name: "CrashSymbolication", dependencies: ["CLibdwLoader", "CrashReportModel"]),
        .executableTarget(
            name: "crashtool",
            dependencies: [
                "CrashSymbolication", "CrashReportModel",
                // Session files (breadcrumbs, keys, user) beside a record are read with its exporter;
                // its pthread_create wrapper only forwards here (nothing installs altstacks).
                "CCrashCapture",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),

        .executableTarget(name: "crash-sender", dependencies: ["CrashReporting"]),

        // Programs that crash in known ways; the integration tests run them as subprocesses.
        .target(
            name: "CFixtureSupport",
            path: "CrashFixtures/CFixtureSupport",
            cSettings: [.define("_GNU_SOURCE")]
        ),
        .executableTarget(
            name: "CrashFixture",
            dependencies: ["CrashReporting", "CrashReportingLogging", "CFixtureSupport", .product(name: "Logging", package: "swift-log")],
            path: "CrashFixtures/CrashFixture"
        ),

        .executableTarget(
            name: "CrashDemo",
            dependencies: ["CrashReporting", "CrashReportModel"],
            path: "Examples/CrashDemo"
        ),

        // Benchmarks print figures (tools/bench-*); none is a test.
        .executableTarget(name: "ContextBenchmark", dependencies: ["CrashReporting"], path: "Benchmarks/ContextBenchmark"),
        .executableTarget(name: "PrivacyBenchmark", dependencies: ["CrashReporting", "CrashReportModel"], path: "Benchmarks/PrivacyBenchmark"),
        .executableTarget(
            name: "LogHandlerBenchmark",
            dependencies: ["CrashReporting", "CrashReportingLogging", .product(name: "Logging", package: "swift-log")],
            path: "Benchmarks/LogHandlerBenchmark"
        ),

        .testTarget(name: "CrashReportModelTests", dependencies: ["CrashReportModel", "CrashTestSupport"], exclude: ["Corpus", "Payloads"]),
        // Runs fixtures as subprocesses and asks llvm-symbolizer, for the test targets below.
        .target(name: "CrashTestSupport", dependencies: ["CrashReportModel"], path: "Tests/CrashTestSupport"),
        .testTarget(name: "CrashCaptureTests", dependencies: ["CrashReportModel", "CrashTestSupport", "CrashFixture", "crash-sender"]),
        .testTarget(
            name: "CrashReportingTests",
            dependencies: ["CrashReporting", "CrashReportingLogging", "CrashReportModel", "CrashTestSupport", .product(name: "Logging", package: "swift-log")],
            exclude: ["PIICorpus"]
        ),
        .testTarget(
            name: "CrashSymbolicationTests",
            dependencies: ["CrashSymbolication", "CrashReportModel", "CrashTestSupport", "CrashFixture", "crashtool"]
        ),
    ]
)

let cTargets: Set<String> = ["CCrashCapture", "CFixtureSupport", "CLibdwLoader", "CZlib"]
for target in package.targets where !cTargets.contains(target.name) {
    var settings = target.swiftSettings ?? []
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    target.swiftSettings = settings
}
