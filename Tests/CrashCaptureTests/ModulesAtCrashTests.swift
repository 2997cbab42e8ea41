// The module table at the moment of the crash (Docs/Decisions/0011): a library opened after
// start is listed with its build-id and the crashing frame inside it symbolicates; a library
// closed after start is not listed. The libraries are built here from C with the toolchain's
// clang. With the walk broken on purpose, the install-time table is written and says so.
import CrashReportModel
import CrashTestSupport
import Foundation
import Glibc
import Testing

/// Two small shared libraries in a fresh folder: libplugin.so (plugin_crash() writes through a
/// null pointer) and libunloaded.so.
func buildPluginLibraries() throws -> (plugin: URL, unloaded: URL) {
    let folder = temporaryFolder("plugins")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    let candidates = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map { "\($0)/clang" }
        + ["/opt/swift/usr/bin/clang"]
    guard let clang = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
        throw TestSupportError("clang not found (it ships with the Swift toolchain)")
    }
    let sources = [
        "libplugin": "__attribute__((noinline)) void plugin_crash(void) { *(volatile int *)0 = 7; }\n",
        "libunloaded": "int unloaded_value(void) { return 3; }\n",
    ]
    for (name, source) in sources {
        let c = folder.appendingPathComponent("\(name).c")
        try source.write(to: c, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: clang)
        process.arguments = ["-shared", "-fPIC", "-g", "-O1", "-Wl,--build-id", "-o", folder.appendingPathComponent("\(name).so").path, c.path]
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw TestSupportError("clang failed for \(name).c") }
    }
    return (folder.appendingPathComponent("libplugin.so"), folder.appendingPathComponent("libunloaded.so"))
}

@Suite("Modules at crash time")
struct ModulesAtCrashTests {
    @Test("a library opened after start is in the record and its frame symbolicates; one closed after start is not",
          arguments: BuildConfiguration.allCases)
    func openedAfterStart(_ configuration: BuildConfiguration) throws {
        let libraries = try buildPluginLibraries()
        let run = try FixtureRun.run("dlopened-library-crash", configuration, environment: [
            "CRASH_FIXTURE_PLUGIN": libraries.plugin.path, "CRASH_FIXTURE_UNLOADED": libraries.unloaded.path,
        ])
        let record = try run.onlyRecord()
        try checkCompleteRecord(record, run: run, signal: SIGSEGV)   // every module's build-id matches its file
        let table = try #require(record.moduleTable)
        #expect(table.source == "link_map")
        #expect(table.loaderState == "consistent")
        #expect(table.count == record.modules.count)
        // The objects before the one closed since start are confirmed in one read; from there on
        // the list is read object by object.
        let unchanged = try #require(table.unchanged)
        #expect(unchanged > 0 && unchanged < table.count, "unchanged \(unchanged) of \(table.count)")
        #expect(table.read == "direct")

        let plugin = try #require(record.modules.first { $0.path == libraries.plugin.path }, "modules: \(record.modules.map(\.path))")
        #expect(!plugin.buildID.isEmpty)
        #expect(plugin.buildID == BuildID(elfFileAtPath: libraries.plugin.path))
        #expect(!record.modules.contains { $0.path == libraries.unloaded.path }, "a library closed after start is listed")

        let frame0 = try #require(record.frames.first)
        #expect(record.module(containing: frame0.lookupAddress)?.path == libraries.plugin.path)
        let frames = try LLVMSymbolizer.symbolize(record)
        #expect(frames[0].mentions("plugin_crash"), "frame 0:\n\(describe(frames))")
        _ = checkOrder(["plugin_crash", "callPlugin", "level5", "level4", "level3", "level2", "level1"], in: frames)
        // libunwind found the plugin, which start's table lacks, in the crash's table (its program
        // headers read by the walk): Decision 0059.
        let stack = try #require(record.stack)
        #expect(stack.unwinder == "libunwind" && (stack.tableLookups ?? 0) > 0 && stack.tableMisses == nil && stack.tableScans == nil, "\(stack)")
    }

    @Test("the list as start saw it reads the same copied directly, through the walk's pipe and by process_vm_readv",
          arguments: BuildConfiguration.allCases)
    func directPipeAndProcessVMReadvAgree(_ configuration: BuildConfiguration) throws {
        let libraries = try buildPluginLibraries()
        var tables: [String: CrashRecord] = [:]
        for misbehaviour in ["", "modules-read-without-direct", "modules-read-by-process-vm-readv"] {
            var environment = ["CRASH_FIXTURE_PLUGIN": libraries.plugin.path, "CRASH_FIXTURE_UNLOADED": libraries.unloaded.path]
            if !misbehaviour.isEmpty { environment["CRASH_REPORTING_TEST_MISBEHAVIOUR"] = misbehaviour }
            let run = try FixtureRun.run("dlopened-library-crash", configuration, environment: environment)
            let record = try run.onlyRecord()
            try checkCompleteRecord(record, run: run, signal: SIGSEGV)
            let table = try #require(record.moduleTable)
            #expect(table.source == "link_map")
            tables[table.read ?? "none"] = record
        }
        let copied = try #require(tables["direct"], "read: \(tables.keys)")
        let piped = try #require(tables["pipe"], "read: \(tables.keys)")
        let direct = try #require(tables["process_vm_readv"], "read: \(tables.keys)")
        // Three processes of the same program: the same objects, in the same order, with the same
        // build-ids, and the same part of the list confirmed in the one read.
        for other in [piped, direct] {
            #expect(copied.modules.map(\.path) == other.modules.map(\.path))
            #expect(copied.modules.map(\.buildID) == other.modules.map(\.buildID))
            #expect(copied.moduleTable?.unchanged == other.moduleTable?.unchanged)
        }
        #expect((copied.moduleTable?.unchanged ?? 0) > 0)
    }

