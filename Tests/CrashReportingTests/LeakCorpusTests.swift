// Privacy that holds (issue 15): the leak corpus (PIICorpus/leak-corpus.json: tricky secrets in
// many shapes, each category named) through what a payload goes through before it leaves —
// the seed 000 redactor, then the outgoing check over the exact body — must leak nothing; the
// independent scanner alone must catch every leak too; and the benign corpus (request ids,
// UUIDs, loopback and private addresses, build-ids, hashes, symbols) must come through.
import CrashReportModel
import CrashTestSupport
import Foundation
import Testing
@_spi(Benchmarks) @testable import CrashReporting

struct LeakCorpusTests {
    struct Leak: Decodable, Sendable, CustomTestStringConvertible {
        let category: String
        let `where`: String
        let key: String?
        let text: String
        let secrets: [String]
        var testDescription: String { "[\(category)] \(text.prefix(60))" }
    }

    struct Split: Decodable, Sendable, CustomTestStringConvertible {
        let category: String
        let breadcrumbs: [String]
        let secrets: [String]
        var testDescription: String { "[\(category)] \(breadcrumbs.first?.prefix(50) ?? "")" }
    }

    struct Benign: Decodable, Sendable, CustomTestStringConvertible {
        let category: String
        let `where`: String
        let key: String?
        let text: String
        let keep: [String]
        let partly: Bool?
        var testDescription: String { "[\(category)] \(text.prefix(60))" }
    }

    struct Corpus: Decodable {
        let leaks: [Leak]
        let split: [Split]
        let benign: [Benign]
    }

    static func load() throws -> Corpus {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("PIICorpus/leak-corpus.json")
        return try JSONDecoder().decode(Corpus.self, from: Data(contentsOf: url))
    }

    // Empty when the corpus does not load: `shape` then fails and says why.
    static let corpus = try? load()
    static let leaks = corpus?.leaks ?? []
    static let splits = corpus?.split ?? []
    static let benign = corpus?.benign ?? []

    @Test("the corpus: 500 leaks or more, 20 or more per category; 200 benign samples")
    func shape() throws {
        let corpus = try Self.load()
        #expect(corpus.leaks.count >= 500)
        #expect(corpus.benign.count >= 200)
        #expect(corpus.split.count >= 20)
        for (category, samples) in Dictionary(grouping: corpus.leaks, by: \.category) {
            #expect(samples.count >= 20, "\(category): \(samples.count)")
        }
        for sample in corpus.leaks {
            #expect(!sample.secrets.isEmpty && sample.secrets.allSatisfy(sample.text.contains), "\(sample.text)")
        }
        for sample in corpus.benign {
            #expect(sample.keep.allSatisfy(sample.text.contains), "\(sample.text)")
        }
    }

    // MARK: the way out

    static let host = PipelineUnitTests.host
    static let app = PipelineUnitTests.app

    /// Every string (keys too) of the body that would be sent with `text` placed where the sample
    /// says: redacted by the seed 000 redactor as the pipeline does, then through the outgoing check.
    static func sent(where place: String, key: String?, texts: [String]) throws -> [String] {
        let json = try body(where: place, key: key, texts: texts, redacted: true)
        let body = try Gzip.compress(json)
        let out = try Gzip.decompress(OutgoingCheck.cleaned(body, gzipped: true)?.body ?? body)
        var strings: [String] = []
        func walk(_ value: Any) {
            switch value {
            case let object as [String: Any]:
                for (name, child) in object {
                    strings.append(name)
                    walk(child)
                }
            case let array as [Any]: array.forEach(walk)
            case let text as String: strings.append(text)
            default: break
            }
        }
        walk(try JSONSerialization.jsonObject(with: out))
        return strings
    }

