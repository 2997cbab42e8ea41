// Symbolication of real fixture records, checked frame by frame against llvm-symbolizer, and
// the ways debug info is found: recorded path, a .build-id store for a stripped binary, a real
// debuginfod on loopback, and a binary that changed since the crash.
import CrashReportModel
import CrashSymbolication
import CrashTestSupport
import Foundation
import Glibc
import Testing

struct SymbolicationCase: Sendable, CustomTestStringConvertible {
    var fixture: String
    var configuration: BuildConfiguration
    var testDescription: String { "\(fixture) (\(configuration))" }
}

let oracleCases = BuildConfiguration.allCases.flatMap { configuration in
    ["null-pointer-write", "force-unwrap-nil", "array-index-out-of-range", "fatal-error", "qsort-comparator-crash",
     "deep-stack", "abort-from-c", "task-crash"].map { SymbolicationCase(fixture: $0, configuration: configuration) }
}

/// Runs a fixture with the reporter and returns its record.
func crashRecord(_ fixture: String, _ configuration: BuildConfiguration, binary: URL? = nil) throws -> (CrashRecord, FixtureRun) {
    let run = try binary.map { try FixtureRun.run(fixture, binary: $0) } ?? FixtureRun.run(fixture, configuration)
    return (try run.onlyRecord(), run)
}

func decodeReport(_ json: String) throws -> CrashReport {
    let decoder = JSONDecoder()
    decoder.dateDecodingStrategy = .custom { decoder in
        let text = try decoder.singleValueContainer().decode(String.self)
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        guard let date = formatter.date(from: text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not RFC 3339: \(text)"))
        }
        return date
    }
    return try decoder.decode(CrashReport.self, from: Data(json.utf8))
}

/// A private copy of a fixture binary (so tests may strip, move or replace it).
func copyOfFixture(_ configuration: BuildConfiguration, into folder: URL) throws -> URL {
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    let copy = folder.appendingPathComponent("CrashFixture")
    try copyExecutable(configuration.fixtureURL, to: copy)
    return copy
}

/// Copies an executable with cp(1), in a process of its own. Written by this process, the copy's
/// descriptor would be inherited by any fixture another test spawns meanwhile, and exec'ing the
/// copy then fails with ETXTBSY ("Text file busy") for as long as that fixture runs; once cp has
/// exited, nobody holds the file open for writing.
func copyExecutable(_ source: URL, to destination: URL) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/cp")
    process.arguments = [source.path, destination.path]
    try process.run()
    process.waitUntilExit()
    guard process.terminationReason == .exit, process.terminationStatus == 0 else {
        throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: destination.path])
    }
}

/// A clock that moves only when a test moves it.
final class ManualClock {
    var now = ContinuousClock.now
}

func levelFrames(_ report: CrashReport) -> [CrashReport.Frame] {
    report.crashedThread.frames.filter { ($0.function ?? "").contains(".level") }
}

