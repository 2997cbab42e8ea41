// The gate every request body passes on its way out (`HTTPExchange.send`): the collector's
// diagnostics, api_logs and beacons, Sentry envelopes, Logz.io bulk lines. The bytes are read as
// they will be sent (gunzipped when gzip'd, JSON or one JSON document per line), every string
// (and number) outside machine fields goes through `LeakScanner`, and what it finds is masked
// before sending: the report still arrives, the secret does not. A body with nothing to mask
// leaves untouched, byte for byte; otherwise only its lines with a finding are encoded again
// (and a Sentry item header's length follows its payload).
import Foundation
import Glibc

enum OutgoingCheck {
    /// Findings masked since the process started, by kind (`CrashReporter.uploadStatus.leaksMasked`).
    static let masked = MaskedCounts()

    /// Guarded by an NSLock (a pthread mutex), not `Mutex`: ThreadSanitizer sees no order in
    /// Synchronization's `Mutex` on Linux and reported the counts' updates as races (CI, 2026-11-27).
    final class MaskedCounts: @unchecked Sendable {
        private let lock = NSLock()
        private var counts: [String: Int] = [:]
        func add(_ kinds: [String]) { lock.withLock { for kind in kinds { counts[kind, default: 0] += 1 } } }
        var snapshot: [String: Int] { lock.withLock { counts } }
    }

    /// Keys whose values are machine facts (addresses, build-ids, symbols, paths, ids the
    /// pipeline made), in every destination's format; not read.
    static let machineKeys: Set<String> = [
        "stack_trace", "stacktrace", "frames", "images", "debug_meta", "thread_info", "threads", "registers",
        "device_metadata", "reporter", "build_id", "debug_id", "code_id", "code_file", "debug_file", "image_addr",
        "instruction_addr", "symbol_addr", "image_size", "package", "module", "function", "symbol", "filename",
        "abs_path", "report_id", "event_id", "sdk", "modules", "test_run_id", "timestamp", "timestamp_collected",
        "sent_at", "dsn",
    ]
    /// Ids that join a report to a server's logs; kept when they are hex, dashes and underscores
    /// only (trace and span ids, UUIDs, `hb.request.id`).
    static let correlationKeys: Set<String> = ["requestid", "hbrequestid", "xrequestid", "traceid", "spanid", "parentspanid", "correlationid", "traceparent"]

    static let mask = "[REDACTED:%@]"

    /// The body to send instead of `body`, with what was masked; nil when there was nothing to mask.
    /// `firstPass`: answer "nothing to mask" from the bytes when it can (`nothingToMask`); false
    /// runs the full pass alone (tests compare the two).
    static func cleaned(_ body: Data, gzipped: Bool, scanner: LeakScanner = LeakScanner(), firstPass: Bool = true) -> (body: Data, kinds: [String])? {
        let plain: Data
        if gzipped {
            guard let inflated = try? Gzip.decompress(body) else { return nil }   // not ours to judge: sent as is
            plain = inflated
        } else {
            plain = body
        }
        guard !plain.isEmpty else { return nil }
        var kinds: [String] = []
        let scanner = MemoScanner(scanner, expectedTexts: plain.count / 64)
        var lines = Self.lines(of: plain)
        if firstPass, nothingToMask(lines, scanner) { return nil }
        var changed = false
        var changedLines: Set<Int> = []
        for index in lines.indices where !lines[index].isEmpty {
            let line = Data(lines[index])
            if let root = try? JSONSerialization.jsonObject(with: line, options: [.fragmentsAllowed]) {
                let (value, found) = clean(root, key: nil, scanner)
                if !found.isEmpty, let data = try? JSONSerialization.data(withJSONObject: value, options: [.fragmentsAllowed, .withoutEscapingSlashes]) {
                    lines[index] = data[...]
                    kinds += found
                    changed = true
                    changedLines.insert(index)
                }
            } else {
                let text = String(decoding: line, as: UTF8.self)
                let (result, found) = maskText(text, scanner.findings(in: text, key: nil))
                if !found.isEmpty {
                    lines[index] = Data(result.utf8)[...]
                    kinds += found
                    changed = true
                    changedLines.insert(index)
                }
            }
        }
        guard changed else { return nil }
        // A Sentry envelope's item header gives its payload's length: a masked payload has another.
        for index in lines.indices.dropFirst() where changedLines.contains(index) {
            guard var header = (try? JSONSerialization.jsonObject(with: Data(lines[index - 1]))) as? [String: Any],
                  header["length"] != nil, header["type"] != nil else { continue }
            header["length"] = lines[index].count
            if let data = try? JSONSerialization.data(withJSONObject: header, options: [.withoutEscapingSlashes]) { lines[index - 1] = data[...] }
        }
        var joined = Data()
        for (index, line) in lines.enumerated() {
            if index > 0 { joined.append(UInt8(ascii: "\n")) }
            joined.append(contentsOf: line)
        }
        let out = gzipped ? ((try? Gzip.compress(joined)) ?? joined) : joined
        masked.add(kinds)
        return (out, kinds)
    }

