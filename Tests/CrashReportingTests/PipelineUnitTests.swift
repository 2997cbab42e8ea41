// Units of the upload pipeline, in process: seed 000's limits, gzip, the response → outcome
// mapping, seed 002's connect URL, and what a payload says about each kind of record.
@_spi(Benchmarks) @testable import CrashReporting
import CrashReportModel
import CZlib
import Foundation
import Glibc
import Testing

@Suite("Pipeline units")
struct PipelineUnitTests {
    static let host = HostMetadata(device_model: "test", device_identifier: "abcd1234", ios_version: "Debian 12", locale: "C",
                                   timezone: "UTC", is_simulator: false, available_storage_mb: 1, total_memory_mb: 1)
    static let app = AppMetadata(app_name: "app", app_version: "1.0", build_number: "1", bundle_id: "com.example.app", environment: "test")

    static func payload(logs: Int = 0, network: Int = 0, crashes: Int = 0, frames: Int = 0, screenshots: Int = 0) -> DiagnosticsPayload {
        let frame = { (index: Int) in
            DiagnosticsPayload.Frame(index: index, address: "0x1", module: nil, module_offset: nil, build_id: nil, function: nil,
                                     file: nil, line: nil, column: nil, inlined: false)
        }
        return DiagnosticsPayload(
            test_run_id: UUID().uuidString.lowercased(), app_metadata: app, device_metadata: host, timestamp_collected: "2026-11-21T00:00:00.000Z",
            logs: (0..<logs).map { .init(timestamp: "2026-11-21T00:00:00.000Z", level: "info", tag: "t", message: "log \($0)") },
            network_errors: (0..<network).map {
                NetworkErrorDigest(timestamp: "t", request_url: "u\($0)", request_method: "GET", status_code: 500, error_type: "server_error",
                                   error_message: "", request_duration_ms: 1, retry_count: 0)
            },
            crash_reports: (0..<crashes).map {
                .init(timestamp: "t", exception_type: "SIGSEGV", exception_message: "m", stack_trace: (0..<frames).map { "#\($0)" },
                      thread_info: [.init(id: 1, name: "", crashed: true, is_main: true, frames: (0..<frames).map(frame))],
                      report_id: "r\($0)", kind: "crash", symbolicated: false, is_partial: false, images: [])
            },
            screenshots: (0..<screenshots).map { .init(id: "s\($0)", timestamp: "t", screen_name: "n", file_size_bytes: 1) })
    }

    @Test("counts are cut to seed 000's limits, most recent kept")
    func countLimits() {
        var payload = Self.payload(logs: 700, network: 150, crashes: 7, frames: 80, screenshots: 30)
        PayloadLimits.apply(&payload)
        #expect(payload.logs.count == 500 && payload.logs.first?.message == "log 200" && payload.logs.last?.message == "log 699")
        #expect(payload.network_errors.count == 100 && payload.network_errors.first?.request_url == "u50")
        #expect(payload.crash_reports.map(\.report_id) == ["r2", "r3", "r4", "r5", "r6"])
        #expect(payload.crash_reports.allSatisfy { $0.stack_trace.count == 50 && $0.thread_info[0].frames.count == 50 })
        #expect(payload.screenshots.count == 20 && payload.screenshots.first?.id == "s10")
    }

    @Test("log messages over 1000 characters are cut (counted in Unicode scalars)")
    func messageLimit() {
        var payload = Self.payload(logs: 2)
        payload.logs[0].message = String(repeating: "é", count: 1500)
        payload.logs[1].message = String(repeating: "e\u{301}", count: 600)   // 1200 scalars, 600 Characters
        PayloadLimits.apply(&payload)
        #expect(payload.logs.allSatisfy { $0.message.unicodeScalars.count == 1000 && $0.message.hasSuffix("…") })
    }

    @Test("custom data over 100 KB loses its largest values first")
    func customDataLimit() {
        var payload = Self.payload()
        payload.custom_data = ["big": .string(String(repeating: "x", count: 90_000)), "bigger": .string(String(repeating: "y", count: 95_000)),
                               "small": .int(1)]
        PayloadLimits.apply(&payload)
        #expect(Set(payload.custom_data.keys) == ["big", "small"])
    }

    @Test("the gzip'd body stays under the 5 MB limit by shrinking; gzip round-trips")
    func compressedLimit() throws {
        var payload = Self.payload(logs: 500)
        for index in payload.logs.indices {   // incompressible text
            payload.logs[index].message = (0..<60).map { _ in UUID().uuidString }.joined().prefix(1000).description
        }
        let full = try Gzip.compress(try payload.encoded())
        var shrinking = payload
        let body = try #require(try PayloadLimits.body(for: &shrinking, maxCompressedBytes: full.count / 3))
        #expect(body.count <= full.count / 3)
        #expect(shrinking.logs.count < 500 && shrinking.logs.last == payload.logs.last)
        let decoded = try JSONDecoder().decode(DiagnosticsPayload.self, from: try Gzip.decompress(body))
        #expect(decoded == shrinking)
        #expect(throws: (any Error).self) { try Gzip.decompress(Data(body.prefix(body.count / 2))) }
    }

