// FastPayloadReader gives JSONDecoder's answer or none: for every body, the direct decode with it
// (PayloadDecoding.direct) equals the direct decode by JSONDecoder alone — the same payload to the
// byte once encoded, the same "filled" — and it reads the payloads senders send (the sample, seed
// 000's example, a payload with every field the runtime writes) instead of giving them up.
@testable import Collector
import CrashReportModel
import Foundation
import Testing

@Suite struct FastPayloadReaderTests {
    /// A payload with every field of the model set, as the runtime encodes it.
    static func everyField() throws -> Data {
        typealias P = DiagnosticsPayload
        let frames = [
            P.Frame(index: 0, address: "0x5555555551a0", module: "Server", module_offset: "0x11a0", build_id: "ab12cd34",
                    function: "Server.loadProfile(id: Swift.Int) -> Swift.String", file: "Sources/Server/main.swift", line: 42,
                    column: 7, inlined: false),
            P.Frame(index: 1, address: "0x7ffff7a3b2c0", module: "libswiftCore.so", module_offset: "0x23b2c0", build_id: nil,
                    function: nil, file: nil, line: nil, column: nil, inlined: true),
            P.Frame(index: 2, address: "0x5555555552b0", module: "Server", module_offset: "0x12b0", build_id: "ab12cd34",
                    function: "(1) await resume partial function for Server.handle()", file: "Sources/Server/main.swift",
                    line: 7, column: nil, inlined: false, async: true),
        ]
        let report = P.CrashReportEntry(
            timestamp: "2026-11-28T06:00:00.000Z", exception_type: "SIGILL",
            exception_message: "Fatal error: Unexpectedly found nil while unwrapping an Optional value \"quoted\" \\ tab\t é 😀 \u{2028}",
            stack_trace: frames.map(\.stackTraceLine),
            thread_info: [P.ThreadInfo(id: 4242, name: "NIO-ELT-0-#1", crashed: true, is_main: false, frames: frames),
                          P.ThreadInfo(id: 4243, name: "", crashed: false, is_main: true, frames: [], state: "no_answer")],
            report_id: "9F2C3A1E-0000-4000-8000-000000000001", kind: "crash", symbolicated: true, is_partial: false,
            images: [P.Image(path: "/srv/Server", build_id: "ab12cd34", start: "0x555555554000", end: "0x555555600000", bias: "0x555555554000")],
            signal: P.SignalInfo(number: 4, name: "SIGILL", code: 2, code_name: "ILL_ILLOPN", fault_address: "0x5555555551a0"),
            error: P.ErrorInfo(domain: "OrderStoreUnavailable", code: -7, message: "the order store did not answer",
                               user_info: ["route": "/orders/:id", "status": 500, "ratio": 0.25, "ok": false, "none": nil,
                                           "nested": ["list": [1, "two", 3.5, [true]]]],
                               underlying: ["first", ["code": 1]]),
            termination: P.TerminationInfo(kind: "oom_kill", memory: P.MemoryInfo(
                cgroup: "/sys/fs/cgroup/server", limit_bytes: 268_435_456,
                samples: [P.MemoryInfo.Sample(timestamp: "2026-11-28T05:59:55.000Z", rss_bytes: 120_000_000, cgroup_bytes: nil)])),
            requests_in_flight: [P.InFlightRequest(method: "GET", route: "/users/:id", request_id: "1f3a", trace_id: nil, thread_id: 4242,
                                                   age_ms: 3, crashed_thread: true)])
        let payload = P(
            test_run_id: "550e8400-e29b-41d4-a716-446655440000",
            app_metadata: AppMetadata(app_name: "Server", app_version: "1.2.3", build_number: "45", bundle_id: "com.example.server",
                                      environment: "production"),
            device_metadata: HostMetadata(device_model: "x86_64", device_identifier: "id", ios_version: "Debian 12", locale: "en_US",
                                          timezone: "UTC", is_simulator: false, available_storage_mb: 73000, total_memory_mb: 24105,
                                          battery_level: 0.72, battery_state: "charging", cpu_model: "Xeon", cpu_count: 2,
                                          hostname_hash: "c0ffee", virtualization: "kvm"),
            timestamp_collected: "2026-11-28T06:00:01.000Z",
            logs: [P.LogEntry(timestamp: "2026-11-28T05:59:59.000Z", level: "info", tag: "http", message: "GET /users/:id 200",
                              metadata: ["request_id": "1f3a", "duration_ms": 1.5, "status": 200]),
                   P.LogEntry(timestamp: "2026-11-28T05:59:59.500Z", level: "error", tag: "db", message: "ünïcode \u{0}")],
            network_errors: [NetworkErrorDigest(timestamp: "2026-11-28T05:59:58.000Z", request_url: "https://api.example.com/x",
                                                request_method: "POST", status_code: nil, error_type: "timeout",
                                                error_message: "timed out", request_duration_ms: 30000, retry_count: 2)],
            crash_reports: [report],
            screenshots: [P.ScreenshotRef(id: "s1", timestamp: "2026-11-28T05:59:00.000Z", screen_name: "/users/:id", file_size_bytes: 0)],
            custom_data: ["feature_flags": ["new_checkout": true], "count": -3, "big": 9_007_199_254_740_993],
            user_id: "user-17", custom_keys: ["plan": "free", "launches": 12, "beta": true, "ratio": 0.5],
            reporter: P.Reporter(name: "swift-crash-reporting", version: "0.5.0", dropped_reports: 1))
        return try payload.encoded()
    }

