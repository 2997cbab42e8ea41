// The handler's one-line crash summary on standard error (Configuration.crashLineOnStandardError):
// written after the record is durable, it names the record and the innermost frames as module +
// offset with build-ids, and crashtool symbolicates a log that holds it, prefix and all.
import CrashReportModel
import CrashTestSupport
import Foundation
import Testing

@Suite("Crash line on standard error")
struct CrashLineTests {
    @Test("one JSON line per crash, matching the record; crashtool reads it from a log", arguments: BuildConfiguration.allCases)
    func crashLine(_ configuration: BuildConfiguration) throws {
        let run = try FixtureRun.run("null-pointer-write", configuration, environment: ["CRASH_FIXTURE_CRASH_LINE": "1"])
        #expect(run.terminatedBySignal == SIGSEGV)
        let record = try run.onlyRecord()
        let lines = run.standardError.split(separator: "\n").filter { $0.contains(#"{"swift_crash_reporting":"crash""#) }
        try #require(lines.count == 1, "stderr: \(run.standardError)")
        let line = try #require(try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any])
        #expect(line["id"] as? String == record.id)
        #expect(line["signo"] as? Int == 11)
        #expect(line["tid"] as? Int == Int(record.thread?.id ?? -1))
        // The signal as the record says it: the fault address (a CPU fault), no sender, the depth.
        #expect(line["fault_address"] as? String == record.signal?.faultAddress?.description)
        #expect(record.signal?.faultAddress != nil)
        #expect(line["sender_pid"] == nil && line["stack_overflow"] == nil)
        #expect(line["depth"] as? Int == record.stack?.depth)
        let frames = try #require(line["frames"] as? [[String: Any]])
        #expect(frames.count == min(16, record.frames.count))
        #expect(zip(frames, record.frames).allSatisfy { ($0["address"] as? String) == $1.address.description })
        let fixtureModule = try #require(record.modules.first { $0.path.hasSuffix("/CrashFixture") })
        #expect(frames.contains { $0["build_id"] as? String == fixtureModule.buildID.hex })

        // As journald would keep it: a prefix before the JSON, other lines around it.
        let log = temporaryFolder("crash-line").appendingPathExtension("log")
        let text = "Nov 23 21:00:00 host app[\(record.processID)]: starting\n"
            + "Nov 23 21:00:01 host app[\(record.processID)]: " + lines[0] + "\n"
        try Data(text.utf8).write(to: log)
        let (status, symbolicated, _) = try crashtool(["symbolicate", log.path])
        #expect(status == 0)
        #expect(symbolicated.contains("SIGSEGV"))
        #expect(symbolicated.contains("at \(try #require(record.signal?.faultAddress))"), "\(symbolicated)")
        #expect(symbolicated.contains("from a crash line") && !symbolicated.contains("PARTIAL"), "\(symbolicated)")
        for level in 1...5 where configuration == .debug || level == 5 {
            #expect(symbolicated.contains("level\(level)("), "level\(level) in:\n\(symbolicated)")
        }
    }

    @Test("a stack overflow's crash line says so, with the stack's depth, and crashtool's reason is the record's")
    func stackOverflowLine() throws {
        let run = try FixtureRun.run("main-thread-stack-overflow", .release, environment: ["CRASH_FIXTURE_CRASH_LINE": "1"])
        #expect(run.terminatedBySignal == SIGSEGV)
        let record = try run.onlyRecord()
        #expect(record.signal?.stackOverflow == true)
        let lines = run.standardError.split(separator: "\n").filter { $0.contains(#"{"swift_crash_reporting":"crash""#) }
        try #require(lines.count == 1, "stderr: \(run.standardError)")
        let line = try #require(try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any])
        #expect(line["stack_overflow"] as? Bool == true)
        #expect(line["fault_address"] as? String == record.signal?.faultAddress?.description)
        let depth = try #require(line["depth"] as? Int)
        #expect(depth == record.stack?.depth && depth > 16, "depth \(depth)")
        let log = temporaryFolder("crash-line-overflow").appendingPathExtension("log")
        try Data((lines[0] + "\n").utf8).write(to: log)
        let (status, symbolicated, _) = try crashtool(["symbolicate", log.path])
        #expect(status == 0)
        #expect(symbolicated.contains("Reason:    Stack overflow: SIGSEGV at \(try #require(record.signal?.faultAddress))"), "\(symbolicated)")
        #expect(symbolicated.contains("innermost 16 of \(depth) frames"), "\(symbolicated)")
    }
}
