// Symbolication on arrival with real debug files: a small C program compiled with -g here, its
// debug info split into a symbol store with objcopy and the binary stripped, as a production
// build ships. Payloads point at its functions by build-id and file address, as the runtime sends
// a stripped binary's frames. (tools/e2e-collector does the same with a crashed Swift fixture.)
import Collector
import CrashReportModel
import Foundation
import Testing

/// The C program, its build-id and where its functions are. Built once per test process.
struct LedgerBinary: Sendable {
    static let source = """
        #include <stdio.h>
        __attribute__((noinline)) int ledger_total(const int *entries, int count) {
            int total = 0;
            for (int i = 0; i < count; i++) total += entries[i];
            return total;
        }
        __attribute__((noinline)) int ledger_balance(void) {
            int entries[3] = {1, 2, 3};
            return ledger_total(entries, 3) == 6 ? 0 : 1;
        }
        int main(void) { return ledger_balance(); }
        """

    let folder: URL
    /// Holds `.build-id/xx/rest.debug`.
    let buildIDStore: URL
    /// Holds `ledger.debug` (the flat layout).
    let flatStore: URL
    let buildID: String
    /// File addresses (st_value) of the functions.
    let functions: [String: UInt64]

    static let shared = Result { try LedgerBinary() }

    private init() throws {
        // Beside the test bundle in .build (replaced on each run), not a folder per run in /tmp.
        folder = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("symbolication-tests")
        try? FileManager.default.removeItem(at: folder)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let sourceFile = folder.appendingPathComponent("ledger.c")
        try Self.source.write(to: sourceFile, atomically: true, encoding: .utf8)
        let binary = folder.appendingPathComponent("ledger").path
        try run("/usr/bin/cc", ["-g", "-O0", "-Wl,--build-id", "-o", binary, sourceFile.path])

        var functions: [String: UInt64] = [:]
        for line in try run("/usr/bin/nm", [binary]).split(separator: "\n") {
            let words = line.split(separator: " ")
            if words.count == 3, words[2].hasPrefix("ledger_"), let address = UInt64(words[0], radix: 16) {
                functions[String(words[2])] = address
            }
        }
        // The call in ledger_balance: a caller frame is looked up inside its call instruction
        // (return address − 1), as the runtime's module offsets are.
        for line in try run("/usr/bin/objdump", ["-d", "--no-show-raw-insn", binary]).split(separator: "\n")
        where line.contains("call") && line.hasSuffix("<ledger_total>") {
            let address = line.split(separator: ":")[0].trimmingCharacters(in: .whitespaces)
            functions["call ledger_total"] = UInt64(address, radix: 16)
        }
        self.functions = functions
        buildID = try #require(BuildID(elfFileAtPath: binary)).hex

        buildIDStore = folder.appendingPathComponent("store")
        let tree = buildIDStore.appendingPathComponent(".build-id/\(buildID.prefix(2))")
        try FileManager.default.createDirectory(at: tree, withIntermediateDirectories: true)
        try run("/usr/bin/objcopy", ["--only-keep-debug", binary, tree.appendingPathComponent("\(buildID.dropFirst(2)).debug").path])
        flatStore = folder.appendingPathComponent("flat")
        try FileManager.default.createDirectory(at: flatStore, withIntermediateDirectories: true)
        try run("/usr/bin/objcopy", ["--only-keep-debug", binary, flatStore.appendingPathComponent("ledger.debug").path])
        try run("/usr/bin/strip", ["--strip-all", binary])
    }

    /// A crash of the stripped program as its host uploads it: raw frames in ledger_total (at
    /// `offset` bytes into it) called from ledger_balance, and one frame in a libc nobody has.
    func rawPayload(reportID: String, offset: UInt64 = 8, symbolicated: Bool = false) throws -> DiagnosticsPayload {
        var payload = try Fixtures.samplePayload()
        func frame(_ index: Int, _ module: String, _ buildID: String, _ fileAddress: UInt64) -> DiagnosticsPayload.Frame {
            .init(index: index, address: "0x" + String(0x5555_0000_0000 + fileAddress, radix: 16), module: module,
                  module_offset: "0x" + String(fileAddress, radix: 16), build_id: buildID,
                  function: nil, file: nil, line: nil, column: nil, inlined: false)
        }
        let frames = [
            frame(0, "ledger", buildID, functions["ledger_total"]! + offset),
            frame(1, "ledger", buildID, functions["call ledger_total"]! + 1),
            frame(2, "libc.so.6", "00112233445566778899aabbccddeeff00112233", 0x29d8f),
        ]
        var entry = payload.crash_reports[0]
        entry.report_id = reportID
        entry.kind = "crash"
        entry.exception_type = "SIGSEGV"
        entry.exception_message = "invalid memory access at 0x0"
        entry.symbolicated = symbolicated
        entry.thread_info = [.init(id: 1, name: "main", crashed: true, is_main: true, frames: frames)]
        entry.stack_trace = frames.map(\.stackTraceLine)
        entry.images = [
            .init(path: "/srv/app/ledger", build_id: buildID, start: "0x555500000000", end: "0x555500010000", bias: "0x555500000000"),
            .init(path: "/usr/lib/x86_64-linux-gnu/libc.so.6", build_id: "00112233445566778899aabbccddeeff00112233",
                  start: "0x7f0000000000", end: "0x7f0000200000", bias: "0x7f0000000000"),
        ]
        payload.crash_reports = [entry]
        return payload
    }
}

