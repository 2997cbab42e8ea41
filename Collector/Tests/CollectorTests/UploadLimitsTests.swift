// Bounded work per upload: seed 000's limits refused on arrival with the limit named (the scanner
// alone, then a running collector), the JSON bomb and the 650k-log upload refused and not stored,
// gzip inflation capped, and the gate's 503/429 with Retry-After past the uploads in flight.
@testable import Collector
import CrashReportModel
import Foundation
import Testing

@Suite struct UploadLimitsTests {
    /// The sample payload's JSON with `name` set to `json` (raw text, spliced in).
    static func sample(with name: String, json: String) throws -> Data {
        Data(try sampleText(with: name, json: json).utf8)
    }

    static func sampleText(with name: String, json: String) throws -> String {
        var object = try #require(try JSONSerialization.jsonObject(with: Fixtures.samplePayloadData()) as? [String: Any])
        object[name] = "@@SPLICE@@"
        let text = String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
        return text.replacingOccurrences(of: "\"@@SPLICE@@\"", with: json)
    }

    static func refusal(_ body: Data, _ limits: UploadLimits = .diagnosticsUpload) -> ValidationFailure? {
        do {
            try limits.check([UInt8](body))
            return nil
        } catch {
            return error as? ValidationFailure
        }
    }

    @Test func realPayloadsPass() throws {
        #expect(Self.refusal(try Fixtures.samplePayloadData()) == nil)
        #expect(Self.refusal(Fixtures.seedExample) == nil)
        // At the limits exactly: 500 logs of 1000 characters (one of them a 2-scalar emoji escaped).
        let message = String(repeating: "é", count: 998) + "\\ud83d\\ude00"
        let logs = "[" + Array(repeating: #"{"timestamp":"2026-02-16T14:29:45.123Z","level":"info","tag":"t","message":"\#(message)"}"#,
                                  count: 500).joined(separator: ",") + "]"
        #expect(Self.refusal(try Self.sample(with: "logs", json: logs)) == nil)
        // custom_data of 100 KB less a little, pretty-printed: whitespace between tokens is not counted.
        let padded = "{\n  \"a\" :   \"" + String(repeating: "x", count: 100 * 1024 - 20) + "\"\n}"
        #expect(Self.refusal(try Self.sample(with: "custom_data", json: padded)) == nil)
    }