    /// Both ways agree on `body`; true when the fast reader read it.
    @discardableResult
    static func agree(_ body: [UInt8], _ name: @autoclosure () -> String) -> Bool {
        let read = FastPayloadReader.read(body)
        if let read {
            // What it read is what JSONDecoder reads: the payload (to the scalar: its encoding) and
            // which reports sent report_id and symbolicated.
            let decoded = try? JSONDecoder().decode(PayloadDecoding.Normalising.self, from: Data(body))
            #expect(decoded != nil, "\(name()): read a body JSONDecoder refuses")
            if let decoded {
                #expect(read.payload == decoded.payload, "\(name())")
                #expect((try? read.payload.encoded()) == (try? decoded.payload.encoded()), "\(name()): the same strings, scalar for scalar")
                #expect(read.reports.map { [$0.hasReportID, $0.hasSymbolicated] } == decoded.reports.map { [$0.hasReportID, $0.hasSymbolicated] },
                        "\(name())")
            }
        }
        // And what PayloadDecoding makes of it, with the collector's defaults, is the same either way.
        let fast = PayloadDecoding.direct(body)
        let reference = PayloadDecoding.direct(body, useFastReader: false)
        #expect(fast?.payload == reference?.payload && fast?.filled == reference?.filled, "\(name())")
        return read != nil
    }

    @Test func readsWhatSendersSendAsJSONDecoderDoes() throws {
        let bodies: [(String, [UInt8])] = [
            ("the sample", [UInt8](try Fixtures.samplePayloadData())),
            ("seed 000's example", [UInt8](Fixtures.seedExample)),
            ("every field", [UInt8](try Self.everyField())),
            ("every field, pretty-printed", [UInt8](try JSONSerialization.data(
                withJSONObject: try JSONSerialization.jsonObject(with: try Self.everyField()), options: [.prettyPrinted]))),
            ("escapes and pairs", [UInt8](try Self.everyField()).replacingFirst(
                Array(#""user-17""#.utf8), with: Array(#""\u00e9\ud83d\ude00\/\b\f\n\r\t\"\\\u0000""#.utf8))),
        ]
        for (name, body) in bodies {
            #expect(Self.agree(body, name), "\(name): given up")
        }
    }

    @Test func givesUpWhereItIsNotSure() throws {
        let base = [UInt8](try Self.everyField())
        let cases: [(String, [UInt8])] = [
            ("a duplicate key", base.replacingFirst(Array(#""user_id":"user-17""#.utf8), with: Array(#""user_id":"a","user_id":"b""#.utf8))),
            ("an integer written 2.0", base.replacingFirst(Array(#""cpu_count":2"#.utf8), with: Array(#""cpu_count":2.0"#.utf8))),
            ("an integer written 2e0", base.replacingFirst(Array(#""cpu_count":2"#.utf8), with: Array(#""cpu_count":2e0"#.utf8))),
            ("free-form 12.0", base.replacingFirst(Array(#""launches":12"#.utf8), with: Array(#""launches":12.0"#.utf8))),
            ("a lone surrogate", base.replacingFirst(Array(#""user-17""#.utf8), with: Array(#""\ud800""#.utf8))),
            ("a raw tab in a string", base.replacingFirst(Array(#""user-17""#.utf8), with: Array("\"a\tb\"".utf8))),
            ("invalid UTF-8", base.replacingFirst(Array(#""user-17""#.utf8), with: [0x22, 0xC3, 0x28, 0x22])),
            ("invalid UTF-8 in an unknown key", base.replacingFirst(Array(#""user_id""#.utf8), with: [0x22, 0xFF, 0x22])),
            ("trailing bytes", base + Array(" x".utf8)),
            // This toolchain's JSONDecoder refuses a zero with an exponent as an underflow (review, 2026-11-28).
            ("a zero double written 0e1", base.replacingFirst(Array(#""battery_level":0.72"#.utf8), with: Array(#""battery_level":0e1"#.utf8))),
            ("a zero double written 0.0E+2", base.replacingFirst(Array(#""battery_level":0.72"#.utf8), with: Array(#""battery_level":0.0E+2"#.utf8))),
            ("an integer past Int", base.replacingFirst(Array(#""cpu_count":2"#.utf8), with: Array(#""cpu_count":99999999999999999999"#.utf8))),
        ]
        for (name, body) in cases {
            #expect(body != base, "\(name): the edit did not apply")
            #expect(FastPayloadReader.read(body) == nil, "\(name)")
            Self.agree(body, name)
        }
    }

    /// Every member of the every-field payload set to null, removed, or given another kind of value:
    /// a required field gone, an optional one absent, a type mismatch, free-form values of every kind.
    @Test func membersChangedOneAtATime() throws {
        let root = try #require(try JSONSerialization.jsonObject(with: try Self.everyField()) as? [String: Any])
        let replacements: [Any?] = [nil, NSNull(), 7, -1, 1.5, "text", "", true, [Any](), [String: Any](), [1, "a"], ["k": 1]]
        var bodies = 0, read = 0
        func visit(_ value: Any, _ set: (Any?) throws -> [String: Any], _ path: String) throws {
            for (i, replacement) in replacements.enumerated() where !path.isEmpty {
                let changed = try set(replacement)
                let body = [UInt8](try JSONSerialization.data(withJSONObject: changed, options: [.sortedKeys]))
                bodies += 1
                if Self.agree(body, "\(path) = replacement \(i)") { read += 1 }
            }
            if let object = value as? [String: Any] {
                for (key, member) in object {
                    try visit(member, { replacement in
                        var copy = object
                        copy[key] = replacement
                        return try set(copy)
                    }, path + "." + key)
                }
            } else if let array = value as? [Any], let first = array.first {
                try visit(first, { replacement in
                    var copy = array
                    if let replacement { copy[0] = replacement } else { copy.removeFirst() }
                    return try set(copy)
                }, path + "[0]")
            }
        }
        try visit(root, { try #require($0 as? [String: Any]) }, "")
        #expect(bodies > 1000)
        #expect(read > bodies / 10, "the reader read \(read) of \(bodies) changed bodies")
    }

    /// Seeded byte edits of the sample and the every-field payload (a byte removed, inserted,
    /// replaced, a run doubled): JSON broken in every way, and strings and numbers bent.
    @Test func seededByteEdits() throws {
        var random = SplitMix(seed: 0x5EED_0F_FA57)
        let alphabet: [UInt8] = Array(#"{}[],:"\0123456789-+.eEntfrulsa "#.utf8) + [0x09, 0x0A, 0x00, 0x1F, 0x7F, 0x80, 0xC3, 0xA9, 0xE2, 0xFF]
        var edited = 0, read = 0
        for source in [[UInt8](try Fixtures.samplePayloadData()), [UInt8](try Self.everyField())] {
            for round in 0..<1500 {
                var body = source
                for _ in 0..<(1 + Int(random.next() % 3)) {
                    let at = Int(random.next() % UInt64(body.count))
                    switch random.next() % 4 {
                    case 0: body.remove(at: at)
                    case 1: body.insert(alphabet[Int(random.next() % UInt64(alphabet.count))], at: at)
                    case 2: body[at] = alphabet[Int(random.next() % UInt64(alphabet.count))]
                    default:
                        let end = min(body.count, at + 1 + Int(random.next() % 12))
                        body.insert(contentsOf: body[at..<end], at: at)
                    }
                }
                edited += 1
                if Self.agree(body, "round \(round) of a \(source.count)-byte body") { read += 1 }
            }
        }
        #expect(read > 0 && read < edited, "read \(read) of \(edited) edited bodies")
    }
}

/// A small deterministic generator (SplitMix64), so that every run edits the same bytes.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

extension Array where Element == UInt8 {
    /// The first occurrence of `pattern` replaced (unchanged when absent).
    func replacingFirst(_ pattern: [UInt8], with replacement: [UInt8]) -> [UInt8] {
        guard pattern.count <= count else { return self }
        for start in 0...(count - pattern.count) where self[start..<(start + pattern.count)].elementsEqual(pattern) {
            return Array(self[..<start]) + replacement + Array(self[(start + pattern.count)...])
        }
        return self
    }
}
