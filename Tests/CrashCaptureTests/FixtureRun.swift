// Runs a CrashFixture build as a subprocess and collects how it ended and what it left behind.
import CrashReportModel
import Foundation
import Testing

enum BuildConfiguration: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case debug, release
    var testDescription: String { rawValue }

    /// The fixture binary of this configuration: $CRASH_FIXTURE_DEBUG / $CRASH_FIXTURE_RELEASE, or
    /// beside the test bundle (debug) and in its sibling release folder (built by tools/test).
    var fixtureURL: URL {
        let variable = "CRASH_FIXTURE_\(rawValue.uppercased())"
        if let path = ProcessInfo.processInfo.environment[variable] { return URL(fileURLWithPath: path) }
        let runner = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var folder = runner.deletingLastPathComponent()
        if folder.lastPathComponent.hasSuffix(".xctest") { folder = folder.deletingLastPathComponent() }
        return folder.deletingLastPathComponent().appendingPathComponent(rawValue).appendingPathComponent("CrashFixture")
    }
}

struct FixtureRun {
    var terminatedBySignal: Int32?
    var exitStatus: Int32?
    var standardOutput: String
    var standardError: String
    var elapsed: Duration
    var reportsDirectory: URL

    var pendingRecords: [URL] { Self.files(in: reportsDirectory.appendingPathComponent("pending")) }
    var newFiles: [URL] { Self.files(in: reportsDirectory.appendingPathComponent("new")) }

    static func files(in folder: URL) -> [URL] {
        ((try? FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)) ?? [])
            .filter { $0.pathExtension == "crash" }
            .sorted { $0.path < $1.path }
    }

    /// Runs `CrashFixture <name> <dir>` with the Swift backtracer off unless `environment` says
    /// otherwise; kills it after `timeout`.
    static func run(
        _ name: String, _ configuration: BuildConfiguration, reportsDirectory: URL? = nil,
        environment: [String: String] = [:], timeout: Duration = .seconds(30)
    ) throws -> FixtureRun {
        let binary = configuration.fixtureURL
        try #require(FileManager.default.isExecutableFile(atPath: binary.path),
                     "no \(configuration) fixture at \(binary.path): run tools/test, which builds both")
        let directory = reportsDirectory ?? FileManager.default.temporaryDirectory
            .appendingPathComponent("crash-fixture-\(name)-\(configuration)-\(UUID().uuidString.prefix(8))")
        let process = Process()
        process.executableURL = binary
        process.arguments = [name, directory.path]
        var env = ProcessInfo.processInfo.environment
        env["SWIFT_BACKTRACE"] = "enable=no"
        for (key, value) in environment { env[key] = value }
        process.environment = env
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let clock = ContinuousClock()
        let start = clock.now
        try process.run()
        let deadline = start + timeout
        let outData = OutputCollector(out.fileHandleForReading)
        let errData = OutputCollector(err.fileHandleForReading)
        while process.isRunning {
            if clock.now > deadline {
                process.terminate()
                kill(process.processIdentifier, SIGKILL)
                break
            }
            usleep(2000)
        }
        process.waitUntilExit()
        let elapsed = clock.now - start
        let bySignal = process.terminationReason == .uncaughtSignal
        return FixtureRun(
            terminatedBySignal: bySignal ? process.terminationStatus : nil,
            exitStatus: bySignal ? nil : process.terminationStatus,
            standardOutput: outData.text(), standardError: errData.text(),
            elapsed: elapsed, reportsDirectory: directory)
    }

    /// The one record the run must have left, parsed.
    func onlyRecord(sourceLocation: SourceLocation = #_sourceLocation) throws -> CrashRecord {
        let records = pendingRecords
        try #require(records.count == 1, "expected exactly one record in pending/, found \(records.count); stderr: \(standardError)",
                     sourceLocation: sourceLocation)
        return try CrashRecord(contentsOf: records[0])
    }
}

/// Drains a pipe on a background thread so a chatty child never blocks on a full pipe.
final class OutputCollector: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()
    private let done = DispatchSemaphore(value: 0)

    init(_ handle: FileHandle) {
        Thread.detachNewThread { [self] in
            let all = handle.readDataToEndOfFile()
            lock.withLock { data = all }
            done.signal()
        }
    }

    func text() -> String {
        done.wait()
        return lock.withLock { String(decoding: data, as: UTF8.self) }
    }
}