    @Test("gunzip sizes its result from the trailer's length, and a trailer that lies (short, long, huge) changes nothing")
    func decompressTrailerIsAHint() throws {
        var random = SystemRandomNumberGenerator()
        for size in [0, 1, 65_535, 65_536, 65_537, 300_000] {
            let plain = Data((0..<size).map { index in index % 7 == 0 ? UInt8.random(in: 0...255, using: &random) : UInt8(index % 251) })
            let gzipped = try Gzip.compress(plain)
            #expect(try Gzip.decompress(gzipped) == plain, "\(size) bytes")
            // The last four bytes are the length modulo 2^32: zero, too short, too long, the most.
            for claimed: UInt32 in [0, 1, UInt32(size / 2), UInt32(size) &* 4 &+ 7, .max] {
                var lying = gzipped
                lying.replaceSubrange((lying.count - 4)..<lying.count, with: withUnsafeBytes(of: claimed.littleEndian) { Data($0) })
                // zlib checks the length at the end: a lie is an error, after the result grew or was cut.
                if claimed == UInt32(truncatingIfNeeded: size) {
                    #expect(try Gzip.decompress(lying) == plain)
                } else {
                    #expect(throws: (any Error).self, "\(size) bytes, \(claimed) claimed") { try Gzip.decompress(lying) }
                }
            }
            #expect(throws: (any Error).self) { try Gzip.decompress(Data(gzipped.prefix(gzipped.count - 6))) }
            // zlib's own format (read too) ends in a checksum, not a length: a hint that is anything.
            var zlib = Data(count: Int(compressBound(uLong(size))))
            let written: Int = try zlib.withUnsafeMutableBytes { out in
                try plain.withUnsafeBytes { input in
                    var length = uLongf(out.count)
                    let status = compress2(out.bindMemory(to: Bytef.self).baseAddress, &length,
                                           input.bindMemory(to: Bytef.self).baseAddress ?? UnsafePointer(bitPattern: 1), uLong(size), 6)
                    try #require(status == Z_OK)
                    return Int(length)
                }
            }
            #expect(try Gzip.decompress(zlib.prefix(written)) == plain, "zlib, \(size) bytes")
        }
        // What is allocated before inflating. Not gzip, ending in a length of 4 GiB: 64 KiB (before
        // the review's fix, 4 GiB at once), and refused. Gzip claiming 4 GiB: no more than its
        // size allows at 1032:1, nor than the cap.
        let notGzip = Data(repeating: 0x41, count: 5_000_000) + Data([0xFF, 0xFF, 0xFF, 0xFF])
        #expect(Gzip.initialCapacity(for: notGzip) == 64 * 1024)
        #expect(throws: (any Error).self) { try Gzip.decompress(notGzip) }
        var lying = try Gzip.compress(Data(repeating: 0x41, count: 100_000))
        lying.replaceSubrange((lying.count - 4)..<lying.count, with: Data([0xFF, 0xFF, 0xFF, 0xFF]))
        #expect(Gzip.initialCapacity(for: lying) == max(64 * 1024, lying.count * 1032))
        #expect(throws: (any Error).self) { try Gzip.decompress(lying) }
        var large = Data([0x1F, 0x8B]) + Data(repeating: 0, count: 100_000)
        large.replaceSubrange((large.count - 4)..<large.count, with: Data([0xFF, 0xFF, 0xFF, 0xFF]))
        #expect(Gzip.initialCapacity(for: large) == Gzip.largestHint)
        let honest = try Gzip.compress(Data(repeating: 0x41, count: 300_000))
        #expect(Gzip.initialCapacity(for: honest) == 300_000)
    }

    @Test("a pass encodes a record once: the verify stage's JSON is each destination's body; a shrunk payload is encoded again")
    func encodedOnce() throws {
        let memo = RedactionMemo(redactor: .seed000, verifier: RedactionVerifier())
        var payload = Self.payload(logs: 50)
        #expect(memo.findings(in: payload).isEmpty)
        for _ in 0..<2 {   // two destinations
            var sent = payload
            let body = try #require(try PayloadLimits.body(for: &sent, gzipped: memo.gzipped))
            #expect(try Gzip.decompress(body) == (try payload.encoded()))
        }
        #expect(memo.encodings == 1)
        payload.logs[0].message = "changed"
        #expect(try Gzip.decompress(try memo.gzipped(payload)) == (try payload.encoded()))
        #expect(memo.encodings == 2)
        // Shrinking for the limit: each smaller payload is its own encoding, and the body is the smallest's.
        var shrinking = payload
        let full = try memo.gzipped(payload)
        let body = try #require(try PayloadLimits.body(for: &shrinking, maxCompressedBytes: full.count - 1, gzipped: memo.gzipped))
        #expect(shrinking.logs.count < payload.logs.count)
        #expect(try Gzip.decompress(body) == (try shrinking.encoded()))
    }