@discardableResult
private func run(_ tool: String, _ arguments: [String]) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: tool)
    process.arguments = arguments
    let out = Pipe()
    process.standardOutput = out
    try process.run()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "\(tool) \(arguments) exited \(process.terminationStatus)"])
    }
    return String(decoding: data, as: UTF8.self)
}

@Suite struct SymbolicationTests {
    @Test func rawReportIsSymbolicatedFromABuildIDStoreAndGroupedByFunction() async throws {
        let ledger = try LedgerBinary.shared.get()
        let symbolication = ArrivalSymbolication(symbolDirectories: [ledger.buildIDStore.path], useDebuginfod: false)
        try await TestCollector.with(configure: { $0.symbolication = symbolication }) { collector in
            // Two crashes at different instructions of the same function: one issue, once the
            // worker has finished them after their answers.
            for (id, offset) in [("raw-1", 8), ("raw-2", 12)] as [(String, UInt64)] {
                let answer = try await collector.upload(try ledger.rawPayload(reportID: id, offset: offset).encoded())
                #expect(answer.status == 201, "\(answer.text)")
            }
            await symbolication.waitUntilIdle()
            let issues = try #require(try await collector.read("/api/issues").json["issues"] as? [[String: Any]])
            #expect(issues.count == 1, "\(issues)")
            let issue = try #require(issues.first)
            #expect(issue["title"] as? String == "ledger_total — SIGSEGV")
            #expect(issue["event_count"] as? Int == 2)

            let detail = try await collector.read("/api/issues/\(issue["id"] as! Int)").json
            let event = try #require(detail["latest_event"] as? [String: Any])
            #expect(event["symbolicated"] as? Bool == true)
            let frames = try #require(event["frames"] as? [[String: Any]])
            #expect(frames.map { $0["function"] as? String } == ["ledger_total", "ledger_balance", nil])
            let lines = LedgerBinary.source.split(separator: "\n", omittingEmptySubsequences: false)
            let loopLine = lines.firstIndex { $0.contains("total += entries[i]") }! + 1
            let callLine = lines.firstIndex { $0.contains("return ledger_total(entries, 3)") }! + 1
            #expect(frames[0]["file"] as? String == ledger.folder.appendingPathComponent("ledger.c").path)
            // -O0: 8 or 12 bytes in is still the function's prologue or its first lines.
            #expect((2...loopLine).contains(frames[0]["line"] as? Int ?? 0), "\(frames[0])")
            #expect(frames[1]["line"] as? Int == callLine, "\(frames[1])")
            // What the host sent stays: addresses, offsets, build-ids; the unknown libc frame as it came.
            #expect(frames[0]["module_offset"] as? String == "0x" + String(ledger.functions["ledger_total"]! + 12, radix: 16))
            #expect(frames[0]["build_id"] as? String == ledger.buildID)
            #expect(frames[2]["module_offset"] as? String == "0x29d8f" && frames[2]["file"] == nil)
            let stack = try #require(event["stack_trace"] as? [String])
            #expect(stack.first?.hasPrefix("#0 ledger ledger_total (\(ledger.folder.path)/ledger.c:") == true, "\(stack)")
        }
    }

    @Test func flatDebugFileByModuleNameIsUsed() async throws {
        let ledger = try LedgerBinary.shared.get()
        let symbolication = ArrivalSymbolication(symbolDirectories: [ledger.flatStore.path], useDebuginfod: false)
        let (payload, outcome) = await symbolication.symbolicate(try ledger.rawPayload(reportID: "flat"))
        let frames = payload.crash_reports[0].thread_info[0].frames
        #expect(frames.map(\.function) == ["ledger_total", "ledger_balance", nil])
        #expect(payload.crash_reports[0].symbolicated)
        #expect(outcome.reportsTried == 1 && outcome.reportsCompleted == 1 && outcome.framesResolved == 2)
        #expect(outcome.missing == ["libc.so.6 (build-id 00112233445566778899aabbccddeeff00112233)"])
    }