    /// The body's lines (one JSON document each in an envelope; the whole body otherwise).
    static func lines(of plain: Data) -> [Data.SubSequence] {
        var lines: [Data.SubSequence] = []
        var lineStart = plain.startIndex
        plain.withUnsafeBytes { bytes in
            guard let base = bytes.baseAddress else { return }
            var offset = 0
            while let found = memchr(base + offset, 0x0A, bytes.count - offset) {
                let end = base.distance(to: UnsafeRawPointer(found))
                lines.append(plain[lineStart..<(plain.startIndex + end)])
                lineStart = plain.startIndex + end + 1
                offset = end + 1
            }
        }
        lines.append(plain[lineStart...])
        return lines
    }

    static func maskText(_ text: String, _ findings: [LeakScanner.Finding]) -> (String, [String]) {
        guard !findings.isEmpty else { return (text, []) }
        var out = ""
        var cursor = text.startIndex
        for finding in findings.sorted(by: { $0.range.lowerBound < $1.range.lowerBound }) where finding.range.lowerBound >= cursor {
            out += text[cursor..<finding.range.lowerBound]
            out += String(format: mask, finding.kind.rawValue)
            cursor = finding.range.upperBound
        }
        out += text[cursor...]
        return (out, findings.map(\.kind.rawValue))
    }

    static func fold(_ key: String) -> String { String(key.lowercased().unicodeScalars.filter { LeakScanner.isASCIILetter($0) }.map(Character.init)) }

    /// Whether every byte of `text` is below 128, read in place when the String is contiguous.
    static func isASCII(_ text: String) -> Bool {
        text.utf8.withContiguousStorageIfAvailable { bytes in
            var high: UInt8 = 0
            for byte in bytes { high |= byte }
            return high < 0x80
        } ?? text.utf8.allSatisfy { $0 < 0x80 }
    }