    @Test("HTTP answers map to seed 000's outcomes")
    func outcomes() {
        func answer(_ status: Int, _ body: String = "{}", _ headers: [String: String] = [:]) -> DeliveryOutcome {
            HTTPTransport.outcome(.response(status: status, headers: headers, body: Data(body.utf8)))
        }
        #expect(answer(201, #"{"diagnostics_id":"diag_1","status":"accepted"}"#) == .delivered(receipt: "diag_1"))
        #expect(answer(400, #"{"error":"validation_failed","message":"Missing required field: test_run_id"}"#)
                == .rejected(status: 400, message: "Missing required field: test_run_id"))
        #expect(answer(413, #"{"max_size_bytes":5242880}"#) == .tooLarge(maxBytes: 5_242_880))
        #expect(answer(401) == .unauthorized(status: 401, message: "{}"))
        #expect(answer(403, #"{"message":"token revoked"}"#) == .unauthorized(status: 403, message: "token revoked"))
        #expect(answer(503, "busy") == .retryLater(reason: "HTTP 503: busy", after: nil))
        #expect(answer(429, "{}", ["retry-after": "7"]) == .retryLater(reason: "HTTP 429: {}", after: .seconds(7)))
        #expect(HTTPTransport.outcome(.failed("Could not connect to the server.")) == .unreachable(reason: "Could not connect to the server."))
        #expect(answer(409, #"{"diagnostics_id":"diag_1"}"#) == .delivered(receipt: "diag_1"))   // "already have it"
        #expect(answer(422, #"{"message":"bad"}"#) == .rejected(status: 422, message: "bad"))
        // Not a collector at this URL (a Prometheus on :9090, a redirect): keep the reports.
        for status in [301, 302, 404, 405] {
            guard case .unauthorized(let code, _) = answer(status) else { Issue.record("HTTP \(status) must keep the report"); continue }
            #expect(code == status)
        }
        guard case .unauthorized = answer(418) else { Issue.record("other 4xx must keep the report"); return }
    }

    @Test("structured values are redacted with their key, numbers under location keys too")
    func structuredRedaction() {
        var payload = Self.payload(logs: 1)
        payload.logs[0].metadata = ["password": "hunter2", "child_name": "Tommy Smith", "jane.doe@example.com": "owner"]
        payload.custom_data = ["location": .object(["lat": 37.7749, "lng": -122.4194]), "room": "Sunflowers", "count": 3]
        payload.custom_keys = ["session_token": "abc"]
        payload.network_errors = [NetworkErrorDigest(timestamp: "t", request_url: "http://192.168.1.20:8080/v1/users/jane.doe@example.com/feed?x=1",
                                                     request_method: "GET", status_code: nil, error_type: "timeout", error_message: "",
                                                     request_duration_ms: 1, retry_count: 0)]
        Redactor.seed000.apply(to: &payload)
        let text = String(decoding: (try? payload.encoded()) ?? Data(), as: UTF8.self)
        for secret in ["hunter2", "Tommy Smith", "jane.doe@example.com", "37.7749", "122.4194", "Sunflowers", "192.168.1.20"] {
            #expect(!text.contains(secret), "\(secret) in \(text)")
        }
        #expect(payload.custom_data["count"] == .int(3))   // harmless numbers stay numbers
        #expect(payload.network_errors[0].request_url.hasPrefix("http://192.168.x.x:8080/v1/users/"))
        // And the verifier, which sees "key=value", finds nothing left.
        let memo = RedactionMemo(redactor: .seed000, verifier: RedactionVerifier())
        #expect(memo.findings(in: payload).isEmpty)
        var raw = Self.payload()
        raw.custom_data = ["gps": .object(["lat": 37.7749, "lon": -122.4194])]
        #expect(!memo.findings(in: raw).isEmpty)   // unredacted coordinates are caught as numbers
    }

    @Test("connect URLs (seed 002): exact scheme, loopback and private-range hosts only by default", arguments: [
        ("dev-see-com.example.app://connect?server_ip=192.168.1.23&server_port=9090", "connected http://192.168.1.23:9090"),
        ("dev-see-com.example.app://connect?server_ip=10.0.0.1&server_port=65535", "connected http://10.0.0.1:65535"),
        ("dev-see-com.example.app://connect?server_ip=172.31.255.1&server_port=80", "connected http://172.31.255.1:80"),
        ("dev-see-com.example.app://connect?server_ip=127.0.0.1&server_port=80", "connected http://127.0.0.1:80"),
        ("dev-see-com.example.app://connect?server_ip=localhost&server_port=80", "connected http://localhost:80"),
        ("DEV-SEE-com.example.app://connect?server_ip=192.168.1.23&server_port=1", "failed the scheme must be exactly"),
        ("dev-see-COM.example.app://connect?server_ip=192.168.1.23&server_port=1", "failed the scheme must be exactly"),
        ("dev-see-com.example.app://connect?server_ip=qa-mac.local&server_port=1", "failed is not allowed"),
        ("dev-see-com.example.app://connect?server_ip=203.0.113.7&server_port=443", "failed is not allowed"),
        ("dev-see-com.example.app://connect?server_ip=172.32.0.1&server_port=80", "failed is not allowed"),
        ("dev-see-com.example.app://connect?server_ip=8.8.8.8&server_port=80", "failed is not allowed"),
        ("dev-see-com.other.app://connect?server_ip=10.0.0.1&server_port=80", "ignored"),
        ("https://example.com/connect?server_ip=10.0.0.1&server_port=80", "ignored"),
        ("dev-see-com.example.app://disconnect?server_ip=10.0.0.1&server_port=80", "ignored"),
        ("dev-see-com.example.app://connect?server_port=80", "failed missing server_ip"),
        ("dev-see-com.example.app://connect?server_ip=10.0.0.1", "failed missing server_port"),
        ("dev-see-com.example.app://connect?server_ip=10.0.0.1&server_port=0", "failed server_port"),
        ("dev-see-com.example.app://connect?server_ip=10.0.0.1&server_port=65536", "failed server_port"),
        ("dev-see-com.example.app://connect?server_ip=10.0.0.1&server_port=80x", "failed server_port"),
        ("dev-see-com.example.app://connect?server_ip=300.1.1.1&server_port=80", "failed server_ip"),
        ("dev-see-com.example.app://connect?server_ip=bad_host!&server_port=80", "failed server_ip"),
    ])
    func connectURL(_ text: String, _ expected: String) throws {
        check(ConnectURL.parse(try #require(URL(string: text)), appID: "com.example.app", allowedHosts: nil), expected)
    }

    @Test("connect URLs: upload.connectURLHosts replaces the default hosts; empty refuses all")
    func connectURLHosts() throws {
        let named = try #require(URL(string: "dev-see-com.example.app://connect?server_ip=QA-Mac.local&server_port=9090"))
        check(ConnectURL.parse(named, appID: "com.example.app", allowedHosts: ["qa-mac.local"]), "connected http://QA-Mac.local:9090")
        let lan = try #require(URL(string: "dev-see-com.example.app://connect?server_ip=192.168.1.23&server_port=9090"))
        check(ConnectURL.parse(lan, appID: "com.example.app", allowedHosts: ["qa-mac.local"]), "failed only qa-mac.local")
        check(ConnectURL.parse(lan, appID: "com.example.app", allowedHosts: []), "failed is not allowed")
    }

    private func check(_ result: CrashReporter.ConnectionResult, _ expected: String, sourceLocation: SourceLocation = #_sourceLocation) {
        switch result {
        case .connected(let endpoint): #expect("connected \(endpoint)" == expected, sourceLocation: sourceLocation)
        case .ignored: #expect(expected == "ignored", sourceLocation: sourceLocation)
        case .failed(let reason):
            #expect(expected.hasPrefix("failed") && reason.contains(expected.dropFirst("failed ".count)), "\(reason)", sourceLocation: sourceLocation)
        }
    }

    @Test("upload endpoints: https anywhere, http only to loopback unless allowed", arguments: [
        ("https://crashes.example.com", false, true),
        ("https://203.0.113.7:8443", false, true),
        ("http://127.0.0.1:9090", false, true),
        ("http://localhost:9090", false, true),
        ("http://[::1]:9090", false, true),
        ("http://crashes.example.com", false, false),
        ("http://192.168.1.23:9090", false, false),
        ("http://192.168.1.23:9090", true, true),
        ("ftp://crashes.example.com", true, false),
        ("HTTPS://crashes.example.com", false, true),
    ])
    func endpointPolicy(_ text: String, _ allowsInsecureHTTP: Bool, _ accepted: Bool) throws {
        let problem = CrashReporter.Upload.endpointProblem(try #require(URL(string: text)), allowsInsecureHTTP: allowsInsecureHTTP)
        #expect((problem == nil) == accepted, "\(problem ?? "accepted")")
    }

    @Test("interrupted uploads: only a sent, unanswered request or a crash while preparing counts", arguments: [
        ("sent", false, false, 1),
        ("sent", true, true, 1),
        ("preparing", false, true, 0),        // SIGTERM/SIGKILL while preparing or between tries
        ("preparing", true, true, 1),         // the marking session left a crash record
        ("preparing", true, false, 0),        // after recovery, a record named after it may be an abnormal termination
        ("garbage", true, true, 0),
    ])
    func interruptionRule(_ phase: String, _ crashRecord: Bool, _ crashEvidence: Bool, _ expected: Int) throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("judge-\(UUID().uuidString.prefix(8))").path
        let directory = try ReportsDirectory(path: root)
        defer { try? FileManager.default.removeItem(atPath: root) }
        mkdir(directory.uploadingFolder, 0o700)
        let record = directory.uploadingFolder + "/r.crash"
        #expect(ReportsDirectory.writeSmallFile(record, "{}\n"))
        #expect(ReportsDirectory.writeSmallFile(record + ".attempt", phase == "garbage" ? "x\n" : "dead-session \(phase)\n"))
        if crashRecord { #expect(ReportsDirectory.writeSmallFile(directory.pendingFolder + "/dead-session.crash", "{}\n")) }
        Uploader.judgeAttempt(record, directory: directory, crashEvidence: crashEvidence)
        #expect(Uploader.interruptions(record) == expected)
        #expect(access(record + ".attempt", F_OK) != 0)   // judged once
        Uploader.judgeAttempt(record, directory: directory, crashEvidence: crashEvidence)
        #expect(Uploader.interruptions(record) == expected)
    }

    @Test("a 3xx is a configuration error that names the Location, never a verdict on the report")
    func redirectOutcome() {
        let outcome = HTTPTransport.outcome(.response(status: 307, headers: ["location": "http://elsewhere.example/x"], body: Data()))
        guard case .unauthorized(let status, let message) = outcome else {
            Issue.record("\(outcome)")
            return
        }
        #expect(status == 307 && message.contains("\"http://elsewhere.example/x\"") && message.contains("not followed"))
    }

    @Test("payload kinds: crash, non-fatal, abnormal termination, diagnostics snapshot")
    func kinds() throws {
        let header = #"{"format":"swift-crash-reporting.crash-record","version":1,"id":"6f1c1e4e-2b0a-4c1e-9a57-6f4f1d2f9c11","app_id":"com.example.app","app_version":"2.0","pid":1,"timestamp_ns":1763683200000000000,"arch":"x86_64"}"#
        let cases: [(String, String, String)] = [
            (#"{"type":"signal","signo":11,"name":"SIGSEGV","code":1,"code_name":"SEGV_MAPERR","fault_address":"0x0"}"#, "crash", "SIGSEGV"),
            (#"{"type":"error","domain":"com.example.app.ledger","code":7,"message":"imbalance","underlying":[{"domain":"d","code":"-1001","message":"m"}],"user_info":{"a":[1,2]}}"#, "non_fatal", "com.example.app.ledger 7"),
            (#"{"type":"termination","kind":"abnormal","session_started_ns":1,"detected_ns":2}"#, "abnormal_termination", "abnormal_termination"),
            (#"{"type":"diagnostics","trigger":"manual"}"#, "diagnostics", "diagnostics"),
        ]
        for (line, kind, type) in cases {
            let record = try CrashRecord(data: Data((header + "\n" + line + "\n{\"type\":\"end\"}\n").utf8), source: "test")
            let report = CrashReport(record: record, reason: "reason", crashedThread: .init(id: 1, name: "", isMain: true, frames: []), images: [])
            let payload = PayloadBuilder(app: Self.app, host: Self.host).payload(record: record, report: report)
            let entry = try #require(payload.crash_reports.first)
            #expect(entry.kind == kind && entry.exception_type == type, "\(kind)")
            #expect(payload.app_metadata.app_version == "2.0")   // the version that crashed, not the one uploading
            if kind == "non_fatal" {
                #expect(entry.error?.underlying.first == .object(["domain": .string("d"), "code": .int(-1001), "message": .string("m")]))
                #expect(entry.error?.user_info == .object(["a": .array([.int(1), .int(2)])]))
            }
        }
    }

    @Test("symbolicated: false for a stripped app binary found at its path (no debug info), true with debug info")
    func symbolicatedFlag() throws {
        let header = #"{"format":"swift-crash-reporting.crash-record","version":1,"id":"6f1c1e4e-2b0a-4c1e-9a57-6f4f1d2f9c11","app_id":"com.example.app","app_version":"2.0","pid":1,"timestamp_ns":1763683200000000000,"arch":"x86_64"}"#
        let signal = #"{"type":"signal","signo":11,"name":"SIGSEGV","code":1,"code_name":"SEGV_MAPERR","fault_address":"0x0"}"#
        let record = try CrashRecord(data: Data((header + "\n" + signal + "\n{\"type\":\"end\"}\n").utf8), source: "test")
        func entry(appHasDebugInfo: Bool, function: String?) -> DiagnosticsPayload.CrashReportEntry {
            let frames = [
                CrashReport.Frame(index: 0, address: Address(0x5000), module: "/srv/app/Server", moduleOffset: Address(0x4000),
                                  function: function, symbol: nil, file: nil, line: nil, column: nil, isInlined: false, note: nil),
                CrashReport.Frame(index: 1, address: Address(0x7f00_0000_1000), module: "/usr/lib/x86_64-linux-gnu/libc.so.6",
                                  moduleOffset: Address(0x1000), function: "__libc_start_main", symbol: nil, file: nil, line: nil,
                                  column: nil, isInlined: false, note: nil),
            ]
            let images = [
                CrashReport.Image(path: "/srv/app/Server", buildID: BuildID(hex: "aa11"), start: Address(0x1000), end: Address(0x9000),
                                  bias: Address(0x1000), symbols: .recordedPath("/srv/app/Server"), hasDebugInfo: appHasDebugInfo),
                // A system library without debug info does not make a report raw.
                CrashReport.Image(path: "/usr/lib/x86_64-linux-gnu/libc.so.6", buildID: BuildID(hex: "bb22"), start: Address(0x7f00_0000_0000),
                                  end: Address(0x7f00_0010_0000), bias: Address(0x7f00_0000_0000),
                                  symbols: .recordedPath("/usr/lib/x86_64-linux-gnu/libc.so.6"), hasDebugInfo: false),
            ]
            let report = CrashReport(record: record, reason: "reason", crashedThread: .init(id: 1, name: "", isMain: true, frames: frames), images: images)
            return PayloadBuilder(app: Self.app, host: Self.host).payload(record: record, report: report).crash_reports[0]
        }
        let stripped = entry(appHasDebugInfo: false, function: nil)
        #expect(stripped.symbolicated == false)
        #expect(stripped.thread_info[0].frames[0].build_id == "aa11" && stripped.thread_info[0].frames[0].module_offset == "0x4000")
        #expect(stripped.stack_trace[0] == "#0 Server 0x5000 (Server + 0x4000)")
        #expect(entry(appHasDebugInfo: true, function: "Server.handle()").symbolicated == true)
    }

    @Test("other threads follow the crashed one in thread_info and in Sentry's threads, with their stacks")
    func otherThreads() throws {
        let header = #"{"format":"swift-crash-reporting.crash-record","version":2,"id":"6f1c1e4e-2b0a-4c1e-9a57-6f4f1d2f9c11","app_id":"com.example.app","app_version":"2.0","pid":1,"timestamp_ns":1763683200000000000,"arch":"x86_64"}"#
        let signal = #"{"type":"signal","signo":11,"name":"SIGSEGV","code":1,"code_name":"SEGV_MAPERR","fault_address":"0x0"}"#
        let record = try CrashRecord(data: Data((header + "\n" + signal + "\n{\"type\":\"end\"}\n").utf8), source: "test")
        func frame(_ index: Int, _ function: String) -> CrashReport.Frame {
            CrashReport.Frame(index: index, address: Address(0x5000 + UInt64(index)), module: "/srv/app/Server", moduleOffset: Address(0x4000),
                              function: function, symbol: nil, file: nil, line: nil, column: nil, isInlined: false, note: nil)
        }
        var report = CrashReport(record: record, reason: "reason",
                                 crashedThread: .init(id: 1, name: "main", isMain: true, frames: [frame(0, "crash()")]), images: [])
        report.otherThreads = [
            .init(id: 2, name: "worker", isMain: false, frames: (0..<60).map { frame($0, "work\($0)()") }, state: "answered"),
            .init(id: 3, name: "masked", isMain: false, frames: [], state: "blocked_signal"),
        ]
        var payload = PayloadBuilder(app: Self.app, host: Self.host).payload(record: record, report: report)
        let threads = payload.crash_reports[0].thread_info
        #expect(threads.map(\.id) == [1, 2, 3])
        #expect(threads.map(\.crashed) == [true, false, false])
        #expect(threads.map(\.state) == [nil, "answered", "blocked_signal"])
        #expect(threads[1].frames.count == 50)   // seed 000's frame limit holds per thread
        #expect(payload.crash_reports[0].stack_trace.count == 1)   // the crashed thread's only
        PayloadLimits.apply(&payload)
        let event = SentryEvent.make(from: payload, eventID: "e")
        let values = try #require((event["threads"] as? [String: Any])?["values"] as? [[String: Any]])
        #expect(values.map { $0["id"] as? Int } == [1, 2, 3])
        #expect(values.map { $0["current"] as? Bool } == [true, false, false])
        #expect(values[0]["stacktrace"] == nil)   // the crashed thread's stack is the exception's
        let workerFrames = try #require((values[1]["stacktrace"] as? [String: Any])?["frames"] as? [[String: Any]])
        #expect(workerFrames.first?["function"] as? String == "work49()")   // outermost first
        #expect(values[2]["stacktrace"] == nil)
        #expect(JSONSerialization.isValidJSONObject(event))
    }

    @Test("Sentry: DSN, debug_id from a GNU build-id, rate-limit headers, event shape")
    func sentry() throws {
        let dsn = try #require(SentryTransport.DSN("http://abc123@127.0.0.1:8000/sentry/42"))
        #expect(dsn.publicKey == "abc123" && dsn.projectID == "42")
        #expect(dsn.envelopeURL.absoluteString == "http://127.0.0.1:8000/sentry/api/42/envelope/")
        #expect(SentryTransport.DSN("http://127.0.0.1/42") == nil)   // no key
        // Worked example, checked against the `symbolic` library by the Bugsink research.
        #expect(SentryEvent.debugID(buildID: "6ecd80ac082cf7f092370ddd19c33d4742da2006") == "ac80cd6e-2c08-f0f7-9237-0ddd19c33d47")
        #expect(SentryTransport.eventID("6F1C1E4E-2B0A-4C1E-9A57-6F4F1D2F9C11") == "6f1c1e4e2b0a4c1e9a576f4f1d2f9c11")
        #expect(SentryTransport.retryAfter(["x-sentry-rate-limits": "60::key, 86400:transaction;span:organization"]) == .seconds(60))
        #expect(SentryTransport.retryAfter(["x-sentry-rate-limits": "86400:transaction;span:organization"]) == nil)
        #expect(SentryTransport.retryAfter(["retry-after": "7"]) == .seconds(7))
        let answer = { (status: Int, headers: [String: String]) in
            SentryTransport.outcome(.response(status: status, headers: headers, body: Data()), eventID: "e")
        }
        #expect(answer(200, [:]) == .delivered(receipt: "e"))
        #expect(answer(429, ["x-sentry-rate-limits": "60::key"]) == .retryLater(reason: "HTTP 429: rate limited", after: .seconds(60)))
        #expect(answer(403, [:]) == .unauthorized(status: 403, message: ""))

        var payload = Self.payload(logs: 2, crashes: 1, frames: 3)
        payload.crash_reports[0].images = [.init(path: "/srv/app/Server", build_id: "6ecd80ac082cf7f092370ddd19c33d4742da2006",
                                                 start: "0x1000", end: "0x3000", bias: "0x1000")]
        payload.custom_keys = ["flag": true, "count": 3]
        payload.user_id = "u1"
        let event = SentryEvent.make(from: payload, eventID: "e")
        // Bugsink drops (answering 200) events with keys outside Sentry's event schema.
        let known: Set<String> = ["event_id", "timestamp", "platform", "level", "release", "dist", "environment", "sdk", "contexts",
                                  "user", "tags", "extra", "breadcrumbs", "fingerprint", "exception", "threads", "debug_meta", "message"]
        #expect(Set(event.keys).isSubset(of: known), "\(Set(event.keys).subtracting(known))")
        #expect(event["tags"] as? [String: String] == ["report_kind": "crash", "flag": "true", "count": "3"])
        let image = try #require(((event["debug_meta"] as? [String: Any])?["images"] as? [[String: Any]])?.first)
        #expect(image["image_size"] as? UInt64 == 0x2000 && image["debug_id"] as? String == "ac80cd6e-2c08-f0f7-9237-0ddd19c33d47")
        #expect(JSONSerialization.isValidJSONObject(event))
    }

    @Test("Sentry: contexts.trace from a non-fatal's trace_id/span_id, or from the crashing request in flight")
    func sentryTrace() throws {
        let traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
        var payload = Self.payload(logs: 0, crashes: 1, frames: 1)
        func trace(_ payload: DiagnosticsPayload) -> [String: String]? {
            let event = SentryEvent.make(from: payload, eventID: "6f1c1e4e2b0a4c1e9a576f4f1d2f9c11")
            #expect(JSONSerialization.isValidJSONObject(event))
            return (event["contexts"] as? [String: Any])?["trace"] as? [String: String]
        }
        #expect(trace(payload) == nil, "no trace, no trace context")

        payload.crash_reports[0].kind = "non_fatal"
        payload.crash_reports[0].error = .init(domain: "http.server", code: 500, message: "m",
                                               user_info: ["trace_id": .string(traceID), "span_id": "00f067aa0ba902b7"], underlying: [])
        #expect(trace(payload) == ["type": "trace", "trace_id": traceID, "span_id": "00f067aa0ba902b7"])
        payload.crash_reports[0].error?.user_info = ["trace_id": "not-a-trace-id"]
        #expect(trace(payload) == nil, "a malformed trace id is dropped")

        payload.crash_reports[0].kind = "crash"
        payload.crash_reports[0].error = nil
        payload.crash_reports[0].requests_in_flight = [
            .init(method: "GET", route: "/slow", request_id: "a", trace_id: "11111111111111111111111111111111", thread_id: 2, age_ms: 500, crashed_thread: false),
            .init(method: "GET", route: "/users/{id}", request_id: "b", trace_id: traceID, thread_id: 1, age_ms: 3, crashed_thread: true),
        ]
        #expect(trace(payload) == ["type": "trace", "trace_id": traceID, "span_id": "9a576f4f1d2f9c11"],
                "the crashing request's trace; the event's own span id")
        payload.crash_reports[0].requests_in_flight?[1].crashed_thread = false
        #expect(trace(payload) == nil, "two requests, neither on the crashing thread: no guess")
    }
}
@Suite("Payload frame selection")
struct PayloadFrameSelectionTests {
    /// `count` frames per index in `indices`, inlined ones after the first.
    static func frames(_ indices: [Int], inlined: Int = 1, async: Bool = false) -> [CrashReport.Frame] {
        indices.flatMap { index in
            (0..<inlined).map { copy in
                var frame = CrashReport.Frame(index: index, address: Address(UInt64(0x1000 + index)), module: nil, moduleOffset: nil,
                                              function: "f\(index)", symbol: nil, file: nil, line: nil, column: nil,
                                              isInlined: copy < inlined - 1, note: nil)
                frame.isAsync = async
                return frame
            }
        }
    }

    @Test("a stack overflow keeps its innermost frames, its recursion's entry and its outermost, whole inlined groups, at most 50")
    func overflow() {
        // 50 kept, then the entry group (3374…3383) and the outermost (3390…3399), each outer frame
        // with an inlined one: 40 outer frames, more than fit beside 20 innermost.
        let all = Self.frames(Array(0..<50)) + Self.frames(Array(3374...3383) + Array(3390...3399), inlined: 2)
        let kept = PayloadBuilder.selectFrames(all, innermostCount: 50, limit: 50)
        #expect(kept.count == 50)
        #expect(kept.prefix(20).map(\.index) == Array(0..<20))
        // The outermost 10 indices, whole (both frames of each), and as much of the entry as fits.
        let indices = kept.map(\.index)
        #expect(Array(3390...3399).allSatisfy { index in indices.filter { $0 == index }.count == 2 }, "\(indices)")
        #expect(indices.contains(3374), "the recursion's entry: \(indices)")
        #expect(Dictionary(grouping: indices.filter { $0 >= 50 }, by: { $0 }).values.allSatisfy { $0.count == 2 }, "no group split: \(indices)")
        #expect(indices == indices.sorted(), "in order: \(indices)")
    }

    @Test("outer frames right after the kept ones (no gap in the indices) are outer frames, and async callers are kept after them")
    func entryRightAfterTheCut() {
        let all = Self.frames(Array(0..<50)) + Self.frames(Array(50...59)) + Self.frames(Array(3390...3399))
            + Self.frames([3400, 3401, 3402], async: true)
        let kept = PayloadBuilder.selectFrames(all, innermostCount: 50, limit: 50)
        let indices = kept.map(\.index)
        #expect(kept.count == 50)
        #expect(indices.contains(50) && indices.contains(3399) && indices.suffix(3) == [3400, 3401, 3402], "\(indices)")
        #expect(kept.suffix(3).allSatisfy { $0.isAsync })
        #expect(indices.prefix(20) == ArraySlice(0..<20))
    }

    @Test("a shallow stack under a long await chain keeps as many async callers as there is room for")
    func manyAsyncCallers() {
        let all = Self.frames(Array(0..<15)) + Self.frames(Array(15..<55), async: true)
        let kept = PayloadBuilder.selectFrames(all, innermostCount: 15, limit: 50)
        #expect(kept.count == 50)
        #expect(kept.map(\.index) == Array(0..<50))
    }

    @Test("another thread's frames (no outer ones) are a prefix that keeps inlined groups whole")
    func otherThread() {
        let all = Self.frames(Array(0..<40), inlined: 2)
        let kept = PayloadBuilder.selectFrames(all, innermostCount: .max, limit: 50)
        #expect(kept.count == 50 && kept.map(\.index) == (0..<25).flatMap { [$0, $0] })
    }

    @Test("a stack within the limit is kept whole")
    func withinTheLimit() {
        let all = Self.frames(Array(0..<30), inlined: 1)
        #expect(PayloadBuilder.selectFrames(all, innermostCount: 30, limit: 50).map(\.index) == Array(0..<30))
    }
}