    /// The JSON body a destination would send with `texts` placed where a sample says; redacted
    /// by the seed 000 redactor as the pipeline does, or as the app wrote them.
    static func body(where place: String, key: String?, texts: [String], redacted: Bool) throws -> Data {
        let json: Data
        if place == "api_body" {
            // Seed 003's api_log event, its body redacted as APILogUpload does.
            let events: [[String: Any]] = texts.map { ["url": "https://api.example.com/v1/orders", "method": "POST", "statusCode": 500,
                                                       "requestBody": redacted ? Redactor.seed000.redact($0) : $0] }
            json = try JSONSerialization.data(withJSONObject: events)
        } else {
            var payload = DiagnosticsPayload(
                test_run_id: "6f1f6c1e-3f7b-4c1a-9d1e-6a0e2b7c9d10", app_metadata: app, device_metadata: host,
                timestamp_collected: "2026-11-26T00:00:00.000Z", logs: [], network_errors: [], crash_reports: [], screenshots: [])
            for text in texts {
                switch place {
                case "custom_key":
                    payload.custom_keys[key ?? "note"] = .string(text)
                case "metadata":
                    payload.logs.append(.init(timestamp: "2026-11-26T00:00:00.000Z", level: "info", tag: "app", message: "request",
                                              metadata: [key ?? "value": .string(text)]))
                case "url":
                    payload.network_errors.append(NetworkErrorDigest(
                        timestamp: "2026-11-26T00:00:00.000Z", request_url: text, request_method: "GET", status_code: 502,
                        error_type: "server_error", error_message: "bad gateway", request_duration_ms: 12, retry_count: 0))
                default:
                    payload.logs.append(.init(timestamp: "2026-11-26T00:00:00.000Z", level: "error", tag: "app", message: text))
                }
            }
            if redacted { Redactor.seed000.apply(to: &payload) }
            json = try payload.encoded()
        }
        return json
    }

    static func digits(_ text: String) -> String {
        String(String(text.unicodeScalars.map { NormalisedText.plain($0) }.map(Character.init))
            .precomposedStringWithCompatibilityMapping.filter { $0.isASCII && $0.isNumber })
    }

    static func leaked(_ secrets: [String], in strings: [String], category: String) -> [String] {
        secrets.filter { secret in
            if strings.contains(where: { $0.contains(secret) }) { return true }
            // A card or SSN is gone only if its digits are: not merely its separators changed.
            let secretDigits = digits(secret)
            guard category.hasPrefix("card") || category == "ssn", secretDigits.count >= 9 else { return false }
            return strings.contains { digits($0).contains(secretDigits) }
        }
    }

    @Test("nothing of the leak corpus leaves the process", arguments: leaks)
    func leakCorpus(_ sample: Leak) throws {
        let strings = try Self.sent(where: sample.where, key: sample.key, texts: [sample.text])
        let left = Self.leaked(sample.secrets, in: strings, category: sample.category)
        #expect(left.isEmpty, "left: \(left)")
    }

    /// The leaks that decomposed (NFD) spell with other scalars, decomposed, secrets and all.
    static let decomposedLeaks: [Leak] = leaks.compactMap { leak in
        let text = leak.text.decomposedStringWithCanonicalMapping
        guard !text.unicodeScalars.elementsEqual(leak.text.unicodeScalars) else { return nil }
        return Leak(category: leak.category, where: leak.where, key: leak.key, text: text,
                    secrets: leak.secrets.map(\.decomposedStringWithCanonicalMapping))
    }

    @Test("nothing of the leak corpus leaves the process written decomposed (NFD) either", arguments: decomposedLeaks)
    func decomposedLeakCorpus(_ sample: Leak) throws {
        // Compared composed, in case a stage composed what it kept.
        let strings = try Self.sent(where: sample.where, key: sample.key, texts: [sample.text]).map(\.precomposedStringWithCanonicalMapping)
        let left = Self.leaked(sample.secrets.map(\.precomposedStringWithCanonicalMapping), in: strings, category: sample.category)
        #expect(left.isEmpty, "left: \(left)")
    }

    @Test("secrets split over neighbouring breadcrumbs do not leave either", arguments: splits)
    func splitCorpus(_ sample: Split) throws {
        let strings = try Self.sent(where: "message", key: nil, texts: sample.breadcrumbs)
        let left = Self.leaked(sample.secrets, in: strings, category: sample.category)
        #expect(left.isEmpty, "left: \(left)")
    }