@Suite("Symbolication")
struct SymbolicationTests {
    @Test("every frame matches llvm-symbolizer: function, file, line, inlined frames", arguments: oracleCases)
    func matchesLLVMSymbolizer(_ testCase: SymbolicationCase) throws {
        let (record, _) = try crashRecord(testCase.fixture, testCase.configuration)
        // The same inputs as the oracle: the recorded paths and /usr/lib/debug.
        let report = Symbolicator(locator: DebugFileLocator(options: .init(useDebuginfod: false))).symbolicate(record)
        let oracle = try LLVMSymbolizer.symbolize(record)
        var compared = 0
        for expected in oracle {
            let ours = report.crashedThread.frames.filter { $0.index == expected.index }
            // Compare only where the oracle read DWARF (it also guesses from nearby symbols).
            guard expected.locations.contains(where: { $0.line > 0 }) else { continue }
            #expect(ours.count == expected.locations.count, "frame \(expected.index): \(ours.count) vs \(expected.locations.count) inline levels")
            for (mine, theirs) in zip(ours, expected.locations) {
                // System libraries have aliases at one address (raise, __GI_raise): llvm-symbolizer
                // takes the outermost name from the symbol table, we from DWARF. Both are right.
                // libdw and llvm also join glibc's DWARF 5 directory table differently
                // ("./stdlib/./stdlib/msort.c" and "./stdlib/msort.c"): same file, other spelling.
                if expected.module.hasSuffix("/CrashFixture") {
                    #expect(mine.symbol == theirs.linkageName, "frame \(expected.index) function")
                    #expect(mine.file == theirs.file, "frame \(expected.index) file")
                } else {
                    #expect(mine.file.map { ($0 as NSString).lastPathComponent } == (theirs.file as NSString).lastPathComponent,
                            "frame \(expected.index) file")
                }
                #expect(mine.line == (theirs.line > 0 ? theirs.line : nil), "frame \(expected.index) line of \(theirs.linkageName)")
                compared += 1
            }
        }
        #expect(compared >= 6, "too few frames with line info were compared: \(compared)")
        guard testCase.fixture != "deep-stack" else { return }   // its 50 innermost frames are all recursion
        let levels = levelFrames(report).filter { !$0.isInlined }
        #expect(levels.map { $0.function!.components(separatedBy: "(")[0] } == [
            "CrashFixture.level5", "CrashFixture.level4", "CrashFixture.level3", "CrashFixture.level2", "CrashFixture.level1",
        ])
        #expect(levels.allSatisfy { $0.file?.hasSuffix("CrashFixtures/CrashFixture/main.swift") == true && ($0.line ?? 0) > 0 })
    }

    @Test("a stack overflow's reason says so", arguments: ["main-thread-stack-overflow", "background-thread-stack-overflow"])
    func stackOverflowReason(_ fixture: String) throws {
        let (record, _) = try crashRecord(fixture, .debug)
        let report = Symbolicator().symbolicate(record)
        #expect(report.reason.hasPrefix("Stack overflow"), "reason: \(report.reason)")
    }

    @Test("a release-build Swift trap's reason comes from the inlined runtime-failure frame", arguments: [
        ("force-unwrap-nil", "Swift runtime failure: Unexpectedly found nil while unwrapping an Optional value"),
        ("array-index-out-of-range", "Swift runtime failure: Index out of range"),
    ])
    func releaseTrapReason(_ fixture: String, _ reason: String) throws {
        let (record, _) = try crashRecord(fixture, .release)
        #expect(record.fatalMessage == nil)
        let report = Symbolicator().symbolicate(record)
        #expect(report.reason == reason)
        #expect(report.crashedThread.frames.first?.isInlined == true)
    }

    @Test("a stripped binary is symbolicated from its .build-id store, and not without it")
    func strippedBinaryWithBuildIDStore() throws {
        let folder = temporaryFolder("stripped")
        let binary = try copyOfFixture(.release, into: folder)
        let store = folder.appendingPathComponent("store")
        let (status, output, error) = try crashtool(["split-debug", binary.path, "--store", store.path])
        #expect(status == 0, "split-debug: \(error)")
        let buildID = try #require(BuildID(elfFileAtPath: binary.path))
        #expect(output.contains("build-id \(buildID.hex)"))
        let debugFile = store.appendingPathComponent(".build-id/\(buildID.hex.prefix(2))/\(buildID.hex.dropFirst(2)).debug")
        #expect(BuildID(elfFileAtPath: debugFile.path) == buildID)

        let (record, run) = try crashRecord("null-pointer-write", .release, binary: binary)
        #expect(run.terminatedBySignal == SIGSEGV)
        let without = try crashtool(["symbolicate", "--format", "json", "--no-system-debug", run.pendingRecords[0].path])
        #expect(levelFrames(try decodeReport(without.1)).isEmpty, "a stripped binary alone has no level functions")

        let with = try crashtool(["symbolicate", "--format", "json", "--no-system-debug", "--debug-dir", store.path, run.pendingRecords[0].path])
        #expect(with.0 == 0)
        let report = try decodeReport(with.1)
        #expect(levelFrames(report).count == 5)
        #expect(levelFrames(report).allSatisfy { ($0.line ?? 0) > 0 })
        #expect(report.crashedThread.frames.first?.function == "cfs_write_null_pointer")
        _ = record
    }

    @Test("a binary that is gone is symbolicated through a real debuginfod on loopback")
    func throughDebuginfod() throws {
        let folder = temporaryFolder("debuginfod")
        let binary = try copyOfFixture(.release, into: folder)
        let store = folder.appendingPathComponent("store")
        #expect(try crashtool(["split-debug", binary.path, "--store", store.path]).0 == 0)
        let (_, run) = try crashRecord("fatal-error", .release, binary: binary)
        try FileManager.default.removeItem(at: binary)   // the crashed binary is not on this host

        let server = try DebuginfodServer(serving: store, buildID: try #require(run.onlyRecord().modules.first?.buildID))
        defer { server.stop() }
        let cache = folder.appendingPathComponent("cache")
        let (status, output, error) = try crashtool(
            ["symbolicate", "--format", "json", "--no-system-debug", run.pendingRecords[0].path],
            environment: ["DEBUGINFOD_URLS": server.url, "DEBUGINFOD_CACHE_PATH": cache.path])
        #expect(status == 0, "\(error)")
        let report = try decodeReport(output)
        #expect(levelFrames(report).count == 5, "\(report.text)")
        if case .debugFile(let path)? = report.images.first?.symbols {
            #expect(path.hasPrefix(cache.path))
        } else {
            Issue.record("the executable's symbols did not come from the debuginfod cache: \(String(describing: report.images.first?.symbols))")
        }
        #expect(report.reason.contains("the ledger does not balance"))
    }

    @Test("SymbolCache (a server's lookups): by build-id only, a miss retried after a while, at most `capacity` files open")
    func symbolCache() throws {
        let folder = temporaryFolder("symbol-cache")
        let binary = try copyOfFixture(.release, into: folder)
        let (record, _) = try crashRecord("null-pointer-write", .release, binary: binary)
        let module = try #require(record.modules.first { $0.path == binary.path })
        let addresses = record.frames.filter { record.module(containing: $0.lookupAddress) == module }
            .map { module.fileAddress(of: $0.lookupAddress).value }
        let store = folder.appendingPathComponent("store")
        try FileManager.default.createDirectory(at: store, withIntermediateDirectories: true)
        // The cache's clock is the test's: moved on by hand, not by the time split-debug takes.
        let clock = ManualClock()
        let cache = SymbolCache(
            locator: DebugFileLocator(options: .init(debugDirectories: [store.path], useSystemDebugDirectory: false,
                                                     useDebuginfod: false, useRecordedPath: false)),
            capacity: 1, retryMissesAfter: .seconds(60), now: { clock.now })
        func levels(_ buildID: BuildID, _ path: String, _ addresses: [UInt64]) -> [String] {
            addresses.flatMap { (try? cache.lookup(buildID: buildID, path: path, fileAddress: $0).get()) ?? [] }
                .map { Demangler.demangle($0.symbol) }.filter { $0.hasPrefix("CrashFixture.level") }
        }

        // The unstripped binary is at the recorded path, but a server never opens a reporter's paths.
        #expect(cache.lookup(buildID: module.buildID, path: binary.path, fileAddress: addresses[0]) == .failure(.notFound))
        #expect(try crashtool(["split-debug", binary.path, "--store", store.path]).0 == 0)
        #expect(levels(module.buildID, binary.path, addresses).isEmpty, "the miss is remembered for a while")
        clock.now += .seconds(59)
        #expect(levels(module.buildID, binary.path, addresses).isEmpty, "still remembered just before its period ends")
        clock.now += .seconds(1)
        #expect(levels(module.buildID, binary.path, addresses).count == 5, "symbols that came later are found")
        #expect(cache.openCount == 1)

        // A second build-id (the debug fixture): with room for one file, each evicts the other and both still resolve.
        let other = try copyOfFixture(.debug, into: folder.appendingPathComponent("debug"))
        let (otherRecord, _) = try crashRecord("null-pointer-write", .debug, binary: other)
        let otherModule = try #require(otherRecord.modules.first { $0.path == other.path })
        let otherAddresses = otherRecord.frames.filter { otherRecord.module(containing: $0.lookupAddress) == otherModule }
            .map { otherModule.fileAddress(of: $0.lookupAddress).value }
        #expect(try crashtool(["split-debug", other.path, "--store", store.path]).0 == 0)
        for _ in 0..<2 {
            #expect(levels(otherModule.buildID, other.path, otherAddresses).count == 5)
            #expect(levels(module.buildID, binary.path, addresses).count == 5)
            #expect(cache.openCount == 1)
        }
        #expect(cache.debugFile(for: module.buildID)?.hasPrefix(store.path + "/.build-id/") == true)
        #expect(cache.lookup(buildID: BuildID(hex: "../" + module.buildID.hex), path: binary.path, fileAddress: addresses[0])
                == .failure(.notFound), "a build-id that is not hex is no path")
    }

    @Test("a binary rebuilt since the crash is flagged, never symbolicated silently wrong")
    func buildIDMismatch() throws {
        let folder = temporaryFolder("rebuilt")
        let binary = try copyOfFixture(.release, into: folder)
        let (record, run) = try crashRecord("null-pointer-write", .release, binary: binary)
        try FileManager.default.removeItem(at: binary)
        try copyExecutable(BuildConfiguration.debug.fixtureURL, to: binary)   // "rebuilt"

        let report = Symbolicator(locator: DebugFileLocator(options: .init(useSystemDebugDirectory: false, useDebuginfod: false)))
            .symbolicate(record)
        let inBinary = report.crashedThread.frames.filter { $0.module == binary.path }
        #expect(inBinary.count >= 7)
        #expect(inBinary.allSatisfy { $0.function == nil && $0.note?.hasPrefix("binary changed since the crash") == true })
        guard case .buildIDMismatch? = report.images.first?.symbols else {
            Issue.record("image not flagged: \(String(describing: report.images.first?.symbols))")
            return
        }
        let (status, text, _) = try crashtool(["symbolicate", run.pendingRecords[0].path])
        #expect(status == 0)
        #expect(text.contains("! binary changed since the crash"))
    }
}