    /// Whether `text` is only hex digits, dashes and underscores (an id, a UUID), read in place.
    static func isIDText(_ text: String) -> Bool {
        @inline(__always) func isIDByte(_ byte: UInt8) -> Bool {
            isASCIIHexDigit(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
        }
        return text.utf8.withContiguousStorageIfAvailable { $0.allSatisfy(isIDByte) } ?? text.utf8.allSatisfy(isIDByte)
    }

    /// Unicode's ASCII_Hex_Digit: 0-9, a-f, A-F (a byte of a multi-byte scalar is none of them).
    @inline(__always) static func isASCIIHexDigit(_ byte: UInt8) -> Bool {
        (byte >= 48 && byte <= 57) || (byte | 0x20 >= 97 && byte | 0x20 <= 102)
    }

    /// What is found in a string value under `key` (nil: the body's top level): read with its key,
    /// except an id that joins a report to a server's logs. Both passes read strings this way.
    static func stringFindings(_ text: String, key: String?, _ scanner: MemoScanner) -> [LeakScanner.Finding] {
        stringFindings(text, key: key, facts: key.map(scanner.facts), scanner)
    }

    /// The same, with the key's facts already looked up (`facts` is nil exactly when `key` is).
    static func stringFindings(_ text: String, key: String?, facts: MemoScanner.KeyFacts?, _ scanner: MemoScanner) -> [LeakScanner.Finding] {
        guard !text.isEmpty else { return [] }
        guard let key, let facts else { return scanner.findings(in: text, key: nil) }
        if facts.correlation {
            // An id looks random by design ("req_q257VAfC0YMttM"): only known secret formats count.
            if isIDText(text) { return [] }
            return scanner.findings(in: text, key: nil)
        }
        return scanner.findings(in: text, key: key, facts: facts)
    }

    /// A string is read with its key (`LeakScanner.findings(in:key:)`: "password=hunter2", and
    /// the value as a whole); neighbouring strings of an array are read together for split secrets.
    private static func clean(_ value: Any, key: String?, _ scanner: MemoScanner) -> (Any, [String]) {
        switch value {
        case let object as [String: Any]:
            var result: [String: Any] = [:]
            var kinds: [String] = []
            for (name, child) in object {
                let (cleanName, nameKinds) = maskText(name, scanner.findings(in: name, key: nil))
                kinds += nameKinds
                if machineKeys.contains(name.lowercased()) {
                    result[cleanName] = child
                    continue
                }
                let (cleanChild, found) = clean(child, key: name, scanner)
                result[cleanName] = cleanChild
                kinds += found
            }
            return (result, kinds)
        case let array as [Any]:
            var result: [Any] = []
            var kinds: [String] = []
            for element in array {
                let (cleanElement, found) = clean(element, key: key, scanner)
                result.append(cleanElement)
                kinds += found
            }
            // Split secrets: the strings of this array, or the messages of its objects.
            let texts: [String?] = result.map { element in
                if let text = element as? String { return text }
                if let object = element as? [String: Any] { return (object["message"] ?? object["msg"]) as? String }
                return nil
            }
            let present = texts.indices.filter { texts[$0] != nil }
            if present.count > 1 {
                let across = scanner.scanner.findingsAcross(present.map { texts[$0]! })
                for (position, index) in present.enumerated() where !across[position].isEmpty {
                    let (masked, found) = maskText(texts[index]!, across[position])
                    kinds += found
                    if result[index] is String {
                        result[index] = masked
                    } else if var object = result[index] as? [String: Any] {
                        object[object["message"] != nil ? "message" : "msg"] = masked
                        result[index] = object
                    }
                }
            }
            return (result, kinds)
        case let text as String:
            return maskText(text, stringFindings(text, key: key, scanner))
        case let number as NSNumber where !(value is Bool):
            // {"card": 4111111111111111}: a number is read as its digits, with its key.
            guard let key else { return (value, []) }
            let found = scanner.findings(in: number.stringValue, key: key)
            guard let first = found.first else { return (value, []) }
            return (String(format: mask, first.kind.rawValue), found.map(\.kind.rawValue))
        default:
            return (value, [])
        }
    }
}

/// One body's strings repeat (keys, breadcrumbs shared by records): each is scanned once.
final class MemoScanner {
    let scanner: LeakScanner

    /// What a key (an object member's name) is, looked up once per distinct key: whether the name
    /// alone has a finding, whether its value is a machine fact or a correlation id, and whether it
    /// may be a label ("password") that a value is read after.
    struct KeyFacts {
        let found: Bool
        let machine: Bool
        let correlation: Bool
        let mayBeLabel: Bool
    }
    private var keys: [String: KeyFacts] = [:]

    /// A text found clean: read alone, or as a value under a key. Under a key that may be a label
    /// the key is read with it ("password=…"); under any other key the reading does not depend on
    /// the key, so one entry serves every such key.
    /// Its hash is made once: a text the memo has not seen is looked up, then inserted, and
    /// hashing the text twice was most of the memo's cost.
    private struct Read: Hashable {
        let keyed: Bool
        let label: String?
        let text: String
        let hash: Int

        init(keyed: Bool, label: String?, text: String) {
            (self.keyed, self.label, self.text) = (keyed, label, text)
            var hasher = Hasher()
            hasher.combine(keyed)
            hasher.combine(label)
            hasher.combine(text)
            hash = hasher.finalize()
        }

        static func == (a: Read, b: Read) -> Bool { a.hash == b.hash && a.keyed == b.keyed && a.label == b.label && a.text == b.text }
        func hash(into hasher: inout Hasher) { hasher.combine(hash) }
    }

    /// Texts longer than this are scanned without the memo: a body holds such a text once (an
    /// API body), and hashing it would only add to its scan.
    static let longestRemembered = 4096
    private var clean: Set<Read> = []

    /// `expectedTexts`: about how many distinct texts the body has (a payload's keys and
    /// breadcrumbs), so that the memo is not rehashed as it fills.
    init(_ scanner: LeakScanner, expectedTexts: Int = 0) {
        self.scanner = scanner
        clean.reserveCapacity(min(max(expectedTexts, 16), 8192))
    }

    func facts(_ key: String) -> KeyFacts {
        if let known = keys[key] { return known }
        let facts = scanner.gated ? Self.shared.facts(key, scanner) : Self.facts(key, scanner)
        if keys.count < 10_000 { keys[key] = facts }
        return facts
    }

