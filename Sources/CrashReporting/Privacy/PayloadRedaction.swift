// Which parts of a payload are people's text (redacted, then checked) and which are machine
// facts (addresses, build-ids, symbols, paths: left alone, since a 40-hex build-id looks like a
// token to any pattern and rewriting one would make the report useless).
import CrashReportModel
import Foundation
import Glibc

enum PayloadRedaction {
    /// Subtrees the verifier skips: what the handler and symbolication wrote (addresses,
    /// build-ids, symbols, paths), and host facts already hashed or generic. Matched by path,
    /// so an app's own custom_data key named "address" or "path" is still checked.
    static func isMachinePath(_ path: [String]) -> Bool {
        switch path.count {
        case 1: return ["test_run_id", "timestamp_collected", "device_metadata", "reporter"].contains(path[0])
        case 3 where path[0] == "crash_reports":
            return ["images", "stack_trace", "signal", "report_id", "timestamp", "thread_info"].contains(path[2])
        case 3 where path[0] == "logs" || path[0] == "network_errors":
            return path[2] == "timestamp"
        default: return false
        }
    }

    /// Key words that make any text under them sensitive, whatever it looks like: the backstop
    /// for values the patterns cannot recognise without their label ("hunter2", "Tommy Smith").
    static let sensitiveKeyWords = [
        "password", "passwd", "passphrase", "secret", "token", "apikey", "authorization", "cookie", "sessionid",
        "cardnumber", "creditcard", "cvv", "cvc", "iban", "accountnumber", "routingnumber", "email", "phone",
        "latitude", "longitude", "childname", "parentname", "teachername", "studentname", "guardianname",
        "fullname", "firstname", "lastname", "room", "classroom", "invoice", "udid", "deviceid", "fcm", "ssn",
    ]

    static func isSensitiveKey(_ key: String) -> Bool { facts(ofKey: key).sensitive }