    @Test func eachSeedLimitIsNamed() throws {
        let entry = #"{"timestamp":"2026-02-16T14:29:45.123Z","level":"info","tag":"t","message":"m"}"#
        let cases: [(String, String, String)] = [
            ("logs", "[" + Array(repeating: entry, count: 501).joined(separator: ",") + "]", "logs: more than 500 entries (seed 000's limit)"),
            ("logs", #"[{"message":""# + String(repeating: "a", count: 1001) + #""}]"#,
             "logs/*/message: longer than 1000 characters (seed 000's limit)"),
            ("network_errors", "[" + Array(repeating: "{}", count: 101).joined(separator: ",") + "]",
             "network_errors: more than 100 entries (seed 000's limit)"),
            ("crash_reports", "[" + Array(repeating: "{}", count: 6).joined(separator: ",") + "]",
             "crash_reports: more than 5 entries (seed 000's limit)"),
            ("crash_reports", #"[{"thread_info":[{"frames":["# + Array(repeating: "{}", count: 51).joined(separator: ",") + "]}]}]",
             "crash_reports/*/thread_info/*/frames: more than 50 entries (seed 000's limit)"),
            ("crash_reports", #"[{"stack_trace":["# + Array(repeating: "\"f\"", count: 51).joined(separator: ",") + "]}]",
             "crash_reports/*/stack_trace: more than 50 entries (seed 000's limit)"),
            ("screenshots", "[" + Array(repeating: "{}", count: 21).joined(separator: ",") + "]",
             "screenshots: more than 20 entries (seed 000's limit)"),
            ("custom_data", #"{"a":""# + String(repeating: "x", count: 60_000) + #"","b":""# + String(repeating: "y", count: 60_000) + "\"}",
             "custom_data: more than 102400 bytes of JSON (seed 000's limit)"),
            ("custom_data", String(repeating: "[", count: 40) + String(repeating: "]", count: 40),
             "body: nested deeper than 32 levels"),
            ("custom_keys", #"{"k":""# + String(repeating: "x", count: 140_000) + "\"}", "body: a string longer than 131072 bytes"),
        ]
        for (field, json, limit) in cases {
            let failure = try #require(Self.refusal(try Self.sample(with: field, json: json)), "\(limit)")
            #expect(failure.message == "Limit exceeded: \(limit)")
            #expect(failure.details == [limit])
        }
        // A member name written with escapes is the name it decodes to.
        let escaped = try Self.sampleText(with: "network_errors", json: "[]").replacingOccurrences(
            of: "\"network_errors\":[]", with: #""\u006cogs":["# + Array(repeating: entry, count: 501).joined(separator: ",") + "]")
        #expect(Self.refusal(Data(escaped.utf8))?.details == ["logs: more than 500 entries (seed 000's limit)"])
    }

    @Test func invalidJSONIsRefusedByTheScanner() {
        for text in ["{not json", #"{"a":1,}"#, #"{"a":"\x"}"#, "[1 2]", #"{"a":tru}"#, "{\"a\":\"\u{01}\"}", "[1]x", "-", "01x"] {
            #expect(Self.refusal(Data(text.utf8))?.message == "Body is not valid JSON", "\(text)")
        }
        for text in ["[]", "{}", #"{"a":[1,-2.5e+3,true,false,null,"\u00e9\n"]}"#, " [ 0 ] "] {
            #expect(Self.refusal(Data(text.utf8), UploadLimits()) == nil, "\(text)")
        }
    }

    @Test func jsonBombIsRefusedCheaplyAndNothingIsStored() async throws {
        try await TestCollector.with { collector in
            // Valid JSON that gzips tiny: custom_data holding 3 million zeros (6 MB, 6 KB gzip'd).
            let bomb = try Self.sample(with: "custom_data", json: #"{"zeros":["# + String(repeating: "0,", count: 3_000_000) + "0]}")
            let answer = try await collector.upload(bomb)
            #expect(answer.status == 400)
            #expect(answer.json["error"] as? String == "validation_failed")
            #expect(answer.json["message"] as? String == "Limit exceeded: custom_data: more than 102400 bytes of JSON (seed 000's limit)")

            // Past the inflation cap (8 MiB) with no limit passed before it (9 MB of whitespace
            // inside custom_data): 413 naming the cap.
            let bigger = try Self.sample(with: "custom_data", json: "{" + String(repeating: " ", count: 9_000_000) + "}")
            let inflated = try await collector.upload(bigger)
            #expect(inflated.status == 413)
            #expect(inflated.json["max_inflated_bytes"] as? Int == CollectorConfiguration.defaultMaxInflatedBytes)
            #expect(inflated.json["max_size_bytes"] as? Int == 5 * 1024 * 1024)

            #expect(try await collector.store.issues(IssueQuery()).isEmpty)
            #expect(try await collector.get("/health").status == 200)
        }
    }

    /// A gzip'd bomb is refused at its first limit while it inflates, at the first checkpoint past
    /// it, with the limit the whole body's scan would name, not after inflating 8 MiB.
    @Test func aBombStopsInflatingAtItsFirstLimit() throws {
        let bomb = [UInt8](try Gzipped.compress(try Self.sample(with: "custom_data",
                                                                 json: "[" + String(repeating: "0,", count: 5_000_000) + "0]")))
        var looked: [Int] = []
        #expect(throws: ValidationFailure.self) {
            try Gzip.decompress(bomb, limit: 8 << 20) { prefix in
                looked.append(prefix.count)
                try UploadLimits.diagnosticsUpload.checkPrefix(prefix)
            }
        }
        // custom_data passes its 100 KB within the first 128 KiB of the body.
        #expect(looked.count <= 2 && looked.allSatisfy { $0 < 256 * 1024 }, "\(looked)")
        do {
            _ = try Gzip.decompress(bomb, limit: 8 << 20, checkpoint: UploadLimits.diagnosticsUpload.checkPrefix)
        } catch let failure as ValidationFailure {
            #expect(failure.limit == "custom_data")
        }
        // A body within the limits is looked at each time its size doubles past 64 KiB, and comes out whole.
        let logs = "[" + Array(repeating: #"{"timestamp":"2026-02-16T14:29:45.123Z","level":"info","tag":"t","message":""# + String(repeating: "m", count: 990) + "\"}", count: 500).joined(separator: ",") + "]"
        let large = try Self.sample(with: "logs", json: logs)
        #expect(large.count > 2 * Gzip.firstCheckpoint)
        looked = []
        let inflated = try Gzip.decompress([UInt8](try Gzipped.compress(large)), limit: 8 << 20) { prefix in
            looked.append(prefix.count)
            try UploadLimits.diagnosticsUpload.checkPrefix(prefix)
        }
        #expect(inflated == [UInt8](large))
        var expected = 0, next = Gzip.firstCheckpoint
        while next <= large.count { expected += 1; next *= 2 }
        #expect((expected - 1...expected).contains(looked.count), "\(looked), \(large.count) bytes")
        #expect(zip(looked, looked.dropFirst()).allSatisfy { $1 >= 2 * $0 })
    }

    @Test func uploadWith650kLogsIsRefusedNotStored() async throws {
        try await TestCollector.with { collector in
            let logs = "[" + Array(repeating: "{}", count: 650_000).joined(separator: ",") + "]"
            let body = try Self.sample(with: "logs", json: logs)
            let gzipped = try Gzipped.compress(body)
            #expect(gzipped.count < 200_000)
            let answer = try await collector.upload(body)
            #expect(answer.status == 400)
            #expect(answer.json["message"] as? String == "Limit exceeded: logs: more than 500 entries (seed 000's limit)")
            #expect(try await collector.store.issues(IssueQuery()).isEmpty)
            #expect(try await collector.read("/api/logs").status == 200)
        }
    }

    @Test func apiLogsAndBeaconsAreBoundedToo() async throws {
        try await TestCollector.with { collector in
            let events = "[" + Array(repeating: #"{"type":"api_log"}"#, count: 1001).joined(separator: ",") + "]"
            let answer = try await collector.request("POST", "/api/logs", headers: [
                "Authorization": "Bearer \(TestCollector.token)", "Content-Type": "application/json",
            ], body: Data(events.utf8))
            #expect(answer.status == 400)
            #expect(answer.json["message"] as? String == "Limit exceeded: body: an array or object with more than 1000 entries")
            let deep = #"{"sessions":"# + String(repeating: "[", count: 9) + String(repeating: "]", count: 9) + "}"
            let beacons = try await collector.request("POST", "/api/v1/sessions", headers: [
                "Authorization": "Bearer \(TestCollector.token)", "Content-Type": "application/json",
            ], body: Data(deep.utf8))
            #expect(beacons.status == 400)
            #expect(beacons.json["message"] as? String == "Limit exceeded: body: nested deeper than 8 levels")
        }
    }

    @Test func uploadWorkRunsOnItsOwnThreads() async throws {
        // The pool's threads, not the cooperative pool's: NIOThreadPool names them "TP-#n".
        let name = try await UploadExecutor.shared.run { () async throws -> String in
            try await Task.sleep(for: .milliseconds(1))   // and after a suspension too
            return Self.threadName()
        }
        #expect(name.hasPrefix("TP-#"), "\(name)")
    }

    static func threadName() -> String { Thread.current.name ?? "" }

    @Test func gateCountsOverallAndPerToken() {
        let gate = UploadGate(overall: 3, perToken: 2)
        #expect(gate.enter("a") == .admitted)
        #expect(gate.enter("a") == .admitted)
        #expect(gate.enter("a") == .tokenFull)
        #expect(gate.enter("b") == .admitted)
        #expect(gate.enter("c") == .full)
        gate.leave("a")
        #expect(gate.enter("c") == .admitted)
        #expect(gate.inFlight == 3)
        for token in ["a", "b", "c"] { gate.leave(token) }
        #expect(gate.inFlight == 0)
    }

    @Test func pastTheUploadsInFlight429And503WithRetryAfter() async throws {
        let gate = UploadGate(overall: 2, perToken: 1)
        try await TestCollector.with(configure: { $0.uploadGate = gate }) { collector in
            // An upload of the first token is in flight (its body still arriving).
            #expect(gate.enter("Bearer \(TestCollector.token)") == .admitted)
            let body = try Fixtures.samplePayloadData()
            let perToken = try await collector.upload(body)
            #expect(perToken.status == 429)
            #expect(perToken.header("Retry-After") == "1")
            #expect(perToken.json["error"] as? String == "too_many_uploads")
            // Another token still has its share.
            #expect(try await collector.upload(body, token: "second-token").status == 201)
            // Every slot taken: 503 for anyone.
            #expect(gate.enter("Bearer second-token") == .admitted)
            let full = try await collector.request("POST", "/api/v1/sessions", headers: [
                "Authorization": "Bearer third-token-unused", "Content-Type": "application/json"], body: Data("{}".utf8))
            #expect(full.status == 401)   // the token is checked first
            let busy = try await collector.upload(body, token: "second-token")
            #expect(busy.status == 429)
            gate.leave("Bearer second-token")
            gate.leave("Bearer \(TestCollector.token)")
            #expect(gate.enter("x") == .admitted)
            #expect(gate.enter("y") == .admitted)
            let overloaded = try await collector.upload(body)
            #expect(overloaded.status == 503)
            #expect(overloaded.header("Retry-After") == "1")
            #expect(overloaded.json["error"] as? String == "overloaded")
            gate.leave("x")
            gate.leave("y")
            #expect(try await collector.upload(body).status == 201)
            #expect(gate.inFlight == 0)
        }
    }
}