@Suite("crashtool")
struct CrashToolTests {
    @Test("text output reads like a crash log")
    func textOutput() throws {
        let (_, run) = try crashRecord("force-unwrap-nil", .debug)
        let (status, text, _) = try crashtool(["symbolicate", run.pendingRecords[0].path])
        #expect(status == 0)
        #expect(text.contains("Signal:    SIGILL (4) ILL_ILLOPN"))
        #expect(text.contains("Reason:    CrashFixture/main.swift:"))
        #expect(text.contains("Unexpectedly found nil while unwrapping an Optional value"))
        #expect(text.contains("level5(_:)  (/"))   // the short name; the full one is in --format json
        #expect(text.contains("Issue:     forceUnwrap(_:) — Unexpectedly found nil while unwrapping an Optional value"))
        #expect(text.contains("Crashed thread"))
        #expect(text.contains("Images:"))
    }

    @Test("other threads follow the crashed one, each with its name and its own function", arguments: BuildConfiguration.allCases)
    func otherThreadsInText(_ configuration: BuildConfiguration) throws {
        let (record, run) = try crashRecord("named-threads-then-crash", configuration)
        let report = Symbolicator(locator: DebugFileLocator(options: .init(useSystemDebugDirectory: false, useDebuginfod: false)))
            .symbolicate(record)
        #expect(report.otherThreads.count == record.otherThreads.count)
        for (name, function) in [("fixture-alpha", "waitInAlpha"), ("fixture-delta", "waitInDelta")] {
            let thread = try #require(report.otherThreads.first { $0.name == name })
            #expect(thread.state == "answered")
            #expect(thread.frames.contains { ($0.function ?? "").contains("CrashFixture.\(function)()") }, "\(name): \(thread.frames.map { $0.function ?? "?" })")
        }
        let (status, text, _) = try crashtool(["symbolicate", run.pendingRecords[0].path])
        #expect(status == 0)
        let crashed = try #require(text.range(of: "Crashed thread"))
        let alpha = try #require(text.range(of: #""fixture-alpha": "#))
        let images = try #require(text.range(of: "Images:"))
        #expect(crashed.lowerBound < alpha.lowerBound && alpha.lowerBound < images.lowerBound)
        // The short Swift name (the full one is in --format json); columns vary with the module names.
        #expect(text.split(separator: "\n").contains { $0.contains(" waitInAlpha()  (") && !$0.contains("CrashFixture.waitInAlpha") })
        #expect(text.contains(#""fixture-masked": blocks the signal that asks threads to unwind"#))
        let json = try crashtool(["symbolicate", "--format", "json", run.pendingRecords[0].path]).1
        #expect(try decodeReport(json).otherThreads.count == record.otherThreads.count)
        // The shape README gives: the record under "record", isPartial beside it.
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        #expect((object["record"] as? [String: Any])?["id"] as? String == record.id)
        #expect(object["isPartial"] as? Bool == false)
    }

