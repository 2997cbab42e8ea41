// Redaction against seed 000's mandatory table, with the PII corpus as data and RedactionVerifier as
// the oracle: every secret gone, the verifier silent on redacted text and not on raw text, crash-report
// text untouched and unflagged; plus the seed's own examples and the configuration API.
import CrashReportModel
import CrashTestSupport
import Foundation
import Testing
@testable import CrashReporting

struct RedactionTests {
    struct Sample: Decodable, Sendable, CustomTestStringConvertible {
        let type: String
        let text: String
        let secrets: [String]?
        var testDescription: String { "[\(type)] \(text.prefix(70))" }
    }

    private struct Corpus: Decodable {
        let samples: [Sample]
    }

    static func loadCorpus() throws -> [Sample] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("PIICorpus/pii-corpus.json")
        return try JSONDecoder().decode(Corpus.self, from: Data(contentsOf: url)).samples
    }

    // Empty when the corpus does not load: `corpusShape` then fails and says why.
    static let corpus = (try? loadCorpus()) ?? []
    static let positives = corpus.filter { $0.type != "benign" }
    static let benign = corpus.filter { $0.type == "benign" }

    /// The data types of seed 000's mandatory redaction table.
    static let tableTypes = ["email", "password", "api_token", "phone", "device_id", "ip_address", "child_name", "parent_name",
                             "teacher_name", "room", "gps", "fcm_token", "session_id", "invoice_number", "payment"]

    @Test("the corpus covers every data type of the table, 12 samples or more each")
    func corpusShape() throws {
        let samples = try Self.loadCorpus()
        let positives = samples.filter { $0.type != "benign" }
        #expect(positives.count >= 220)
        #expect(samples.count(where: { $0.type == "benign" }) >= 40)
        for type in Self.tableTypes {
            #expect(positives.count(where: { $0.type == type }) >= 12, "\(type)")
        }
        #expect(Set(positives.map(\.type)).isSubset(of: Set(Self.tableTypes)))
        #expect(positives.allSatisfy { !($0.secrets ?? []).isEmpty })
    }

    @Test("every secret is gone, and the verifier finds nothing left", arguments: positives)
    func redacted(_ sample: Sample) {
        let redacted = Redactor.seed000.redact(sample.text)
        for secret in sample.secrets ?? [] {
            #expect(!redacted.contains(secret), "\(secret) left in \(redacted)")
        }
        #expect(RedactionVerifier().findings(in: redacted).isEmpty, "\(redacted)")
        // Redacting twice changes nothing: the outputs are not themselves taken for data.
        #expect(Redactor.seed000.redact(redacted) == redacted)
    }

    @Test("request and trace ids under their keys are kept (they join a report to server logs); other values there are not")
    func correlationIDs() {
        let hummingbirdID = "5b97d1c2a0e34f6e0000000000000007"   // Hummingbird's RequestID: 32 hex digits
        let object: [String: JSONValue] = [
            "request_id": .string(hummingbirdID),
            "hb.request.id": .string(hummingbirdID),
            "trace_id": .string("4bf92f3577b34da6a3ce929d0e0e4736"),
            "X-Request-ID": .string("0f8fad5b-d9cb-469f-a165-70867728950e"),
            "session_token": .string(hummingbirdID),
            "correlation_id": .string("password=hunter2"),
        ]
        let redacted = PayloadRedaction.redactObject(object) { Redactor.seed000.redactNoting($0) }
        #expect(redacted["request_id"] == .string(hummingbirdID))
        #expect(redacted["hb.request.id"] == .string(hummingbirdID))
        #expect(redacted["trace_id"] == .string("4bf92f3577b34da6a3ce929d0e0e4736"))
        #expect(redacted["X-Request-ID"] == .string("0f8fad5b-d9cb-469f-a165-70867728950e"))
        #expect(redacted["session_token"] != .string(hummingbirdID), "a token under a token's key still goes")
        #expect(redacted["correlation_id"].map { "\($0)".contains("hunter2") } == false, "not an id: redacted as usual")
    }

    @Test("the verifier flags every raw sample", arguments: positives)
    func flagged(_ sample: Sample) {
        let findings = RedactionVerifier().findings(in: sample.text)
        #expect(!findings.isEmpty)
        // Excerpts mask what they point at: no secret is quoted back.
        for finding in findings {
            for secret in sample.secrets ?? [] where secret.count >= 6 {
                #expect(!finding.excerpt.contains(secret), "\(finding)")
            }
        }
    }

    @Test("crash-report text comes through unchanged and unflagged", arguments: benign)
    func benignText(_ sample: Sample) {
        #expect(Redactor.seed000.redact(sample.text) == sample.text)
        #expect(RedactionVerifier().findings(in: sample.text).isEmpty)
    }

    @Test("seed 000's examples", arguments: [
        ("user@example.com", "[EMAIL_REDACTED]"),
        ("password=secret", "password=[REDACTED]"),
        ("Bearer abc123xyz456", "Bearer [TOKEN:abc1...]"),
        ("+1-555-123-4567", "+1-555-***-****"),
        ("192.168.1.100", "192.168.x.x"),
        ("INV-2024-001234", "INV-2024-[REDACTED]"),
        ("child: Tommy Smith", "child: [CHILD_REDACTED]"),
        ("parent: Jane Doe", "parent: [PARENT_REDACTED]"),
        ("Ms. Johnson", "[TEACHER_REDACTED]"),
        ("Room 101", "[ROOM_REDACTED]"),
        ("at 37.7749, -122.4194", "at [LOCATION_REDACTED]"),
        ("card 4111 1111 1111 1111", "card [PAYMENT_REDACTED]"),
        ("IBAN DE89370400440532013000", "IBAN [PAYMENT_REDACTED]"),
        ("peer 2001:db8:85a3::8a2e:370:7334", "peer 2001:db8:x:x"),
        ("(555) 123-4567", "(555) ***-****"),
        ("+44 20 7946 0958", "+44 20 **** ****"),
        ("{\"password\": \"hunter 2\"}", "{\"password\": \"[REDACTED]\"}"),
    ])
    func seedExamples(_ input: String, _ expected: String) {
        #expect(Redactor.seed000.redact(input) == expected)
    }

    @Test("seed 000's URL example")
    func seedURL() throws {
        let url = try #require(URL(string: "https://api.laya.app/v1/children/12345/daily-feed?date=2026-02-16"))
        #expect(Redactor.seed000.redactURL(url) == "https://api.laya.app/v1/children/[ID]/daily-feed?date=[REDACTED]")
    }

    @Test("device ids, session ids and FCM tokens: SHA-256 prefixes and the first 20 characters")
    func hashesAndTruncation() {
        func sha(_ value: String, _ length: Int) -> String { String(SHA256.hex(Array(value.utf8)).prefix(length)) }
        let udid = "2b6f0cc904d137be2e1730235f5664094b831186"
        #expect(Redactor.seed000.redact("udid=\(udid)") == "udid=\(sha(udid, 8))")
        #expect(Redactor.seed000.redact("session_id=abc123def456ghi") == "session_id=\(sha("abc123def456ghi", 12))")
        #expect(Redactor.seed000.redact("JSESSIONID=1A2B3C4D5E6F7G8H9I0J; Path=/") == "JSESSIONID=\(sha("1A2B3C4D5E6F7G8H9I0J", 12)); Path=/")
        let fcm = "dXk3Rfl0QkSaBcDeFgHiJk:APA91bHqLmNoPqRsTuVwXyZ0123456789abcdefghij"
        #expect(Redactor.seed000.redact("push \(fcm)") == "push \(fcm.prefix(20))...")
    }

    @Test("a digit run is a card only when its Luhn digit is right")
    func luhn() {
        #expect(Redactor.seed000.redact("ref 4111 1111 1111 1111") == "ref [PAYMENT_REDACTED]")
        #expect(Redactor.seed000.redact("ref 4111 1111 1111 1112") == "ref 4111 1111 1111 1112")
        #expect(PIIPatterns.isCardNumber("378282246310005"))
        #expect(!PIIPatterns.isCardNumber("1795294014670896"))   // no card network starts with 1
    }

    @Test("callers can use their own rules, add rules to the defaults, and add known names")
    func configuration() {
        let order = Redactor.Rule(name: "order", pattern: #"ORD-\d+"#, template: "ORD-[X]")
        #expect(Redactor(rules: [order]).redact("ORD-123 a@b.com") == "ORD-[X] a@b.com")
        #expect(Redactor.seed000.adding([order]).redact("ORD-123 a@b.com") == "ORD-[X] [EMAIL_REDACTED]")

        let upper = Redactor.Rule(name: "upper", pattern: "secretword") { $0.text.uppercased() }
        #expect(Redactor(rules: [upper]).redact("a secretword b") == "a SECRETWORD b")
        let skip = Redactor.Rule(name: "never", pattern: #"\d+"#) { _ in nil }
        #expect(Redactor(rules: [skip]).redact("42") == "42")

        let named = Redactor.seed000.addingKnownNames(["Tommy Smith", "Bea"])
        #expect(named.redact("Tommy Smith and bea waved; child: Tommy Smith; tommy_smith; Beatrice")
            == "[NAME_REDACTED] and [NAME_REDACTED] waved; child: [CHILD_REDACTED]; [NAME_REDACTED]; Beatrice")
        #expect(named.knownNames == ["Tommy Smith", "Bea"])
        #expect(RedactionVerifier(knownNames: named.knownNames).findings(in: "hi Bea").map(\.rule) == ["known-names"])

        #expect(Redactor(rules: [Redactor.Rule(name: "broken", pattern: "(", template: "")]).rejectedRuleNames == ["broken"])
        #expect(Redactor.seed000.rejectedRuleNames.isEmpty)
        let _: any Sendable = Redactor.seed000
    }

    @Test("findings name the rule and mask the value")
    func findingExcerpts() {
        let findings = RedactionVerifier().findings(in: "mail jane.doe@example.com card 4111 1111 1111 1111")
        #expect(findings.map(\.rule) == ["email", "card"])
        #expect(findings.allSatisfy { !$0.excerpt.contains("jane.doe") && !$0.excerpt.contains("1111") })
        #expect(findings.first?.excerpt.contains("‹email›") == true)
    }

    @Test("JSON documents: every string value, except under machine keys")
    func json() {
        let document = #"""
            {"build_id": "350cb8a2705d3b8b4cd5afdf249df29b8da6e517", "lat": 37.7749, "count": 3, "ok": true,
             "logs": [{"message": "hi jane@x.com", "address": "10.0.0.1", "tag": "feed"}],
             "frames": [{"address": "0x00005555555551a9", "symbol": "$s12CrashFixture6level3yyF"}]}
            """#
        let findings = RedactionVerifier().findings(inJSON: Data(document.utf8), skippingKeys: ["build_id", "address"])
        #expect(findings.map(\.rule) == ["gps-labelled", "email"])
        #expect(findings.map(\.path) == ["lat", "logs[0].message"])
        let withoutSkipping = RedactionVerifier().findings(inJSON: Data(document.utf8), skippingKeys: [])
        #expect(withoutSkipping.contains { $0.rule == "ipv4" && $0.path == "logs[0].address" })
    }
}

extension RedactionTests {
    @Test("seed rules compile at first use: a new redactor compiles none, a user id only the few its hints let run; every one compiles; a custom rule that does not is named at once")
    func seedRulesCompileAtFirstUse() {
        let fresh = Redactor(rules: Redactor.seed000Rules)
        #expect(fresh.compiledRuleCount == 0)
        #expect(fresh.redact("user-4242") == "user-4242")
        #expect(fresh.redact("jane.doe@example.com") == Redactor.seed000.redact("jane.doe@example.com"))
        let afterTwo = fresh.compiledRuleCount
        #expect(afterTwo > 0 && afterTwo < Redactor.seed000Rules.count / 2, "\(afterTwo) of \(Redactor.seed000Rules.count) compiled")
        #expect(fresh.rulesThatDoNotCompile().isEmpty)
        #expect(fresh.compiledRuleCount == Redactor.seed000Rules.count)
        let custom = Redactor(rules: [.init(name: "broken", pattern: "(", template: ""), .init(name: "fine", pattern: "x", template: "y")])
        #expect(custom.rejectedRuleNames == ["broken"] && custom.compiledRuleCount == 1)
    }

    @Test("the verifier's checks compile at first use too: none before a text needs one, and every one compiles")
    func verifierChecksCompileAtFirstUse() {
        let fresh = RedactionVerifier.freshDefaultChecks()
        #expect(fresh.compiled() == 0)
        #expect(fresh.compileAll().isEmpty)
        #expect(fresh.compiled() == RedactionVerifier.defaultCheckCount)
        // Known names are compiled as the verifier is made, and still found.
        #expect(RedactionVerifier(knownNames: ["Tommy Smith"]).findings(in: "picked up by Tommy Smith").map(\.rule) == ["known-names"])
    }
}

extension RedactionTests {
    @Test("the rules' hints skip only texts a rule cannot match: the same output with and without them, on both corpora")
    func hintsAreSound() throws {
        let unhinted = Redactor(rules: Redactor.seed000Rules.map { rule in
            var rule = rule
            rule.hint = nil
            return rule
        })
        #expect(Redactor.seed000Rules.count(where: { $0.hint != nil }) == Redactor.seed000Rules.count)
        let texts = try Self.hintEdgeTexts()
        #expect(texts.count > 3000)
        for text in texts {
            let hinted = Redactor.seed000.redact(text)
            #expect(hinted == unhinted.redact(text), "\(text)")
        }
    }

    /// Both corpora, and texts at the edges of the shapes the hints read, as written, upper-cased
    /// and labelled.
    static func hintEdgeTexts() throws -> [String] {
        let leaks = try LeakCorpusTests.load()
        var texts = Self.corpus.map(\.text) + leaks.leaks.map(\.text) + leaks.split.flatMap(\.breadcrumbs) + leaks.benign.map(\.text)
        // At the edges of the shapes the hints read (Decision 0038): each passes or just misses one.
        texts += ["41.8781 N, 87.6298 W", "41.87\tS 87.62 E", "41.8 N, 87.6 W", "at 10.25 seconds", "Mr Smith", "Mr. Smith",
                  "Mrs\tJones", "Miss Jones", "cache miss for order", "Dr.Who", "aDr Who", "7Prof Plum", "MR SMITH", "Ms ",
                  "0a1b2c3d-0123456789abcdef", "0a1b2c3d-0123456789abcde", "a1b2c3d-0123456789abcdef",
                  "018f3c1e-0001-7abc-9def-0123456789ab", "00:1a:2b:3c:4d:5e", "00-1a-2b-3c-4d-5e", "00:1a:2b-3c:4d:5e",
                  "fe80::1%eth0", "::ffff:10.0.0.1", "total(for:) at Orders.swift:12", "12:30:45", "a::b",
                  "swift code DEUTDEFF", "swift_bic: DEUTDEFF500", "BIC DEUTDEFF", "in Orders.swift DEUTDEFF",
                  // Card runs and where the card pattern may start one (not after \w, ".", "+", "-").
                  "id fbe64c6d7a1fb7b4000000000000002a", "x4111111111111111", "_4111111111111111", ".4111111111111111", "+4111111111111111",
                  "-4111111111111111", "(4111111111111111)", "x4111 1111 1111 1111", "x1234 4111 1111 1111 1111", "x1234-4111-1111-1111-1111",
                  "4111 1111 1111 1111", "12 4111111111111111", "a 4111-1111-1111-1111 b", "3782 822463 10005", "x3782 822463 10005 9",
                  // And where it may end one (before neither \w nor the end): request ids, a run into a word, a card then more.
                  "00000000000000000000000000001eef", "id=0000000000000000000000000000002a", "4111111111111111x", "4111111111111111_",
                  "4111111111111111.", "4111111111111111-", "4111111111111111.5", "4111111111111111-7", "4111 1111 1111 1111x",
                  "4111 1111 1111 1111 x", "4111 1111 1111 1111 1234567", "4111-1111-1111-1111-111a", "4111 1111 1111 1x",
                  "3782 822463 10005x", "3782 822463 10005 12", "41111111111111112222", "4111111111111111 2", "(4111111111111111)x"]
        texts += texts.map { $0.uppercased() } + texts.map { "key=" + $0 }
        return texts
    }

    @Test("a keyed value whose labelled form no rule's hints admit is not redacted again alone: the same output as with that pass forced, on both corpora")
    func labelledSkipIsSound() throws {
        let texts = try Self.hintEdgeTexts()
        var skipped = 0
        for key in ["note", "password", "lat", "hb.request.id", "Mr", "build_id"] {
            for text in texts {
                var calls = 0
                let noted = PayloadRedaction.redact(.string(text), key: key) { calls += 1; return Redactor.seed000.redactNoting($0) }
                let forced = PayloadRedaction.redact(.string(text), key: key) { text in
                    var redacted = Redactor.seed000.redactNoting(text)
                    redacted.ruleAdmitted = true
                    return redacted
                }
                #expect(noted == forced, "\(key)=\(text)")
                if calls == 1 { skipped += 1 }
            }
        }
        #expect(skipped > 1000, "most corpus texts are admitted by some rule; the benign ones and the edges are not")
        // A 64 KiB body no rule admits: one redaction, of "key=body", not a second of the body alone.
        let body = String(repeating: #"{"sku":"SKU-12","quantity":3,"note":"gift wrap, deliver after 6pm"},"#, count: 1000)
        var seen: [String] = []
        let result = PayloadRedaction.redact(.string(body), key: "last_request_body") { seen.append($0); return Redactor.seed000.redactNoting($0) }
        #expect(result == .string(body))
        #expect(seen == ["last_request_body=" + body])
    }

    @Test("UTF-16 to text as the standard library does it: ASCII, two and three bytes, private use, pairs and lone surrogates")
    func utf16ToString() {
        let samples: [[UInt16]] = [
            [], Array("plain ascii 0123".utf16), Array("café ñ ü".utf16), Array("日本語 テキスト".utf16), [0xF8F0, 0xF8E1, 0xF8F1, 0x41],
            Array("emoji 😀 pair".utf16), [0x41, 0xD83D], [0xDE00, 0x41], [0xD83D, 0x41, 0xDE00], [0x7F, 0x80, 0x7FF, 0x800, 0xFFFF, 0xE000, 0xD7FF],
        ]
        for units in samples {
            #expect(Redactor.string(utf16: units) == String(decoding: units, as: UTF16.self), "\(units)")
            #expect(Redactor.string(utf16: units[...]) == String(decoding: units, as: UTF16.self), "\(units)")
        }
    }

    @Test("what a key says is the same in any order: canonically equal keys whose bytes differ are not shared (review, 2026-11-27)")
    func keyFactsAreNotShared() {
        let plain = "mypasswor\u{1E0B}"          // "ḋ" as one character: no "password" in its bytes
        let sensitive = "mypassword\u{307}"      // "d" and a combining dot: "password" in its bytes
        #expect(plain == sensitive, "Swift compares them by canonical equivalence")
        #expect(!PayloadRedaction.isSensitiveKey(plain))
        #expect(PayloadRedaction.isSensitiveKey(sensitive))
        let redacted = PayloadRedaction.redact(.string("hunter2"), key: sensitive) { Redactor.seed000.redactNoting($0) }
        #expect(redacted == .string("[REDACTED]"))
    }

    @Test("a key folds byte by byte as it did by Character: ASCII keys of every byte, and others")
    func foldedKeys() {
        var keys = ["X-Request-ID", "hb.request.id", "trace_id", "Ünïcode_Kéy", "lat", "ÄBC", "a1_B2", "", "ﬁle", "İd", "ＡＢ１"]
        keys += (0..<128).map { "k" + String(UnicodeScalar(UInt8($0))) + "Z9" }
        for key in keys {
            #expect(PayloadRedaction.foldedKey(key) == String(key.lowercased().filter { $0.isLetter || $0.isNumber }), "\(key)")
        }
    }

    @Test("the verifier's checks take the same hints: the same findings with and without them, raw and redacted, on both corpora")
    func verifierHintsAreSound() throws {
        // Every check has a hint: its seed rule's when the pattern is the rule's, else its own word.
        #expect(RedactionVerifier.hintedCheckCount == RedactionVerifier.defaultCheckCount)
        #expect(RedactionVerifier.defaultCheckCount > 40)
        let leaks = try LeakCorpusTests.load()
        var texts = Self.corpus.map(\.text) + leaks.leaks.map(\.text) + leaks.split.flatMap(\.breadcrumbs) + leaks.benign.map(\.text)
        texts += ["Authorization: Basic dXNlcjpwYXNzd29yZA==", "basic  QWxhZGRpbjpvcGVu", "Bearer abcdefgh12", "BEARER\tabc.def-ghi",
                  "Basicly fine", "a Bearer of news",
                  // Long runs at the edge of the long-token check's hint: hex (refused), one letter past "f", split by "_" or "-".
                  "id 0123456789abcdef0123456789abcdef", "id 0123456789abcdef0123456789abcdeg", "g0123456789abcdef0123456789abcdef",
                  "0123456789ABCDEF0123456789ABCDEFZ", "_0123456789abcdefg0123456789abcdef0", "x-0123456789abcdefghij0123456789abcdef",
                  "q0123456789abcdef0123456789abcde", "0123456789abcdef0123456789abcdef_q"]
        texts += texts.map { Redactor.seed000.redact($0) }
        texts += texts.map { $0.uppercased() } + texts.map { "key=" + $0 }
        #expect(texts.count > 5000)
        let hinted = RedactionVerifier(), unhinted = RedactionVerifier(knownNames: [], usesHints: false)
        var flagged = 0
        for text in texts {
            let found = hinted.findings(in: text)
            #expect(found == unhinted.findings(in: text), "\(text)")
            if !found.isEmpty { flagged += 1 }
        }
        #expect(flagged > 1000, "\(flagged)")   // the raw samples: the comparison covers findings, not only their absence
    }

    @Test("the verify stage reads a value alone only when a check's hint admits it as key=value: nothing it skips holds a finding, on both corpora")
    func verifierLabelledSkipIsSound() throws {
        let verifier = RedactionVerifier()
        let texts = try Self.hintEdgeTexts()
        var skipped = 0, flagged = 0
        for key in ["note", "password", "lat", "hb.request.id", "Mr", "build_id"] {
            for text in texts where !verifier.findingsNoting(in: key + "=" + text).admitted {
                skipped += 1
                let alone = verifier.findings(in: text)
                #expect(alone.isEmpty, "\(key)=\(text): \(alone)")
            }
        }
        for text in texts where !verifier.findings(in: text).isEmpty { flagged += 1 }
        #expect(skipped > 1000 && flagged > 1000, "\(skipped) skipped, \(flagged) flagged")
    }
}

/// The verify stage reads the encoded payload's bytes (Decision 0040); it must find what the
/// walk over Foundation's JSON tree finds, text for text.
@Suite("Verify stage: the payload's bytes against Foundation's tree")
struct VerifyWalkTests {
    static func agree(_ payload: DiagnosticsPayload, _ comment: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let bytes = RedactionMemo(redactor: .seed000, verifier: RedactionVerifier())
        let tree = RedactionMemo(redactor: .seed000, verifier: RedactionVerifier())
        let fromBytes = bytes.findings(in: payload).map(\.description).sorted()
        let fromTree = tree.findings(in: payload, readingBytes: false).map(\.description).sorted()
        #expect(bytes.lastReadBytes, "the byte reader gave up on \(comment)", sourceLocation: sourceLocation)
        #expect(fromBytes == fromTree, "\(comment)", sourceLocation: sourceLocation)
    }

    @Test("the leak and benign corpora, unredacted and redacted, in every place a sample names")
    func corpus() throws {
        let corpus = try LeakCorpusTests.load()
        var samples: [(place: String, key: String?, texts: [String])] = corpus.leaks.map { ($0.where, $0.key, [$0.text]) }
        samples += corpus.benign.map { ($0.where, $0.key, [$0.text]) }
        samples += corpus.split.map { ("message", nil, $0.breadcrumbs) }
        var flagged = 0
        for sample in samples where sample.place != "api_body" {
            for redacted in [false, true] {
                let json = try LeakCorpusTests.body(where: sample.place, key: sample.key, texts: sample.texts, redacted: redacted)
                let payload = try JSONDecoder().decode(DiagnosticsPayload.self, from: json)
                Self.agree(payload, "\(sample.texts)")
                if !redacted, !(RedactionMemo(redactor: .seed000, verifier: RedactionVerifier()).findings(in: payload).isEmpty) { flagged += 1 }
            }
        }
        #expect(flagged > 200, "\(flagged)")   // findings are compared, not only their absence
    }

    @Test("payloads of real records (frames, images, threads: machine paths) and seed 000's example")
    func realPayloads() throws {
        var payloads = try LeakCorpusTests.realPayloads()
        #expect(payloads.count >= 8)
        payloads.append(("seed000", try JSONDecoder().decode(DiagnosticsPayload.self, from: Data(contentsOf: LeakCorpusTests.seedExample))))
        for (name, payload) in payloads { Self.agree(payload, name) }
    }

    @Test("numbers, booleans, nulls, escapes, nesting and machine paths in custom data, keys and errors")
    func shapes() throws {
        var payload = DiagnosticsPayload(
            test_run_id: "t", app_metadata: PipelineUnitTests.app, device_metadata: PipelineUnitTests.host,
            timestamp_collected: "2026-11-27T00:00:00.000Z", logs: [], network_errors: [], crash_reports: [], screenshots: [])
        payload.custom_data = [
            "lat": .double(37.7749), "lng": .double(-122.4194), "count": .int(3), "flag": .bool(true), "off": .bool(false), "none": .null,
            "big": .double(1e300), "small": .double(-0.000012), "whole": .double(2.0), "card": .int(4_111_111_111_111_111),
            "note": .string("tab\tquote\" slash/ uni \u{1F600} nul\u{0} café"), "123": .string("jane.doe@example.com"),
            "nested": .object(["list": .array([.string("call +1 415 555 0100"), .int(7), .object(["password": .string("hunter2")])])]),
            "email@example.com": .string("key is an email"),
        ]
        payload.custom_keys = ["room": .string("Room 12"), "latitude": .string("37.7749")]
        payload.user_id = "user-4242"
        payload.logs = [.init(timestamp: "2026-11-27T00:00:00.000Z", level: "error", tag: "app", message: "card 4111 1111 1111 1111",
                              metadata: ["lat": .double(51.5072), "ids": .array([.int(1), .int(2)])])]
        Self.agree(payload, "shapes")
    }
}

extension RedactionTests {
    /// Corpus texts that decomposed (NFD) spell with other scalars: accented names, addresses,
    /// full-width and other-script text.
    static let decomposable: [String] = {
        let leaks = LeakCorpusTests.corpus
        let texts = corpus.map(\.text) + (leaks?.leaks.map(\.text) ?? []) + (leaks?.split.flatMap(\.breadcrumbs) ?? [])
            + (leaks?.benign.map(\.text) ?? [])
        return texts.filter { !$0.decomposedStringWithCanonicalMapping.unicodeScalars.elementsEqual($0.unicodeScalars) }
    }()

    @Test("decomposed text (NFD) is redacted and checked as its composed twin, on both corpora", arguments: decomposable)
    func decomposedCorpus(_ text: String) {
        let nfd = text.decomposedStringWithCanonicalMapping
        // Equal as Swift compares strings (canonically): a text with nothing replaced keeps its bytes.
        #expect(Redactor.seed000.redact(nfd) == Redactor.seed000.redact(text))
        let verifier = RedactionVerifier()
        #expect(verifier.findings(in: nfd).map(\.rule) == verifier.findings(in: text).map(\.rule))
        #expect(verifier.findings(in: Redactor.seed000.redact(nfd)).isEmpty)
    }

    @Test("a name with accents goes whole however it is spelled: composed, decomposed, or a letter with no composed form")
    func decomposedNames() throws {
        #expect(Self.decomposable.count >= 30)
        let texts = [("Mr. Émile Zola called", ["Émile", "Zola"]), ("daughter: Mia García enrolled", ["Mia", "García", "a enrolled"]),
                     ("children: Lucas Dubois, Chloé Dubois", ["Chloé", "Dubois"]), ("Check-out by parent for kid: Leo Müller", ["Müller"]),
                     ("Ms Ångström signed", ["Ångström"]),
                     // "a" with a cedilla and "n" with a diaeresis have no composed form: marks stay marks.
                     ("Mr. Ma\u{327}rquez Lopez called", ["rquez", "Lopez"]), ("teacher: Mr. N\u{308}oel Smith", ["oel", "Smith"])]
        for (text, secrets) in texts {
            for form in [text, text.decomposedStringWithCanonicalMapping] {
                let redacted = Redactor.seed000.redact(form)
                for secret in secrets {
                    for spelled in [secret, secret.decomposedStringWithCanonicalMapping] {
                        #expect(redacted.range(of: spelled, options: .literal) == nil, "\(spelled) left in \(redacted)")
                    }
                }
                // No mark is left behind a placeholder: the mark belonged to a name.
                #expect(!redacted.unicodeScalars.contains { $0.properties.generalCategory == .nonspacingMark }, "\(redacted)")
                #expect(RedactionVerifier().findings(in: redacted).isEmpty, "\(redacted)")
                #expect(!RedactionVerifier().findings(in: form).isEmpty, "\(form)")
            }
        }
        // Known names match in either spelling, given in either.
        for name in ["Émile Zola", "Émile Zola".decomposedStringWithCanonicalMapping] {
            let redactor = Redactor.seed000.addingKnownNames([name])
            let verifier = RedactionVerifier(knownNames: [name])
            for form in ["picked up by émile zola", "picked up by émile zola".decomposedStringWithCanonicalMapping] {
                #expect(redactor.redact(form) == "picked up by [NAME_REDACTED]", "\(form)")
                #expect(verifier.findings(in: form).map(\.rule).contains("known-names"), "\(form)")
            }
        }
    }

    @Test("one pass's memos give a text and its canonical twin the same answer, whichever comes first")
    func memoCanonicalTwins() {
        let composed = "note: Mr. Émile Zola called"
        let decomposed = composed.decomposedStringWithCanonicalMapping
        for order in [[composed, decomposed], [decomposed, composed]] {
            let memo = RedactionMemo(redactor: .seed000, verifier: RedactionVerifier())
            let answers = order.map { memo.redact($0) }
            #expect(answers.allSatisfy { !$0.contains("Zola") && !$0.contains("mile") }, "\(answers)")
            #expect(answers[0] == answers[1])
        }
    }

    @Test("composing reads no separator away, keeps a known name's marks out of the way, and leaves unredacted text's bytes alone (review, 2026-11-28)")
    func composingEdges() {
        // "=" and U+0338 compose into "≠": the label's separator must stay, in either spelling.
        for text in ["password=\u{338}hunter2 at login", "password\u{2260}hunter2 at login", "token:\u{338}abc123def456 sent"] {
            let redacted = Redactor.seed000.redact(text)
            #expect(!redacted.contains("hunter2") && !redacted.contains("abc123def456"), "\(redacted)")
        }
        // A known name followed by a mark with no composed form is still the name.
        let known = Redactor.seed000.addingKnownNames(["Tommy Smith"])
        for text in ["picked up by Tommy Smith\u{332} today", "picked up by Tommy Smith\u{301}"] {
            let redacted = known.redact(text)
            #expect(!redacted.contains("Tommy") && !redacted.contains("Smith"), "\(redacted)")
            #expect(!RedactionVerifier(knownNames: ["Tommy Smith"]).findings(in: text).isEmpty, "\(text)")
        }
        // Nothing to replace: the text comes back as it came, decomposed or not.
        for text in ["cache miss for caf\u{E9} menu", "cache miss for cafe\u{301} menu", "\u{2126} ohm sign in a unit label"] {
            #expect(Array(Redactor.seed000.redact(text).unicodeScalars) == Array(text.unicodeScalars), "\(text)")
        }
    }
}

extension RedactionTests {
    @Test("the verify stage takes the facts redaction read from a text it left as it was: the same findings as reading them again, on both corpora and their canonical twins")
    func verifierReusesUnchangedFacts() throws {
        let verifier = RedactionVerifier()
        var texts = try Self.hintEdgeTexts()
        // Canonical twins of ASCII texts (Swift's String equality finds an ASCII text's memo entry for them).
        texts += ["Key=4111111111111111", "password;hunter2", "token `abc`"]
        var reused = 0, flagged = 0
        for text in texts {
            // Redaction hands on facts only for an ASCII text it left as it was (not always then: a
            // rule may replace a match with itself, as the build-id rule does).
            let redacted = Redactor.seed000.redactNoting(text)
            if redacted.unchangedFacts != nil {
                #expect(redacted.text == text && Redactor.TextFacts(text) != nil, "\(text)")
                reused += 1
            }
            // Facts handed on are the text's own: findings and admission as if read again. Given for
            // every ASCII text, raw secrets included, so that findings are compared, not only their absence.
            guard let facts = Redactor.TextFacts(text) else { continue }
            let fresh = verifier.findingsNoting(in: text)
            let known = verifier.findingsNoting(in: text, known: facts)
            #expect(known.findings == fresh.findings && known.admitted == fresh.admitted, "\(text)")
            if !fresh.findings.isEmpty { flagged += 1 }
            let twin = text.replacingOccurrences(of: "K", with: "\u{212A}").replacingOccurrences(of: ";", with: "\u{37E}")
                .replacingOccurrences(of: "`", with: "\u{1FEF}")
            if twin.utf8.count != text.utf8.count {
                #expect(twin == text, "a canonical twin")
                let twinFresh = verifier.findingsNoting(in: twin)
                let twinKnown = verifier.findingsNoting(in: twin, known: facts)
                #expect(twinKnown.findings == twinFresh.findings && twinKnown.admitted == twinFresh.admitted, "\(twin)")
            }
        }
        #expect(reused > 1000 && flagged > 1000, "\(reused) reused, \(flagged) flagged")
    }

    @Test("a pass's memo, after redaction, finds what a memo that redacted nothing finds")
    func verifyAfterRedactionMatchesFreshVerify() throws {
        let leaks = try LeakCorpusTests.load()
        var payload = PipelineUnitTests.payload()
        let texts = Self.corpus.map(\.text) + leaks.benign.map(\.text) + leaks.leaks.map(\.text)
        for (index, text) in texts.enumerated() {
            payload.logs.append(.init(timestamp: "2026-11-28T00:00:00.000Z", level: "info", tag: "t", message: text,
                                      metadata: ["hb.request.id": .string(String(format: "%032x", index * 7919)), "note": .string(text)]))
        }
        let pass = RedactionMemo(redactor: .seed000, verifier: RedactionVerifier())
        var redacted = payload
        pass.redactor.apply(to: &redacted, noting: pass.redactNoting)
        // The redacted payload as the stage sees it, and the raw one (findings, not only their absence).
        for candidate in [redacted, payload] {
            let fresh = RedactionMemo(redactor: .seed000, verifier: RedactionVerifier()).findings(in: candidate)
            #expect(pass.findings(in: candidate) == fresh)
        }
        #expect(!pass.findings(in: payload).isEmpty)
    }
}

extension RedactionTests {
    @Test("the hints' facts read eight bytes at a time: the same bytes, digits, refusals and honorifics as byte by byte, on both corpora and seeded texts")
    func textFactsFastPaths() throws {
        var texts = try Self.hintEdgeTexts()
        // Seeded texts over the bytes the facts care about, lengths around the 8-byte words.
        var generator = SeededGenerator(state: 0x5EED_F00D)
        let alphabet = Array("aZ09:-. \t_\"{},@+=/Mr.sSnN#xX".utf8)
        for length in 0..<48 {
            for _ in 0..<60 {
                texts.append(String(decoding: (0..<length).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &generator)] }, as: UTF8.self))
            }
        }
        // Refused: a byte beyond ASCII or a NUL, anywhere in an 8-byte word or the tail.
        for position in 0..<20 {
            var bytes = Array("Mr Smith paid 4111 1111".utf8)
            bytes[position] = position % 2 == 0 ? 0 : 0xC3
            texts.append(String(decoding: bytes, as: UTF8.self))
        }
        // A byte beyond ASCII in the tail, after every whole 8-byte word.
        texts += (0..<17).map { String(repeating: "a", count: $0) + "é" }
        var checked = 0, refused = 0
        for text in texts {
            let written = Array(text.utf8)
            let facts = Redactor.TextFacts(text)
            guard written.allSatisfy({ $0 != 0 && $0 < 128 }) else {
                #expect(facts == nil, "\(text)")
                refused += 1
                continue
            }
            guard let facts else { Issue.record("no facts for ASCII \(text)"); continue }
            #expect(facts.bytes == Array(text.lowercased().utf8), "\(text)")
            #expect(facts.digits == written.count(where: { $0 >= 48 && $0 <= 57 }), "\(text)")
            #expect(facts.honorific == (written.contains { $0 >= 65 && $0 <= 90 } && Redactor.TextFacts.hasHonorific(written)), "\(text)")
            checked += 1
        }
        #expect(checked > 5000 && refused > 20, "\(checked) checked, \(refused) refused")
    }
}

extension RedactionTests {
    @Test("a request id whose digits run into a word starts no card check, nor do card digits that run into one; a card before a word boundary still does")
    func requestIDsAreNoCards() throws {
        let card = try #require(Redactor.seedHints["card"]?.gate)
        for id in ["00000000000000000000000000001eef", "hb.request.id=0000000000000000000000000000002a", "3665d0d6c3a8e2b40000000000000001",
                   "4111 1111 1111 1111x"] {
            let facts = try #require(Redactor.TextFacts(id))
            #expect(!facts.admits(card), "\(id)")
        }
        for text in ["4111111111111111", "id=4111111111111111;", "4111 1111 1111 1111 x", "x 4111-1111-1111-1111"] {
            let facts = try #require(Redactor.TextFacts(text))
            #expect(facts.admits(card), "\(text)")
        }
    }
}

extension RedactionTests {
    @Test("what redaction keeps of an address, the verifier does not flag (before, a breadcrumb naming 127.0.0.1 had its record refused); what it masks, the verifier flags raw")
    func keptAddressesAreNoFindings() {
        let verifier = RedactionVerifier()
        for text in ["listening on 127.0.0.1:8080", "listening on 0.0.0.0:8080", "bind [::1]:8080", "connect to 127.10.0.2 refused", "::1"] {
            let redacted = Redactor.seed000.redact(text)
            #expect(verifier.findings(in: redacted).isEmpty, "\(text) -> \(redacted): \(verifier.findings(in: redacted))")
        }
        for text in ["from 10.0.3.7", "client 192.168.1.20 connected", "peer 8.8.8.8:53"] {
            #expect(verifier.findings(in: text).map(\.rule) == ["ipv4"], "\(text)")
            #expect(verifier.findings(in: Redactor.seed000.redact(text)).isEmpty, "\(text)")
        }
    }
}

extension RedactionTests {
    @Test("keys that redact alike keep every value, numbered in the order of the keys as written, whatever the dictionary's order")
    func keysThatRedactAlike() {
        let written: [(String, JSONValue)] = [("jane@x.com", .string("a")), ("bob@y.com", .string("b")), ("zed@z.com", .int(3)),
                                              ("note", .string("n")), ("[EMAIL_REDACTED] (2)", .string("literal"))]
        let noting = { (text: String) in Redactor.seed000.redactNoting(text) }
        func value(_ key: String) -> JSONValue { PayloadRedaction.redact(written.first { $0.0 == key }!.1, key: key, noting) }
        // Sorted as written: bob, jane, zed; "(2)" is a key of its own already.
        let expected: [String: JSONValue] = [
            "note": value("note"), "[EMAIL_REDACTED] (2)": value("[EMAIL_REDACTED] (2)"),
            "[EMAIL_REDACTED]": value("bob@y.com"), "[EMAIL_REDACTED] (3)": value("jane@x.com"), "[EMAIL_REDACTED] (4)": value("zed@z.com"),
        ]
        var generator = SeededGenerator(state: 28)
        var kept: [[Int]] = []   // blocks kept alive, so that each dictionary gets other storage (its order follows the address)
        for round in 0..<100 {
            kept.append([Int](repeating: round, count: 1 + round % 160))
            let object = Dictionary(uniqueKeysWithValues: written.shuffled(using: &generator))
            #expect(PayloadRedaction.redactObject(object, noting) == expected)
        }
        // No collision: the same as each key and value redacted alone.
        let plain: [String: JSONValue] = ["note": .string("n"), "route": .string("/v1/orders/:id")]
        #expect(PayloadRedaction.redactObject(plain, noting) == ["note": value("note"), "route": PayloadRedaction.redact(.string("/v1/orders/:id"), key: "route", noting)])
        #expect(kept.count == 100)
        // Through the pass's stages: every value arrives, and the verify stage lets it go.
        var payload = PipelineUnitTests.payload()
        payload.custom_data = Dictionary(uniqueKeysWithValues: written)
        let memo = RedactionMemo(redactor: .seed000, verifier: RedactionVerifier())
        #expect(throws: Never.self) { try PayloadStages.run(PayloadStages.standard(memo: memo), on: &payload) }
        #expect(payload.custom_data == expected)
    }
}