    @Test func alreadySymbolicatedReportIsUntouched() async throws {
        let ledger = try LedgerBinary.shared.get()
        let symbolication = ArrivalSymbolication(symbolDirectories: [ledger.buildIDStore.path], useDebuginfod: false)
        // The same frames that the store resolves (the tests above), but the host said symbolicated.
        let sent = try ledger.rawPayload(reportID: "done", symbolicated: true)
        let (payload, outcome) = await symbolication.symbolicate(sent)
        #expect(payload == sent)
        #expect(outcome == ArrivalSymbolication.Outcome())

        // In a raw report, a frame that has its file is not looked up again either.
        var partly = try ledger.rawPayload(reportID: "partly")
        partly.crash_reports[0].thread_info[0].frames[0].function = "host_named_it"
        partly.crash_reports[0].thread_info[0].frames[0].file = "/src/host.c"
        let (after, _) = await symbolication.symbolicate(partly)
        #expect(after.crash_reports[0].thread_info[0].frames.map(\.function) == ["host_named_it", "ledger_balance", nil])
    }

    @Test func missingDebugFileStoresTheReportAsSent() async throws {
        let ledger = try LedgerBinary.shared.get()
        let empty = ledger.folder.appendingPathComponent("empty-\(UUID().uuidString.prefix(6))")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        let symbolication = ArrivalSymbolication(symbolDirectories: [empty.path], useDebuginfod: false)
        try await TestCollector.with(configure: { $0.symbolication = symbolication }) { collector in
            let answer = try await collector.upload(try ledger.rawPayload(reportID: "no-symbols").encoded())
            #expect(answer.status == 201, "\(answer.text)")
            await symbolication.waitUntilIdle()
            let issues = try #require(try await collector.read("/api/issues").json["issues"] as? [[String: Any]])
            // Grouped as before symbolication existed: by module and offset.
            #expect(issues.first?["title"] as? String == "ledger + 0x" + String(ledger.functions["ledger_total"]! + 8, radix: 16) + " — SIGSEGV")
            let detail = try await collector.read("/api/issues/\(issues.first?["id"] as? Int ?? 0)").json
            let event = try #require(detail["latest_event"] as? [String: Any])
            #expect(event["symbolicated"] as? Bool == false)
            #expect((event["frames"] as? [[String: Any]])?.allSatisfy { $0["function"] == nil } == true)
        }
    }

    @Test func oneTokensLookupsAreCappedPerHourAndOtherTokensAreNot() async throws {
        let ledger = try LedgerBinary.shared.get()
        var limits = ArrivalSymbolication.Limits()
        limits.buildIDsPerTokenPerHour = 1
        let symbolication = ArrivalSymbolication(symbolDirectories: [ledger.buildIDStore.path], useDebuginfod: false, limits: limits)
        try await TestCollector.with(configure: { $0.symbolication = symbolication }) { collector in
            // The first token's hour goes on a build-id nobody has (a report of libc frames only)…
            var libcOnly = try ledger.rawPayload(reportID: "libc-only")
            libcOnly.crash_reports[0].thread_info[0].frames.removeFirst(2)
            #expect(try await collector.upload(try libcOnly.encoded()).status == 201)
            await symbolication.waitUntilIdle()
            // …so its ledger crash stays raw: the ledger's build-id would be a second lookup.
            #expect(try await collector.upload(try ledger.rawPayload(reportID: "capped").encoded()).status == 201)
            await symbolication.waitUntilIdle()
            // The other token's hour is its own.
            #expect(try await collector.upload(try ledger.rawPayload(reportID: "other-token").encoded(), token: "second-token").status == 201)
            await symbolication.waitUntilIdle()

            let issues = try #require(try await collector.read("/api/issues").json["issues"] as? [[String: Any]])
            let titles = Set(issues.compactMap { $0["title"] as? String })
            let raw = "ledger + 0x" + String(ledger.functions["ledger_total"]! + 8, radix: 16) + " — SIGSEGV"
            #expect(titles.contains(raw), "the capped token's crash is grouped raw: \(titles)")
            #expect(titles.contains("ledger_total — SIGSEGV"), "the other token's is symbolicated: \(titles)")

            // /metrics counts each raw frame's lookup. The first token's one build-id is libc's: its
            // frame has no debug file in both of its uploads, and the capped upload's two ledger
            // frames are not looked up. The second token's one build-id is the ledger's (two frames
            // resolved), so its libc frame is the one past the cap.
            let series = try await scrape(collector)
            #expect(series["collector_symbolication_frames_total{result=\"resolved\"}"] == 2, "\(series)")
            #expect(series["collector_symbolication_frames_total{result=\"no_debug_file\"}"] == 2)
            #expect(series["collector_symbolication_frames_total{result=\"over_cap\"}"] == 3)
            #expect(series["collector_symbolication_queue_depth"] == 0)
        }
    }