    @Test("a record whose module table is the one from start says so")
    func moduleTableFromStart() throws {
        let (_, run) = try crashRecord("null-pointer-write", .debug)
        let original = try String(contentsOf: run.pendingRecords[0], encoding: .utf8)
        #expect(original.contains(#"{"type":"modules","source":"link_map""#))
        #expect(!(try crashtool(["symbolicate", run.pendingRecords[0].path]).1.contains("module table is the one made at start")))
        let file = temporaryFolder("install-table").appendingPathExtension("crash")
        try Data(original.replacingOccurrences(of: #""source":"link_map""#, with: #""source":"install""#).utf8).write(to: file)
        let (status, text, _) = try crashtool(["symbolicate", file.path])
        #expect(status == 0)
        #expect(text.contains("Note:      the module table is the one made at start"))
    }

    @Test("a record cut short symbolicates what it has and says it is partial")
    func partialRecord() throws {
        let (_, run) = try crashRecord("null-pointer-write", .debug)
        let full = try String(contentsOf: run.pendingRecords[0], encoding: .utf8)
        let lines = full.split(separator: "\n", omittingEmptySubsequences: true)
        let frameLines = lines.enumerated().filter { $0.element.contains(#""type":"frame""#) }
        // Cut in the middle of the fourth frame line: header, signal, registers and 3 frames remain.
        let cutAt = frameLines[3].offset
        let cut = lines[..<cutAt].joined(separator: "\n") + "\n" + lines[cutAt].prefix(20)
        let file = temporaryFolder("partial").appendingPathExtension("crash")
        try Data(cut.utf8).write(to: file)
        let (status, text, _) = try crashtool(["symbolicate", file.path])
        #expect(status == 0)
        #expect(text.contains("PARTIAL"))
        #expect(text.contains("cfs_write_null_pointer"))
        #expect(text.contains("Problem:   line \(cutAt + 1): not a JSON object"))
    }

    @Test("garbage gets a one-line error naming the file and line, and a failing status")
    func garbage() throws {
        let file = temporaryFolder("garbage").appendingPathExtension("crash")
        try Data("\u{7F}ELF this is not a record\n".utf8).write(to: file)
        let (status, output, error) = try crashtool(["symbolicate", file.path])
        #expect(status == 1)
        #expect(output.isEmpty)
        #expect(error == "crashtool: \(file.path):1: not a crash record (missing \"format\":\"swift-crash-reporting.crash-record\" header)\n")
    }

    @Test("Swift's own backtracer JSON is symbolicated the same way")
    func swiftBacktraceJSON() throws {
        let folder = temporaryFolder("swift-backtrace")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let output = folder.appendingPathComponent("backtrace.json")
        let run = try FixtureRun.run("force-unwrap-nil", .release, reportsDirectory: folder.appendingPathComponent("reports"), environment: [
            "CRASH_FIXTURE_NO_REPORTER": "1",
            "SWIFT_BACKTRACE": "enable=yes,format=json,interactive=no,output-to=\(output.path)",
        ])
        #expect(run.terminatedBySignal == SIGILL)
        #expect(run.pendingRecords.isEmpty, "the reporter was not started")
        let (status, json, error) = try crashtool(["symbolicate", "--format", "json", output.path])
        #expect(status == 0, "\(error)")
        let report = try decodeReport(json)
        #expect(report.reason == "Swift runtime failure: Unexpectedly found nil while unwrapping an Optional value")
        #expect(levelFrames(report).count == 5)
        #expect(report.crashedThread.frames.first?.function == "Swift runtime failure: Unexpectedly found nil while unwrapping an Optional value")
    }

    @Test("show and list")
    func showAndList() throws {
        let (record, run) = try crashRecord("trap-instruction", .debug)
        let (status, text, _) = try crashtool(["show", run.pendingRecords[0].path])
        #expect(status == 0)
        #expect(text.contains("Signal:    SIGTRAP (5) code 128 SI_KERNEL"))
        #expect(text.contains("Record:    \(record.id)"))
        let quarantine = run.reportsDirectory.appendingPathComponent("quarantine")
        try FileManager.default.createDirectory(at: quarantine, withIntermediateDirectories: true)
        try Data("{}\n".utf8).write(to: quarantine.appendingPathComponent("bad.crash"))
        try Data("server said 400: missing app_metadata\n".utf8).write(to: quarantine.appendingPathComponent("bad.reason"))
        let (listStatus, list, _) = try crashtool(["list", run.reportsDirectory.path])
        #expect(listStatus == 0)
        #expect(list.contains("pending    \(record.id)"))
        #expect(list.contains("SIGTRAP  com.example.crash-fixture 1.0.0"))
        #expect(list.contains("quarantine bad  unreadable:"))
        #expect(list.contains("quarantined: server said 400: missing app_metadata"))
    }
}

/// elfutils' debuginfod serving a folder, on a free loopback port, until `stop()`.
final class DebuginfodServer {
    let url: String
    private let process = Process()

    init(serving folder: URL, buildID: BuildID) throws {
        guard let binary = ["/usr/bin/debuginfod", "/usr/sbin/debuginfod"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw TestSupportError("debuginfod is not installed (tools/bootstrap installs it)")
        }
        // A port the kernel has just given out and taken back (debuginfod takes no port 0): free
        // unless another process binds it in between, which debuginfod's exit would show.
        let port = try Self.freePort()
        url = "http://127.0.0.1:\(port)"
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["-F", folder.path, "-p", "\(port)", "-d", folder.appendingPathComponent("debuginfod.sqlite").path, "-t", "1"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Ready once it serves the debug info it indexed (scanning takes a moment).
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline, process.isRunning {
            if Self.status("\(url)/buildid/\(buildID.hex)/debuginfo") == 200 { return }
            usleep(200_000)
        }
        let exited = !process.isRunning
        stop()
        throw TestSupportError(exited ? "debuginfod exited at start (port \(port) taken?)" : "debuginfod did not serve \(buildID) within 60 s")
    }

    /// A loopback port that was free a moment ago: bound with port 0, read back, closed.
    private static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestSupportError("socket: errno \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw TestSupportError("bind/getsockname: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// debuginfod may take a long time to honour SIGTERM while its scanner runs: SIGKILL after 2 s.
    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        let deadline = ContinuousClock.now + .seconds(2)
        while process.isRunning && ContinuousClock.now < deadline { usleep(20_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    private static func status(_ url: String) -> Int {
        let curl = Process()
        curl.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        curl.arguments = ["-s", "-o", "/dev/null", "-w", "%{http_code}", url]
        let out = Pipe()
        curl.standardOutput = out
        curl.standardError = FileHandle.nullDevice
        guard (try? curl.run()) != nil else { return 0 }
        let text = OutputCollector(out.fileHandleForReading).text()
        curl.waitUntilExit()
        return Int(text) ?? 0
    }
}