    @Test("the scanner alone, without the redactor, masks every leak", arguments: leaks)
    func scannerAlone(_ sample: Leak) {
        let scanner = LeakScanner()
        let findings = sample.key.map { scanner.findings(in: sample.text, key: $0) } ?? scanner.findings(in: sample.text)
        let (masked, _) = OutgoingCheck.maskText(sample.text, findings)
        let left = Self.leaked(sample.secrets, in: [masked], category: sample.category)
        #expect(left.isEmpty, "left: \(left) in \(masked)")
    }

    @Test("benign text comes through: ids, addresses, build-ids, hashes, symbols", arguments: benign)
    func benignCorpus(_ sample: Benign) throws {
        let strings = try Self.sent(where: sample.where, key: sample.key, texts: [sample.text])
        for keep in sample.keep {
            #expect(strings.contains { $0.contains(keep) }, "\(keep) lost: \(strings.filter { $0.count > 20 })")
        }
        if sample.partly != true {
            #expect(LeakScanner().findings(in: sample.text).isEmpty, "\(LeakScanner().findings(in: sample.text))")
        }
    }

    @Test("benign text does not stop a record: the pass's stages (redaction, limits, the verify stage) let it go, as a breadcrumb and under its key", arguments: benign)
    func benignPassesTheStages(_ sample: Benign) throws {
        var payload = PipelineUnitTests.payload()
        payload.logs.append(.init(timestamp: "2026-11-28T00:00:00.000Z", level: "info", tag: "app", message: sample.text,
                                  metadata: [sample.key ?? "note": .string(sample.text)]))
        let memo = RedactionMemo(redactor: .seed000, verifier: RedactionVerifier())
        do {
            try PayloadStages.run(PayloadStages.standard(memo: memo), on: &payload)
        } catch {
            Issue.record("refused: \(error.reason)")
        }
    }