    @Test func theAnswerDoesNotWaitForSymbolication() async throws {
        // The worker held at its first lookup (as a stalled debuginfod holds it; tools/collector-abuse
        // has the real one): the raw upload is answered, and stored raw, meanwhile.
        let ledger = try LedgerBinary.shared.get()
        let gate = DispatchSemaphore(value: 0)
        let symbolication = ArrivalSymbolication(symbolDirectories: [ledger.buildIDStore.path], useDebuginfod: false,
                                                 beforeLookup: { gate.wait() })
        try await TestCollector.with(configure: { $0.symbolication = symbolication }) { collector in
            let answer = try await collector.upload(try ledger.rawPayload(reportID: "held").encoded())
            #expect(answer.status == 201, "\(answer.text)")
            #expect(symbolication.unfinishedUploads == 1)
            var issues = try #require(try await collector.read("/api/issues").json["issues"] as? [[String: Any]])
            let raw = "ledger + 0x" + String(ledger.functions["ledger_total"]! + 8, radix: 16) + " — SIGSEGV"
            #expect(issues.map { $0["title"] as? String } == [raw], "stored raw until the worker is done")
            gate.signal()
            await symbolication.waitUntilIdle()
            issues = try #require(try await collector.read("/api/issues").json["issues"] as? [[String: Any]])
            #expect(issues.map { $0["title"] as? String } == ["ledger_total — SIGSEGV"], "then moved to its function's issue")
        }
    }

    @Test func aReplacementIsSkippedWhenTheStoredEntryChangedSinceItWasRead() async throws {
        // Two passes finishing one report (the worker and a start's pass, or two collectors on one
        // database): the later write must not undo the earlier one.
        let ledger = try LedgerBinary.shared.get()
        try await TestCollector.with { collector in
            #expect(try await collector.upload(try ledger.rawPayload(reportID: "raced").encoded()).status == 201)
            let read = try #require(try await collector.store.rawReports(after: 0, limit: 10).first)
            let newer = read.reportJSON.replacingOccurrences(of: "\"raced\"", with: "\"raced-newer\"")
            #expect(newer != read.reportJSON)
            // The first pass: the entry is still what it read.
            #expect(try await collector.store.replaceReport(.init(id: read.id, bundleID: read.bundleID, kind: "crash", reportJSON: newer,
                                                                  symbolicated: false, issue: nil, expectedJSON: read.reportJSON)))
            // The second pass read it before that: skipped, and the first pass's entry stays.
            #expect(try await collector.store.replaceReport(.init(id: read.id, bundleID: read.bundleID, kind: "crash", reportJSON: "{}",
                                                                  symbolicated: true, issue: nil, expectedJSON: read.reportJSON)) == false)
            let stored = try #require(try await collector.store.rawReports(after: 0, limit: 10).first)
            #expect(stored.reportJSON == newer)
        }
    }

    @Test func reportsStoredRawAreResymbolicatedAndRegroupedWhenSymbolsArrive() async throws {
        let ledger = try LedgerBinary.shared.get()
        try await TestCollector.with { collector in   // no symbols at ingest
            for (id, offset) in [("late-1", 8), ("late-2", 12)] as [(String, UInt64)] {
                #expect(try await collector.upload(try ledger.rawPayload(reportID: id, offset: offset).encoded()).status == 201)
            }
            let before = try #require(try await collector.read("/api/issues").json["issues"] as? [[String: Any]])
            #expect(before.count == 2, "raw: one issue per offset")

            let symbolication = ArrivalSymbolication(symbolDirectories: [ledger.buildIDStore.path], useDebuginfod: false)
            let result = try await symbolication.resymbolicate(collector.store, batch: 1)   // paging too
            #expect(result.examined == 2 && result.improved == 2 && result.completed == 2 && result.regrouped == 2, "\(result)")
            #expect(result.missing == ["libc.so.6 (build-id 00112233445566778899aabbccddeeff00112233)"])

            let after = try #require(try await collector.read("/api/issues").json["issues"] as? [[String: Any]])
            #expect(after.count == 1, "\(after)")
            #expect(after.first?["title"] as? String == "ledger_total — SIGSEGV")
            #expect(after.first?["event_count"] as? Int == 2)
            #expect(Set(before.compactMap { $0["id"] as? Int }).isDisjoint(with: after.compactMap { $0["id"] as? Int }),
                    "the raw issues are gone")
            let detail = try await collector.read("/api/issues/\(after.first?["id"] as? Int ?? 0)").json
            let event = try #require(detail["latest_event"] as? [String: Any])
            #expect(event["symbolicated"] as? Bool == true)
            #expect((event["frames"] as? [[String: Any]])?.map { $0["function"] as? String } == ["ledger_total", "ledger_balance", nil])

            // Nothing raw is left to look at.
            #expect(try await symbolication.resymbolicate(collector.store).examined == 0)
        }
    }
}
