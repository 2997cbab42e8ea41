// The record reader: complete records, records cut short, and input that is not a record.
import CrashReportModel
import Foundation
import Testing

let header = #"{"format":"swift-crash-reporting.crash-record","version":1,"id":"r1","app_id":"com.example","app_version":"2.0","pid":42,"timestamp_ns":1700000000000000000,"arch":"x86_64"}"#

@Suite("CrashRecord reader")
struct CrashRecordTests {
    @Test("requests in flight: each request line, and the summary's dropped count")
    func requestsInFlight() throws {
        let text = [
            header,
            #"{"type":"signal","signo":4,"name":"SIGILL","code":2,"code_name":"ILL_ILLOPN","fault_address":"0x5555"}"#,
            #"{"type":"request","method":"GET","route":"/users/{id}","request_id":"5b97d1c2a0e34f6e0000000000000007","tid":43,"age_ms":12,"crashed_thread":true}"#,
            #"{"type":"request","method":"POST","route":"/orders","trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","tid":44,"age_ms":2001,"crashed_thread":false}"#,
            #"{"type":"request","method":"GET","tid":45,"age_ms":1,"crashed_thread":false}"#,
            #"{"type":"requests","in_flight":2,"dropped":3}"#,
            #"{"type":"end","elapsed_before_sync_ns":100}"#,
        ].joined(separator: "\n") + "\n"
        let record = try CrashRecord(data: Data(text.utf8))
        #expect(record.requests == [
            .init(method: "GET", route: "/users/{id}", requestID: "5b97d1c2a0e34f6e0000000000000007", traceID: nil, threadID: 43,
                  ageMilliseconds: 12, startedOnCrashedThread: true),
            .init(method: "POST", route: "/orders", requestID: nil, traceID: "4bf92f3577b34da6a3ce929d0e0e4736", threadID: 44,
                  ageMilliseconds: 2001, startedOnCrashedThread: false),
        ])
        #expect(record.requestsDropped == 3)
        #expect(record.problems.count == 1 && record.problems[0].contains("request"), "a line without a route is a problem: \(record.problems)")
    }

    @Test("version 2: each later thread line opens that thread's section; the crashed thread keeps its own")
    func threadSections() throws {
        let text = [
            header.replacingOccurrences(of: #""version":1"#, with: #""version":2"#),
            #"{"type":"signal","signo":11,"name":"SIGSEGV","code":1,"code_name":"SEGV_MAPERR","fault_address":"0x0"}"#,
            #"{"type":"thread","tid":42,"name":"app","main":true,"crashed":true}"#,
            #"{"type":"module","path":"/app","start":"0x5000","end":"0x7000","bias":"0x4000","build_id":"abcdef"}"#,
            #"{"type":"frame","index":0,"address":"0x5555","kind":"pc"}"#,
            #"{"type":"stack","unwinder":"libunwind","frames":1,"depth":1,"truncated":false,"depth_is_lower_bound":false}"#,
            #"{"type":"thread","tid":43,"name":"worker","main":false,"crashed":false,"state":"answered"}"#,
            #"{"type":"frame","index":0,"address":"0x5600","kind":"pc"}"#,
            #"{"type":"frame","index":1,"address":"0x5700","kind":"return_address"}"#,
            #"{"type":"stack","unwinder":"frame-pointer","frames":2,"depth":2,"truncated":false,"depth_is_lower_bound":false}"#,
            #"{"type":"thread","tid":44,"name":"masked","main":false,"crashed":false,"state":"blocked_signal"}"#,
            #"{"type":"thread","tid":45,"name":"slow","main":false,"crashed":false,"state":"no_answer"}"#,
            #"{"type":"modules","source":"link_map","count":1,"loader_state":"consistent","elapsed_ns":4200}"#,
            #"{"type":"threads","total":4,"listed":4,"asked":2,"answered":1,"signo":64,"wait_ns":250000000,"elapsed_ns":251000000}"#,
            #"{"type":"end","elapsed_before_sync_ns":100}"#,
        ].joined(separator: "\n") + "\n"
        let record = try CrashRecord(data: Data(text.utf8))
        #expect(record.version == 2)
        #expect(record.thread?.id == 42)
        #expect(record.frames.map(\.address) == [Address(0x5555)])
        #expect(record.stack?.unwinder == "libunwind")
        #expect(record.otherThreads.map(\.thread.id) == [43, 44, 45])
        #expect(record.otherThreads.map(\.state) == ["answered", "blocked_signal", "no_answer"])
        #expect(record.otherThreads[0].frames.map(\.lookupAddress) == [Address(0x5600), Address(0x56ff)])
        #expect(record.otherThreads[0].stack?.unwinder == "frame-pointer")
        #expect(record.otherThreads[1].frames.isEmpty && record.otherThreads[1].stack == nil)
        #expect(record.threadsSummary?.answered == 1 && record.threadsSummary?.waitNanoseconds == 250_000_000)
        #expect(record.moduleTable?.source == "link_map" && record.moduleTable?.count == 1)
        #expect(record.moduleTable?.loaderState == "consistent" && record.moduleTable?.elapsedNanoseconds == 4200)
        #expect(!record.isPartial)
    }

    @Test("an unknown record version is refused")
    func unknownVersion() throws {
        let text = header.replacingOccurrences(of: #""version":1"#, with: #""version":3"#) + "\n"
        #expect(throws: CrashRecordError.self) { try CrashRecord(data: Data(text.utf8)) }
    }

    @Test("a complete record reads into typed fields")
    func complete() throws {
        let text = [
            header,
            #"{"type":"signal","signo":4,"name":"SIGILL","code":2,"code_name":"ILL_ILLOPN","fault_address":"0x5555"}"#,
            #"{"type":"thread","tid":43,"name":"worker \"a\"","main":false,"crashed":true}"#,
            #"{"type":"registers","values":{"rip":"0x5555","rsp":"0x7ffd0000"}}"#,
            #"{"type":"fatal_message","text":"Fatal error: boom\n"}"#,
            #"{"type":"frame","index":0,"address":"0x5555","kind":"pc"}"#,
            #"{"type":"frame","index":1,"address":"0x6000","kind":"return_address"}"#,
            #"{"type":"stack","unwinder":"libunwind","frames":2,"depth":2,"truncated":false,"depth_is_lower_bound":false}"#,
            #"{"type":"module","path":"/app","start":"0x5000","end":"0x7000","bias":"0x4000","build_id":"ABCDEF"}"#,
            #"{"type":"something_newer","x":1}"#,
            #"{"type":"end","elapsed_before_sync_ns":100}"#,
            #"{"type":"timing","durable_ns":250000}"#,
        ].joined(separator: "\n") + "\n"
        let record = try CrashRecord(data: Data(text.utf8))
        #expect(record.id == "r1")
        #expect(record.processID == 42)
        #expect(record.signal?.name == "SIGILL")
        #expect(record.signal?.faultAddress == Address(0x5555))
        #expect(record.thread?.id == 43)
        #expect(record.thread?.name == "worker \"a\"")
        #expect(record.thread?.isMain == false)
        #expect(record.registers["rip"] == Address(0x5555))
        #expect(record.fatalMessage == "Fatal error: boom\n")
        #expect(record.frames.map(\.lookupAddress) == [Address(0x5555), Address(0x5fff)])
        #expect(record.module(containing: Address(0x6000))?.fileAddress(of: Address(0x6000)) == Address(0x2000))
        #expect(record.modules.first?.buildID.hex == "abcdef")
        #expect(record.durableNanoseconds == 250_000)
        #expect(!record.isPartial)
    }

    @Test("a record cut mid-line keeps what it has and says it is partial")
    func truncated() throws {
        let text = header + "\n" + #"{"type":"signal","signo":11,"name":"SIGSEGV","code":1,"code_name":"","fault_address":"0x0"}"# + "\n" + #"{"type":"frame","ind"#
        let record = try CrashRecord(data: Data(text.utf8), source: "cut.crash")
        #expect(record.isPartial)
        #expect(record.signal?.number == 11)
        #expect(record.problems == ["line 3: not a JSON object with a \"type\""])
    }

    @Test("garbage is refused with the file and line", arguments: [
        ("", "empty file, not a crash record"),
        ("hello\n", "not a crash record (missing \"format\":\"swift-crash-reporting.crash-record\" header)"),
        (#"{"format":"swift-crash-reporting.crash-record","version":9}"#, "unsupported record version 9"),
    ])
    func garbage(_ input: String, _ reason: String) {
        #expect(throws: CrashRecordError(source: "bad.crash", line: 1, reason: reason)) {
            try CrashRecord(data: Data(input.utf8), source: "bad.crash")
        }
    }

    @Test("an out-of-range number is a problem, not a trap (found by the fuzzer)")
    func outOfRange() throws {
        let text = header + "\n" + #"{"type":"signal","signo":99999999999,"name":"SIGSEGV","code":1,"code_name":"","fault_address":"0x0"}"#
            + "\n" + #"{"type":"thread","tid":-99999999999,"name":"x","main":true}"# + "\n" + #"{"type":"end"}"#
        let record = try CrashRecord(data: Data(text.utf8))
        #expect(record.signal == nil && record.thread == nil)
        #expect(record.problems == [#"line 2: signal: missing or out-of-range "signo""#, #"line 3: thread: missing or out-of-range "tid""#])
    }

    @Test("a field of the wrong type is reported, the rest kept")
    func wrongField() throws {
        let text = header + "\n" + #"{"type":"frame","index":0,"address":"nowhere","kind":"pc"}"# + "\n" + #"{"type":"end"}"#
        let record = try CrashRecord(data: Data(text.utf8))
        #expect(record.frames.isEmpty)
        #expect(record.hasEnd)
        #expect(record.problems == [#"line 2: frame: "address" is not a 0x… address"#])
    }
}

@Suite("Diagnostics payload")
struct DiagnosticsPayloadTests {
    @Test("seed 000's own example payload decodes (its optional fields and our extensions may be missing)")
    func seedExample() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Payloads/seed000-example-payload.json")
        let payload = try JSONDecoder().decode(DiagnosticsPayload.self, from: Data(contentsOf: url))
        #expect(payload.test_run_id == "550e8400-e29b-41d4-a716-446655440000")
        #expect(payload.device_metadata.device_model == "iPhone 14" && payload.device_metadata.cpu_count == 0)
        #expect(payload.logs.count == 2 && payload.network_errors.first?.status_code == 500)
        #expect(payload.crash_reports.isEmpty && payload.custom_keys.isEmpty && payload.user_id == nil)
        #expect(payload.custom_data["selected_child_count"] == .int(2))
    }

    @Test("a payload without its required fields does not decode")
    func missingRequired() {
        #expect(throws: (any Error).self) { try JSONDecoder().decode(DiagnosticsPayload.self, from: Data(#"{"app_metadata":{}}"#.utf8)) }
    }
}