    @Test("a clean body is sent byte for byte; a masked one is counted in the upload status")
    func cleanBodyUntouched() throws {
        let clean = Data(#"{"logs":[{"message":"GET /health 200 in 3 ms, request 5b97d1c2a0e34f6e0000000000000007"}]}"#.utf8)
        #expect(OutgoingCheck.cleaned(clean, gzipped: false) == nil)
        let before = OutgoingCheck.masked.snapshot["card", default: 0]
        let dirty = Data(#"{"logs":[{"message":"charge 4111 1111  1111 1111 declined"}]}"#.utf8)
        let result = try #require(OutgoingCheck.cleaned(dirty, gzipped: false))
        #expect(String(decoding: result.body, as: UTF8.self).contains("charge [REDACTED:card] declined"))
        #expect(OutgoingCheck.masked.snapshot["card", default: 0] >= before + 1)
        // Lines of an envelope (Sentry, Logz.io) are read one by one; a line that is not JSON as text.
        let envelope = Data("{\"event_id\":\"1\"}\nnot json: pw=hunter22\n{\"message\":\"ok\"}".utf8)
        let cleanedEnvelope = String(decoding: try #require(OutgoingCheck.cleaned(envelope, gzipped: false)).body, as: UTF8.self)
        #expect(cleanedEnvelope == "{\"event_id\":\"1\"}\nnot json: pw=[REDACTED:labelled-secret]\n{\"message\":\"ok\"}")
    }
}

extension LeakCorpusTests {
    /// Payloads as the pipeline builds them from the record corpus (breadcrumbs, keys, thread
    /// names, fatal messages, modules), and seed 000's own example: nothing in them is a secret,
    /// and the outgoing check must leave their bytes alone.
    /// Payloads as the pipeline builds them from the record corpus, by record name.
    static func realPayloads() throws -> [(String, DiagnosticsPayload)] {
        let corpus = tests.appendingPathComponent("CrashReportModelTests/Corpus")
        var payloads: [(String, DiagnosticsPayload)] = []
        for name in try FileManager.default.contentsOfDirectory(atPath: corpus.path).sorted() where name.hasSuffix(".crash") {
            guard let record = try? CrashRecord(data: Data(contentsOf: corpus.appendingPathComponent(name)), source: name) else { continue }
            let report = CrashReport(record: record, reason: "reason", crashedThread: .init(id: 1, name: "main", isMain: true, frames: []), images: [])
            payloads.append((name, PayloadBuilder(app: Self.app, host: Self.host).payload(record: record, report: report)))
        }
        return payloads
    }

    static let tests = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    static let seedExample = tests.appendingPathComponent("CrashReportModelTests/Payloads/seed000-example-payload.json")

    @Test("payloads of real records and seed 000's example pass the outgoing check untouched")
    func realPayloadsUntouched() throws {
        var bodies = try Self.realPayloads().map { ($0.0, try $0.1.encoded()) }
        #expect(bodies.count >= 8)
        bodies.append(("seed000-example-payload.json", try Data(contentsOf: Self.seedExample)))
        for (name, body) in bodies {
            let result = OutgoingCheck.cleaned(body, gzipped: false)
            #expect(result == nil, "\(name): \(result?.kinds ?? [])")
        }
    }
}

/// What a review of the scanner found (2026-11-26), each kept as a case.
@Suite("Leak scanner: review cases")
struct LeakScannerReviewTests {
    static func masked(_ text: String, key: String? = nil) -> String {
        let scanner = LeakScanner()
        return OutgoingCheck.maskText(text, key.map { scanner.findings(in: text, key: $0) } ?? scanner.findings(in: text)).0
    }

    @Test("ordinary server text is left alone", arguments: [
        "Connection failed at startup. Retrying in 5s",
        "score=0.4221165755827173",
        "values 0.43788759365057206 and 0.5564543226524334",
        "order 00123456789 not found",
        "Tests pass: 12/12",
        "pin 3 threads to cores",
        "pwd /srv/app",
        "expected '-----END PRIVATE KEY-----' but found EOF at line 3",
    ])
    func benign(_ text: String) {
        #expect(Self.masked(text) == text)
    }

    @Test("a type name under a key is not a password")
    func typeName() {
        #expect(Self.masked("HTTP2ToHTTP1ServerCodec", key: "handler") == "HTTP2ToHTTP1ServerCodec")
        #expect(Self.masked("hv8UIxsA057#LKB?kDdkm7c?", key: "note") == "[REDACTED:high-entropy]")
    }

    @Test("a private key's body goes, the text after its END line stays")
    func privateKeyEnd() {
        let text = "-----BEGIN PRIVATE KEY-----\nMIIBVgIBADANBgkqhkiG9w0BAQEFAASCAUAwggE8AgEAAkEA\n-----END PRIVATE KEY-----\nfailed to load TLS config"
        let out = Self.masked(text)
        #expect(!out.contains("MIIBVgIBADAN") && out.hasSuffix("-----END PRIVATE KEY-----\nfailed to load TLS config"), "\(out)")
    }

    @Test("the token after Authorization: Bearer is masked, hex or not")
    func bearer() {
        #expect(Self.masked("Authorization: Bearer 0123456789abcdef0123456789abcdef") == "Authorization: Bearer [REDACTED:labelled-secret]")
    }

    @Test("a number under a key is read too; booleans and counts are not")
    func numbers() throws {
        let body = Data(#"{"custom_data":{"card":4111111111111111,"retries":3,"ok":true}}"#.utf8)
        let out = try #require(OutgoingCheck.cleaned(body, gzipped: false))
        let object = try #require(try JSONSerialization.jsonObject(with: out.body) as? [String: Any])
        let custom = try #require(object["custom_data"] as? [String: Any])
        #expect(custom["card"] as? String == "[REDACTED:card]")
        #expect((custom["retries"] as? NSNumber)?.intValue == 3)
    }

    @Test("a masked Sentry envelope item keeps a true length in its header")
    func envelopeLength() throws {
        let payload = #"{"message":"reach jane.doe@example.com"}"#
        let envelope = "{\"event_id\":\"1\"}\n{\"type\":\"event\",\"length\":\(payload.utf8.count)}\n\(payload)\n"
        let out = String(decoding: try #require(OutgoingCheck.cleaned(Data(envelope.utf8), gzipped: false)).body, as: UTF8.self)
        let lines = out.split(separator: "\n", omittingEmptySubsequences: false)
        let header = try #require(try JSONSerialization.jsonObject(with: Data(lines[1].utf8)) as? [String: Any])
        #expect(!lines[2].contains("jane.doe") && (header["length"] as? Int) == lines[2].utf8.count, "\(out)")
    }

    @Test("hostile input gets work in proportion: 200 KB of emails, of '001 ' and of digits")
    func hostile() {
        let emails = String(repeating: "a@b.co ", count: 30_000)
        #expect(LeakScanner().findings(in: emails).count == 30_000)
        #expect(LeakScanner().findings(in: String(repeating: " 001", count: 50_000)).isEmpty)
        #expect(LeakScanner().findings(in: String(repeating: "1234 ", count: 40_000)).count <= 40_000)
    }
}

/// The outgoing check's first pass (Decision 0040) only answers "nothing to mask"; anything else
/// goes to the full pass. Whatever the body, the two must give the same answer.
@Suite("Outgoing check: first pass")
struct OutgoingFirstPassTests {
    /// The same masking with the first pass as with the full pass alone, and the first pass's
    /// own answer ("nothing to mask") only where the full pass masks nothing. Returns that answer.
    @discardableResult
    static func agree(_ body: Data, _ comment: String = "", sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        let full = OutgoingCheck.cleaned(body, gzipped: false, firstPass: false)
        let withFirst = OutgoingCheck.cleaned(body, gzipped: false)
        let clean = OutgoingCheck.nothingToMask(OutgoingCheck.lines(of: body), MemoScanner(LeakScanner()))
        #expect(full?.kinds.sorted() == withFirst?.kinds.sorted(), "\(comment)", sourceLocation: sourceLocation)
        if clean { #expect(full == nil, "first pass: nothing; full pass: \(full?.kinds ?? []) in \(comment)", sourceLocation: sourceLocation) }
        return clean
    }

    @Test("over the leak and benign corpora as the app wrote them, in each place and an envelope's lines")
    func corpus() throws {
        let corpus = try LeakCorpusTests.load()
        var answers: [Bool] = []
        var samples: [(place: String, key: String?, texts: [String])] = corpus.leaks.map { ($0.where, $0.key, [$0.text]) }
        samples += corpus.benign.map { ($0.where, $0.key, [$0.text]) }
        samples += corpus.split.map { ("message", nil, $0.breadcrumbs) }
        for sample in samples {
            let body = try LeakCorpusTests.body(where: sample.place, key: sample.key, texts: sample.texts, redacted: false)
            answers.append(Self.agree(body, "\(sample.place): \(sample.texts)"))
            // The same texts as an envelope's lines (Sentry, Logz.io), as an array of strings and as a key.
            var envelope = Data(#"{"event_id":"9f0c","sent_at":"2026-11-27T00:00:00Z"}"#.utf8)
            for text in sample.texts {
                let item = try JSONSerialization.data(withJSONObject: ["message": text, "extra": [text, "ok"], text: 1] as [String: Any])
                envelope.append(contentsOf: Data("\n{\"type\":\"event\",\"length\":\(item.count)}\n".utf8) + item)
            }
            answers.append(Self.agree(envelope, "envelope: \(sample.texts)"))
        }
        // Both answers occur: the corpus exercises the first pass's "nothing" and its hand-over.
        #expect(answers.contains(true) && answers.contains(false))
        #expect(answers.filter { !$0 }.count >= corpus.leaks.count, "\(answers.filter { !$0 }.count)")
    }

    @Test("what the first pass does not read as Foundation would goes to the full pass", arguments: [
        #"{"logs":[{"message":"token part eyJhbGciOiJIUzI1NiJ9","message":"ok"},{"message":"x"}]}"#,   // a member twice
        #"{"custom_data":{"card":4111111111111111.0,"n":1e400}}"#,
        #"{"custom_data":{"card":4111111111111111e0}}"#,
        #"{"custom_data":{"card":-0,"pin":00}}"#,
        #"{"m":"jane.doe\u0040example.com"}"#,
        #"{"m":"\ud83d\ude00 fine"}"#,
        #"{"m":"lone \ud83d surrogate"}"#,
        #"{"m":"bad \x escape"}"#,
        "{\"m\":\"raw \u{01} control\"}",
        #"not json: pw=hunter22"#,
        #"   "#,
        #"{"a":[1,2,]}"#,
        #"{"a":tru}"#,
        #"["4111 1111","1111 1111"]"#,
        #"[{"msg":"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"},{"msg":"eyJzdWIiOiIxMjM0NTY3ODkwIn0"},{"msg":"SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"}]"#,
        #"{"message":7,"msg":"card 4111 1111 1111 1111"}"#,
        #"{"stack_trace":{"frames":[{"function":"pw=hunter22"}]},"x":"ok"}"#,
        #"{"request_id":"5b97d1c2-a0e3-4f6e","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}"#,
        #"{"password":"hunter2","ok":true,"n":null}"#,
        #"{"custom_keys":{"jane.doe@example.com":"x"}}"#,   // only a member's name
        #"{"custom_data":{"card":4111111111111111}}"#,        // only a number under a key
    ])
    func handOver(_ text: String) {
        Self.agree(Data(text.utf8), text)
    }

    @Test("seeded mutations of bodies (escapes, numbers, brackets, bytes cut or doubled): the two passes agree on each")
    func mutations() throws {
        var random = SeededGenerator(state: 20_261_127)
        var seeds = try ["message", "metadata", "custom_key"].map {
            try LeakCorpusTests.body(where: $0, key: "note", texts: ["GET /v1/orders/:id 200 in 4 ms", "4111 1111", "1111 1111"], redacted: false)
        }
        seeds.append(Data(#"{"logs":[{"message":"jane\u0040example.com","msg":"ok"},{"message":"eyJhbGciOiJIUzI1NiJ9"}],"n":[1,2.5,-3e2]}"#.utf8))
        seeds.append(Data("{\"event_id\":\"1\"}\n{\"type\":\"event\",\"length\":9}\n{\"m\":\"x\"}".utf8))
        let fragments = [#"\u00e9"#, #"\ud83d\ude00"#, #"\ud83d"#, #"\n"#, "1e5", "-0", "0.5", "12345678901234567890", "\"", "\\", "{", "}", "[", "]",
                         ",", ":", "null", "true", "4111 1111 1111 1111", "pw=hunter22", "é", "\u{0}", "\n", "\u{A0}", "０", "\"message\":\"x\","]
        var clean = 0
        for _ in 0..<1500 {
            var bytes = [UInt8](seeds[Int.random(in: 0..<seeds.count, using: &random)])
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                let at = Int.random(in: 0...bytes.count, using: &random)
                switch Int.random(in: 0..<3, using: &random) {
                case 0: bytes.insert(contentsOf: Array(fragments[Int.random(in: 0..<fragments.count, using: &random)].utf8), at: at)
                case 1: if at < bytes.count { bytes.remove(at: at) }
                default: if at < bytes.count { bytes.insert(contentsOf: bytes[at..<min(bytes.count, at + 8)], at: at) }
                }
            }
            if Self.agree(Data(bytes), String(decoding: bytes, as: UTF8.self)) { clean += 1 }
        }
        #expect(clean > 50 && clean < 1450, "\(clean)")   // both answers occur
    }

    @Test("a clean payload is answered by the first pass alone")
    func cleanPayload() throws {
        let body = try LeakCorpusTests.body(where: "message", key: nil, texts: ["GET /v1/orders/:id 200 in 4 ms", "cache miss for order 100042"], redacted: true)
        #expect(Self.agree(body, "payload"))
        #expect(LeakScanner.awsKeyPrefixes.allSatisfy { $0.hasPrefix("A") })
    }
}