    @Test("a fault in the crash's guarded copy of the list is caught by the handler: the walk goes on object by object, and the table is whole",
          arguments: BuildConfiguration.allCases)
    func faultInDirectRead(_ configuration: BuildConfiguration) throws {
        // The third node's address is replaced by one on page 0, which is never mapped. Steady
        // state: start's table of nodes exists (it is made on a background thread after start).
        let steady = ["CRASH_FIXTURE_STEADY_STATE": "1"]
        let run = try FixtureRun.run("null-pointer-write", configuration,
                                     environment: steady.merging(["CRASH_REPORTING_TEST_MISBEHAVIOUR": "modules-read-faults"]) { $1 })
        #expect(run.terminatedBySignal == SIGSEGV, "took \(run.elapsed)")
        let record = try run.onlyRecord()
        #expect(record.nestedCrash == nil, "the copy's fault was taken for a crash in the handler")
        #expect(record.hasEnd && record.problems.isEmpty, "\(record.problems)")
        try #require(record.modules.count > 3)
        let table = try #require(record.moduleTable)
        #expect(table.source == "link_map" && table.read == "direct")
        #expect(table.readFault == true, "the copy did not fault: \(table)")
        // Pieces: r_debug, every node, then every build-id; the fault at the third node leaves
        // every build-id unread, so no object is confirmed by the one read.
        #expect(table.unchanged == 0, "the one read stopped at the fault, so nothing was confirmed by it")
        #expect(record.stack?.unwinder == "libunwind")
        // The same objects as a crash whose copy did not fault, each with its file's build-id.
        let plain = try FixtureRun.run("null-pointer-write", configuration, environment: steady).onlyRecord()
        #expect(plain.moduleTable?.read == "direct" && plain.moduleTable?.readFault == nil)
        #expect(plain.moduleTable?.unchanged == plain.modules.count)
        #expect(record.modules.map(\.path) == plain.modules.map(\.path))
        #expect(record.modules.map(\.buildID) == plain.modules.map(\.buildID))
        try checkModules(record)
        _ = checkOrder(["cfs_write_null_pointer", "level5", "level4"], in: try LLVMSymbolizer.symbolize(record))
    }

    @Test("an app's SIGSEGV handler installed after start, calling ours: the crash's read goes through the pipe, not a guarded copy")
    func handlerInstalledAfterStart() throws {
        let run = try FixtureRun.run("handler-after-start-chains", .release, environment: ["CRASH_FIXTURE_STEADY_STATE": "1"])
        #expect(run.terminatedBySignal == SIGSEGV, "took \(run.elapsed)")
        let record = try run.onlyRecord()
        try checkCompleteRecord(record, run: run, signal: SIGSEGV)
        let table = try #require(record.moduleTable)
        #expect(table.source == "link_map" && table.read == "pipe", "\(table)")
        #expect(table.unchanged == record.modules.count)
    }

    @Test("an object recognised from start whose build-id changed in memory (a rebuilt library reloaded in place) is read again")
    func staleInstallBuildIDs() throws {
        // Every build-id kept at start is made wrong on purpose; the walk must not copy them.
        let run = try FixtureRun.run("null-pointer-write", .debug, environment: ["CRASH_REPORTING_TEST_MISBEHAVIOUR": "stale-install-build-ids"])
        let record = try run.onlyRecord()
        #expect(record.hasEnd && record.problems.isEmpty, "\(record.problems)")
        #expect(record.moduleTable?.source == "link_map")
        #expect(record.moduleTable?.unchanged == 0, "an object whose build-id differs from start's is not taken as unchanged")
        #expect(record.modules.count > 3)
        try checkModules(record)
        let frames = try LLVMSymbolizer.symbolize(record)
        _ = checkOrder(["cfs_write_null_pointer"], in: frames)
    }

    @Test("when the walk fails, the table from start is written and the record says so")
    func fallsBackToInstallTable() throws {
        let libraries = try buildPluginLibraries()
        let run = try FixtureRun.run("dlopened-library-crash", .debug, environment: [
            "CRASH_FIXTURE_PLUGIN": libraries.plugin.path, "CRASH_FIXTURE_UNLOADED": libraries.unloaded.path,
            "CRASH_REPORTING_TEST_MISBEHAVIOUR": "modules-walk-fails",
        ])
        let record = try run.onlyRecord()
        #expect(record.hasEnd && record.problems.isEmpty)
        #expect(record.moduleTable?.source == "install")
        // The table from start: the library closed since is still there, the one opened since is not.
        #expect(record.modules.contains { $0.path == libraries.unloaded.path })
        #expect(!record.modules.contains { $0.path == libraries.plugin.path })
        // Frame 0 is in no module of that table, or (seen: the loader reused the closed library's
        // addresses) in the wrong one: what the walk at the crash is for.
        let frame0 = try #require(record.frames.first)
        #expect(record.module(containing: frame0.lookupAddress)?.path != libraries.plugin.path)
        try checkModules(record)
    }
}