    private static func facts(_ key: String, _ scanner: LeakScanner) -> KeyFacts {
        KeyFacts(found: !scanner.findings(in: key).isEmpty,
                 machine: OutgoingCheck.machineKeys.contains(key.lowercased()),
                 correlation: OutgoingCheck.correlationKeys.contains(OutgoingCheck.fold(key)),
                 mayBeLabel: LeakScanner.mayBeLabel(key))
    }

    /// A key's facts depend on the key alone, and a process sends the same few keys in every
    /// body: short ASCII keys are remembered for the process (at most 1024), as
    /// `PayloadRedaction.facts(ofKey:)` does and for the same reason (only ASCII: String equality
    /// is canonical equivalence, and the facts are read from scalars). Each check used to
    /// look its keys up again: `mayBeLabel` folds through Foundation, ~40,000 instructions a key.
    /// Guarded by an NSLock for the reason `MaskedCounts` gives.
    private final class SharedKeyFacts: @unchecked Sendable {
        private let lock = NSLock()
        private var facts: [String: KeyFacts] = [:]

        func facts(_ key: String, _ scanner: LeakScanner) -> KeyFacts {
            let remembered = key.utf8.count <= 64 && OutgoingCheck.isASCII(key)
            if remembered, let known = lock.withLock({ facts[key] }) { return known }
            let found = MemoScanner.facts(key, scanner)
            if remembered { lock.withLock { if facts.count < 1024 { facts[key] = found } } }
            return found
        }
    }
    private static let shared = SharedKeyFacts()

    /// The last names read from a body's bytes, by a hash of the bytes: one slot each, so a
    /// body of many distinct names (or names made to collide) costs one look-up and a
    /// `String` each, as before, and never more (an attacker's keys get bounded work).
    private struct RecentName {
        let bytes: [UInt8]
        let name: String
        let facts: KeyFacts
    }
    private var recentNames = [RecentName?](repeating: nil, count: 64)

    /// A member's name given as its bytes (ASCII, no escape, as `JSONBytes.plainName` reads
    /// it): the name and its facts, without making the name again when it was read lately.
    func name(_ bytes: UnsafeBufferPointer<UInt8>) -> (name: String, facts: KeyFacts) {
        let slot = Self.slot(bytes)
        if let recent = recentNames[slot], recent.bytes.count == bytes.count,
           bytes.isEmpty || recent.bytes.withUnsafeBufferPointer({ memcmp($0.baseAddress!, bytes.baseAddress!, bytes.count) == 0 }) {
            return (recent.name, recent.facts)
        }
        let name = String(decoding: bytes, as: UTF8.self)
        let facts = facts(name)
        recentNames[slot] = RecentName(bytes: Array(bytes), name: name, facts: facts)
        return (name, facts)
    }

    /// Which of the 64 slots: the length and the first, middle and last bytes mixed (cheap, not a
    /// defence: collisions only cost the look-up `name` would have made anyway).
    @inline(__always) private static func slot(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
        guard let first = bytes.first, let last = bytes.last else { return 0 }
        let mixed = (UInt32(bytes.count) &* 0x9E37_79B1) ^ (UInt32(first) &* 0x85EB_CA6B) ^ (UInt32(last) &* 0xC2B2_AE35)
            ^ (UInt32(bytes[bytes.count / 2]) &* 0x27D4_EB2F)
        return Int(mixed >> 26)
    }

    func isCorrelationKey(_ key: String) -> Bool { facts(key).correlation }

    func findings(in text: String, key: String?) -> [LeakScanner.Finding] {
        guard let key else { return memo(Read(keyed: false, label: nil, text: text), text: text) { $0.findings(in: text) } }
        return findings(in: text, key: key, facts: facts(key))
    }

    func findings(in text: String, key: String, facts: KeyFacts) -> [LeakScanner.Finding] {
        memo(Read(keyed: true, label: facts.mayBeLabel ? key : nil, text: text), text: text) {
            $0.findings(in: text, key: key, keyMayBeLabel: facts.mayBeLabel)
        }
    }

    private func memo(_ read: @autoclosure () -> Read, text: String, _ scan: (LeakScanner) -> [LeakScanner.Finding]) -> [LeakScanner.Finding] {
        guard text.utf8.count <= Self.longestRemembered else { return scan(scanner) }
        let read = read()
        if clean.contains(read) { return [] }
        let found = scan(scanner)
        if found.isEmpty, clean.count < 100_000 { clean.insert(read) }
        return found
    }
}