    private static func isSensitive(folded: String) -> Bool {
        if ["lat", "lng", "lon", "gps", "location", "child", "parent", "teacher", "name", "ip", "ipaddress"].contains(folded) { return true }
        // strstr, not Foundation's `contains` (a locale-aware search per word, the pass's main cost once).
        return folded.withCString { text in sensitiveKeyWordsC.contains { word in word.withUnsafeBufferPointer { strstr(text, $0.baseAddress!) != nil } } }
    }
    /// A key lower-cased, its letters and digits only ("X-Request-ID" → "xrequestid"). ASCII keys
    /// byte by byte; others through Character's properties, as before.
    static func foldedKey(_ key: String) -> String {
        guard key.utf8.allSatisfy({ $0 < 128 }) else { return String(key.lowercased().filter { $0.isLetter || $0.isNumber }) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(key.utf8.count)
        for byte in key.utf8 {
            if byte &- 48 <= 9 || byte &- 97 <= 25 { bytes.append(byte) } else if byte &- 65 <= 25 { bytes.append(byte | 0x20) }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static let sensitiveKeyWordsC: [[CChar]] = sensitiveKeyWords.map { Array($0.utf8CString) }

    /// What a key says about its values. Payloads repeat a few keys thousands of times (every
    /// breadcrumb's "route", "status", "hb.request.id"), and folding a key and searching it for
    /// 36 words took ~1 µs, about a tenth of a pass's redaction: short ASCII keys are remembered,
    /// at most 1024 of them for the process. Only ASCII: Swift's string equality is canonical
    /// equivalence, so "…passwor" + "ḋ" and "…password" + U+0307 would share one entry, while the
    /// word search reads bytes and finds "password" in only one of them.
    /// Guarded by an NSLock for the reason `Redactor.Compiled` gives.
    struct KeyFacts {
        let sensitive: Bool
        let correlation: Bool
    }
    private final class KeyFactsTable: @unchecked Sendable {
        let lock = NSLock()
        var facts: [String: KeyFacts] = [:]
    }
    private static let keyFacts = KeyFactsTable()

    static func facts(ofKey key: String) -> KeyFacts {
        let remembered = key.utf8.count <= 64 && OutgoingCheck.isASCII(key)
        if remembered, let known = keyFacts.lock.withLock({ keyFacts.facts[key] }) { return known }
        let folded = foldedKey(key)
        let facts = KeyFacts(sensitive: isSensitive(folded: folded), correlation: correlationKeys.contains(folded))
        if remembered { keyFacts.lock.withLock { if keyFacts.facts.count < 1024 { keyFacts.facts[key] = facts } } }
        return facts
    }

    /// Keys whose values join a report to a server's logs and traces: a request id (Hummingbird's
    /// `hb.request.id`, 32 hex digits, reads like a token to the patterns), a trace or span id.
    static let correlationKeys: Set<String> = ["requestid", "hbrequestid", "xrequestid", "traceid", "spanid", "correlationid"]

    /// A correlation id kept as it is: under one of `correlationKeys`, and nothing but hex digits
    /// and dashes (ids and UUIDs), so a secret put there by mistake is still redacted.
    static func isCorrelationID(_ text: String, keyFacts: KeyFacts) -> Bool {
        guard keyFacts.correlation, (8...64).contains(text.utf8.count) else { return false }
        @inline(__always) func isIDByte(_ byte: UInt8) -> Bool { byte == UInt8(ascii: "-") || OutgoingCheck.isASCIIHexDigit(byte) }
        return text.utf8.withContiguousStorageIfAvailable { $0.allSatisfy(isIDByte) } ?? text.utf8.allSatisfy(isIDByte)
    }

    /// A labelled value: the patterns see "key=value", so rules that need the label fire; a
    /// sensitive key replaces what they leave; numbers under location keys go too.
    static func redact(_ value: JSONValue, key: String?, _ redact: (String) -> Redactor.Redacted) -> JSONValue {
        switch value {
        case .string(let text):
            guard let key, !text.isEmpty else { return .string(redact(text).text) }
            let keyFacts = facts(ofKey: key)
            if isCorrelationID(text, keyFacts: keyFacts) { return value }
            let labelled = key + "=" + text
            let redacted = redact(labelled)
            let result = redacted.text
            if result != labelled {
                return .string(result.hasPrefix(key + "=") ? String(result.dropFirst(key.count + 1)) : result)
            }
            // When no rule's hints admitted "key=text", none admits the text alone: every fact a
            // hint reads (length, digits, words, runs, shapes) is at least as large with the label
            // before it, whose "=" ends every run. The text then comes out as it went in, and a
            // large body is not scanned twice.
            let plain = redacted.ruleAdmitted ? redact(text).text : text
            if plain == text && keyFacts.sensitive && !text.hasPrefix("[") { return .string("[REDACTED]") }
            return .string(plain)
        case .int, .double:
            guard let key, isSensitiveKey(key) else { return value }
            let folded = key.lowercased()
            return .string(["lat", "lng", "lon", "gps", "loc"].contains { folded.contains($0) } ? "[LOCATION_REDACTED]" : "[REDACTED]")
        case .array(let values):
            return .array(values.map { self.redact($0, key: key, redact) })
        case .object(let object):
            return .object(redactObject(object, redact))
        case .null, .bool:
            return value
        }
    }

    /// Keys are redacted too: an email used as a dictionary key is still an email. Keys that
    /// redact alike ("jane@x.com" and "bob@y.com" are both "[EMAIL_REDACTED]") keep every value:
    /// in the order of the keys as written, the first under the redacted key, the next under
    /// "[EMAIL_REDACTED] (2)" and so on. (Before, one value was dropped, and which one followed
    /// the dictionary's order.)
    static func redactObject(_ object: [String: JSONValue], _ redact: (String) -> Redactor.Redacted) -> [String: JSONValue] {
        var result: [String: JSONValue] = [:]
        result.reserveCapacity(object.count)
        var collided = false
        for (key, value) in object {
            if result.updateValue(self.redact(value, key: key, redact), forKey: redact(key).text) != nil { collided = true }
        }
        guard collided else { return result }
        var alike: [String: [(key: String, value: JSONValue)]] = [:]
        for (key, value) in object { alike[redact(key).text, default: []].append((key, self.redact(value, key: key, redact))) }
        result = [:]
        for (redactedKey, members) in alike where members.count == 1 { result[redactedKey] = members[0].value }
        for (redactedKey, members) in alike.sorted(by: { $0.key < $1.key }) where members.count > 1 {
            var number = 1
            for member in members.sorted(by: { $0.key < $1.key }) {
                var name = number == 1 ? redactedKey : "\(redactedKey) (\(number))"
                while result[name] != nil {
                    number += 1
                    name = "\(redactedKey) (\(number))"
                }
                result[name] = member.value
                number += 1
            }
        }
        return result
    }
}

/// Remembers what redaction and verification made of each text during one upload pass: records
/// of one process share most of their breadcrumbs, and regular expressions are the pass's main cost.
final class RedactionMemo {
    let redactor: Redactor
    private let verifier: RedactionVerifier?
    private var redacted: [String: Redactor.Redacted] = [:]
    /// Texts longer than `MemoScanner.longestRemembered`, the last eight.
    private var long: [(text: String, result: Redactor.Redacted)] = []
    /// Texts the verifier found nothing in, and whether a check's hint let it read them at all.
    private var clean: [String: Bool] = [:]
    /// Whether the last `findings(in:)` read the payload's bytes (tests).
    private(set) var lastReadBytes = false
    /// The last payload encoded in this pass, its JSON and gzip: the verify stage encodes a
    /// record's final payload, and each destination's body is the same bytes gzip'd, so a record
    /// is encoded once, not once per stage and destination. A payload shrunk for a 413 differs
    /// and is encoded again. (An unchanged copy compares equal at once: its arrays and strings
    /// share storage with the original.)
    private var lastPayload: DiagnosticsPayload?
    private var lastJSON: Data?
    private var lastGzip: Data?
    /// How many payloads were encoded (tests).
    private(set) var encodings = 0

    func json(_ payload: DiagnosticsPayload) throws -> Data {
        if let lastPayload, let lastJSON, lastPayload == payload { return lastJSON }
        let data = try payload.encoded()
        encodings += 1
        (lastPayload, lastJSON, lastGzip) = (payload, data, nil)
        return data
    }

    func gzipped(_ payload: DiagnosticsPayload) throws -> Data {
        let json = try json(payload)   // first: a different payload forgets the last one's gzip
        if let lastGzip { return lastGzip }
        let gzip = try Gzip.compress(json)
        lastGzip = gzip
        return gzip
    }

    init(redactor: Redactor, verifier: RedactionVerifier?) {
        self.redactor = redactor
        self.verifier = verifier
        redacted.reserveCapacity(1024)   // a payload of breadcrumbs fills it: not rehashed as it grows
    }

    func redact(_ text: String) -> String { redactNoting(text).text }

    func redactNoting(_ text: String) -> Redactor.Redacted {
        if let known = redactedAlready(text) { return known }
        let result = redactor.redactNoting(text)
        if text.utf8.count > MemoScanner.longestRemembered {
            if long.count == 8 { long.removeFirst() }
            long.append((text, result))
        } else {
            if redacted.count > 50_000 { redacted.removeAll() }
            redacted[text] = result
        }
        return result
    }

    /// What this pass's redaction made of `text`, when it redacted it. A text longer than
    /// `MemoScanner.longestRemembered` is rare (an API body, as itself and after its key), and
    /// hashing it to look it up, then again to remember it, cost a tenth of its redaction: the
    /// last eight are kept apart and compared, not hashed.
    private func redactedAlready(_ text: String) -> Redactor.Redacted? {
        guard text.utf8.count <= MemoScanner.longestRemembered else {
            return long.first(where: { $0.text.utf8.count == text.utf8.count && $0.text == text })?.result
        }
        return redacted[text]
    }

    /// What the verifier still finds in the final payload: every string and number outside the
    /// machine subtrees, seen with its key ("lat=37.77"), and every key.
    /// `readingBytes` false: Foundation's tree only (tests and the benchmark compare the two).
    /// The payload's keys are unique (its own encoding), so both readings see the same values.
    func findings(in payload: DiagnosticsPayload, readingBytes: Bool = true) -> [RedactionVerifier.Finding] {
        guard let verifier, let data = try? json(payload) else { return [] }
        var found: [RedactionVerifier.Finding] = []
        /// Whether a check's hint admitted the text.
        @discardableResult func check(_ text: String) -> Bool {
            if let admitted = clean[text] { return admitted }
            // A text redaction left as it was: the facts its hints read then.
            let result = verifier.findingsNoting(in: text, known: redactedAlready(text)?.unchangedFacts)
            if result.findings.isEmpty { clean[text] = result.admitted } else { found += result.findings }
            return result.admitted
        }
        // A value alone, then as "key=value". When no check's hint admits "key=value", none admits
        // the value alone (see `PayloadRedaction.redact`), so it is not read again; the findings
        // keep their order.
        func check(_ text: String, key: String?) {
            guard let key else { check(text); return }
            let mark = found.count
            guard check(key + "=" + text) else { return }
            let labelled = found[mark...]
            found.removeSubrange(mark...)
            check(text)
            found += labelled
        }
        // The encoded payload's bytes, read as JSONSerialization would (Decision 0040); anything
        // the reader cannot vouch for, and the payload is read through Foundation's tree instead.
        let read: Bool = readingBytes && data.withUnsafeBytes { bytes in
            var walk = VerifyWalk(json: JSONBytes(bytes), check: { check($0) }, checkValue: check)
            do {
                walk.json.skipSpace()
                guard walk.json.peek() == UInt8(ascii: "{") else { return false }
                try walk.value(depth: 0)
                walk.json.skipSpace()
                return walk.json.atEnd
            } catch {
                return false
            }
        }
        lastReadBytes = read
        if read { return found }
        found = []
        guard let root = try? JSONSerialization.jsonObject(with: data) else { return [] }
        // One path, grown and shrunk as the walk goes (not a new array per value).
        var path: [String] = []
        func walk(_ value: Any) {
            if PayloadRedaction.isMachinePath(path) { return }
            let key = path.last.flatMap { Int($0) == nil ? $0 : nil }
            switch value {
            case let object as [String: Any]:
                for (name, element) in object {
                    check(name)
                    path.append(name)
                    walk(element)
                    path.removeLast()
                }
            case let array as [Any]:
                for (index, element) in array.enumerated() {
                    path.append(String(index))
                    walk(element)
                    path.removeLast()
                }
            case let text as String:
                check(text, key: key)
            case let number as NSNumber:
                if let key { check(key + "=" + number.stringValue) }   // "lat=37.7749"
            default:
                break
            }
        }
        walk(root)
        return found
    }
}

/// The verify stage's walk over the encoded payload's bytes: every name, every string (alone
/// and as "key=value" under a key that is not an array index) and every number and boolean
/// under such a key ("lat=37.7749"), as NSNumber writes it, outside the machine paths
/// (`PayloadRedaction.isMachinePath`), in document order.
struct VerifyWalk {
    var json: JSONBytes
    let check: (String) -> Void
    /// A string value, with its key when that is not an array index: checked alone and as "key=value".
    let checkValue: (String, String?) -> Void
    private var path: [String] = []

    init(json: JSONBytes, check: @escaping (String) -> Void, checkValue: @escaping (String, String?) -> Void) {
        self.json = json
        self.check = check
        self.checkValue = checkValue
    }

    mutating func value(depth: Int) throws {
        guard depth < JSONBytes.maxDepth else { throw JSONBytes.Unsure() }
        if PayloadRedaction.isMachinePath(path) { return try json.skipValue(depth: depth) }
        let key = path.last.flatMap { Int($0) == nil ? $0 : nil }
        switch json.peek() {
        case UInt8(ascii: "{"):
            guard !json.open() else { return }
            repeat {
                let name = try json.name()
                check(name)
                path.append(name)
                try value(depth: depth + 1)
                path.removeLast()
            } while try json.another(UInt8(ascii: "}"))
        case UInt8(ascii: "["):
            guard !json.open() else { return }
            var index = 0
            repeat {
                path.append(String(index))
                try value(depth: depth + 1)
                path.removeLast()
                index += 1
            } while try json.another(UInt8(ascii: "]"))
        case UInt8(ascii: "\""):
            checkValue(try json.string(), key)
        case UInt8(ascii: "t"), UInt8(ascii: "f"), UInt8(ascii: "n"):
            // JSONSerialization gives a boolean as an NSNumber, null as NSNull (not read).
            if let bool = try json.literal(), let key { check(key + "=" + NSNumber(value: bool).stringValue) }
        default:
            if let digits = try json.number(digits: key != nil), let key { check(key + "=" + digits) }
        }
    }
}

extension Redactor {
    /// Redacts every free text of `payload`: log messages and metadata, network error URLs and
    /// messages, crash and error messages, error userInfo, custom data, key values, the user id.
    /// Each distinct text is redacted once for the call (a payload's breadcrumbs repeat their
    /// metadata's keys and routes), as an upload pass does with its memo.
    public func apply(to payload: inout DiagnosticsPayload) {
        let memo = RedactionMemo(redactor: self, verifier: nil)
        apply(to: &payload, noting: memo.redactNoting)
    }

    func apply(to payload: inout DiagnosticsPayload, noting: (String) -> Redacted) {
        func redact(_ text: String) -> String { noting(text).text }
        for index in payload.logs.indices {
            payload.logs[index].message = redact(payload.logs[index].message)
            payload.logs[index].metadata = payload.logs[index].metadata.map { PayloadRedaction.redactObject($0, noting) }
        }
        for index in payload.network_errors.indices {
            // Identifiers and query values by the URL rule, then the text rules over the whole
            // URL: an IP host, an email or a name in a path segment.
            let url = payload.network_errors[index].request_url
            payload.network_errors[index].request_url = redact(URL(string: url).map(redactURL) ?? url)
            payload.network_errors[index].error_message = redact(payload.network_errors[index].error_message)
        }
        for index in payload.crash_reports.indices {
            payload.crash_reports[index].exception_message = redact(payload.crash_reports[index].exception_message)
            if var error = payload.crash_reports[index].error {
                error.message = redact(error.message)
                error.user_info = PayloadRedaction.redact(error.user_info, key: nil, noting)
                error.underlying = error.underlying.map { PayloadRedaction.redact($0, key: nil, noting) }
                payload.crash_reports[index].error = error
            }
        }
        payload.custom_data = PayloadRedaction.redactObject(payload.custom_data, noting)
        payload.custom_keys = PayloadRedaction.redactObject(payload.custom_keys, noting)
        payload.user_id = payload.user_id.map(redact)
        for index in payload.screenshots.indices {
            payload.screenshots[index].screen_name = redact(payload.screenshots[index].screen_name)
        }
    }
}
