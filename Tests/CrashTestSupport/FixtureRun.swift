// Runs a CrashFixture build as a subprocess and collects how it ended and what it left behind.
// Shared by the test targets; throws `TestSupportError` where a test would otherwise go on blind.
import CrashReportModel
import Foundation
import Glibc

public struct TestSupportError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// The build folder of this test run (…/.build/<triple>/debug), from the test runner's path.
public var buildFolder: URL {
    let runner = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
    var folder = runner.deletingLastPathComponent()
    if folder.lastPathComponent.hasSuffix(".xctest") { folder = folder.deletingLastPathComponent() }
    return folder
}

/// A fresh folder under the temporary directory.
public func temporaryFolder(_ name: String) -> URL {
    FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(UUID().uuidString.prefix(8))")
}

public enum BuildConfiguration: String, CaseIterable, Sendable, CustomStringConvertible {
    case debug, release
    public var description: String { rawValue }

    /// The fixture binary of this configuration: $CRASH_FIXTURE_DEBUG / $CRASH_FIXTURE_RELEASE, or
    /// beside the test bundle (debug) and in its sibling release folder (built by tools/test).
    public var fixtureURL: URL {
        let variable = "CRASH_FIXTURE_\(rawValue.uppercased())"
        if let path = ProcessInfo.processInfo.environment[variable] { return URL(fileURLWithPath: path) }
        return buildFolder.deletingLastPathComponent().appendingPathComponent(rawValue).appendingPathComponent("CrashFixture")
    }
}

public struct FixtureRun {
    public var terminatedBySignal: Int32?
    public var exitStatus: Int32?
    public var standardOutput: String
    public var standardError: String
    public var elapsed: Duration
    public var reportsDirectory: URL

    public var pendingRecords: [URL] { Self.files(in: reportsDirectory.appendingPathComponent("pending")) }
    public var newFiles: [URL] { Self.files(in: reportsDirectory.appendingPathComponent("new")) }

    public static func files(in folder: URL) -> [URL] {
        ((try? FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)) ?? [])
            .filter { $0.pathExtension == "crash" }
            .sorted { $0.path < $1.path }
    }

    /// Runs `CrashFixture <name> <dir>` with the Swift backtracer off unless `environment` says
    /// otherwise; kills it after `timeout`: a bound for a fixture that never ends, not a timing
    /// (fixtures end in seconds; 30 s was once not enough for a stalled-handler fixture, whose
    /// record's watchdog finish and fdatasync ran while another suite and a build loaded the disk).
    public static func run(
        _ name: String, _ configuration: BuildConfiguration, reportsDirectory: URL? = nil,
        environment: [String: String] = [:], timeout: Duration = .seconds(120)
    ) throws -> FixtureRun {
        try run(name, binary: configuration.fixtureURL, reportsDirectory: reportsDirectory, environment: environment, timeout: timeout)
    }

    /// Runs a given fixture binary (a copy, a stripped one…).
    public static func run(
        _ name: String, binary: URL, reportsDirectory: URL? = nil,
        environment: [String: String] = [:], timeout: Duration = .seconds(120)
    ) throws -> FixtureRun {
        guard FileManager.default.isExecutableFile(atPath: binary.path) else {
            throw TestSupportError("no fixture at \(binary.path): run tools/test, which builds debug and release")
        }
        let directory = reportsDirectory ?? temporaryFolder("crash-fixture-\(name)")
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

    /// Starts a debug fixture mode that prints `line` when it is where a test wants it and then
    /// waits to be killed; returns the running process and what it printed up to that line (all
    /// of its output, if it ended first).
    public static func startUntil(_ mode: String, line: String, reportsDirectory: URL,
                                  environment extra: [String: String] = [:]) throws -> (Process, String) {
        let process = Process()
        process.executableURL = BuildConfiguration.debug.fixtureURL
        process.arguments = [mode, reportsDirectory.path]
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFT_BACKTRACE"] = "enable=no"
        environment.merge(extra) { _, new in new }
        process.environment = environment
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        var said = ""
        while !said.contains(line + "\n") {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            said += String(decoding: chunk, as: UTF8.self)
        }
        return (process, said)
    }

    /// The one record the run must have left, parsed.
    public func onlyRecord() throws -> CrashRecord {
        let records = pendingRecords
        guard records.count == 1 else {
            throw TestSupportError("expected exactly one record in pending/, found \(records.count); stderr: \(standardError)")
        }
        return try validatedRecord(at: records[0])
    }
}

/// A record read after checking every line against the record schema (RecordLineType): what the
/// C handler and the Swift writers wrote must be what the schema and README say.
public func validatedRecord(at url: URL) throws -> CrashRecord {
    let data = try Data(contentsOf: url)
    let problems = RecordLineType.problems(in: data)
    guard problems.isEmpty else {
        throw TestSupportError("\(url.lastPathComponent) does not follow the record schema: \(problems.joined(separator: "; "))")
    }
    return try CrashRecord(data: data, source: url.path)
}

/// Drains a pipe on a background thread so a chatty child never blocks on a full pipe.
/// Runs crashtool (built beside the tests) without DEBUGINFOD_URLS (plus `environment`) and returns
/// (exit status, stdout, stderr).
public func crashtool(_ arguments: [String], environment: [String: String] = [:]) throws -> (Int32, String, String) {
    let process = Process()
    process.executableURL = buildFolder.appendingPathComponent("crashtool")
    process.arguments = arguments
    var env = ProcessInfo.processInfo.environment
    env.removeValue(forKey: "DEBUGINFOD_URLS")
    for (key, value) in environment { env[key] = value }
    process.environment = env
    let out = Pipe(), err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    let stdout = OutputCollector(out.fileHandleForReading), stderr = OutputCollector(err.fileHandleForReading)
    process.waitUntilExit()
    return (process.terminationStatus, stdout.text(), stderr.text())
}

public final class OutputCollector: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()
    private let done = DispatchSemaphore(value: 0)

    public init(_ handle: FileHandle) {
        Thread.detachNewThread { [self] in
            let all = handle.readDataToEndOfFile()
            lock.withLock { data = all }
            done.signal()
        }
    }

    public func text() -> String {
        done.wait()
        return lock.withLock { String(decoding: data, as: UTF8.self) }
    }
}
