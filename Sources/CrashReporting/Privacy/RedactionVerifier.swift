// Looks for personal data that redaction should have removed but did not: a check to run on a payload
// before upload, and the oracle of the redaction tests. It knows the redactor's output forms, and the
// machine text of crash reports (addresses, build ids, symbols, timestamps), and flags neither.
import Foundation

public struct RedactionVerifier: Sendable {
    public struct Finding: Sendable, Hashable, CustomStringConvertible {
        /// The check that fired (the redactor's rule names: "email", "card", "phone", …).
        public let rule: String
        /// A few characters around the finding, with the finding itself (and any other) masked.
        public let excerpt: String
        /// Where in a JSON document, as in `logs[3].message`; nil for plain text.
        public let path: String?

        public var description: String { "\(rule)\(path.map { " at \($0)" } ?? ""): \(excerpt)" }
    }

    /// A check's expression is compiled the first time a text passes its hint, as the redactor's
    /// rules are: compiling all 45 at a process's first check cost ~50 ms of CPU, most of the
    /// launch's first upload pass in a Hummingbird server (perf, 15 launches).
    /// Guarded by an NSLock for the reason `Redactor.Compiled` gives.
    private final class Check: @unchecked Sendable {
        let name: String
        let pattern: String
        /// Whether a match really is unredacted data; gets the groups and the text just after the match.
        let accept: (@Sendable (_ groups: [String?], _ following: String) -> Bool)?
        /// The seed rule's hint, when this check's pattern is that rule's own (same name, same
        /// pattern): what the pattern cannot match without holds for the check as for the rule.
        let gate: Redactor.Gate?
        private let lock = NSLock()
        private var stored: NSRegularExpression?
        private var refused = false

        init(name: String, pattern: String, accept: (@Sendable ([String?], String) -> Bool)?, gate: Redactor.Gate?) {
            (self.name, self.pattern, self.accept, self.gate) = (name, pattern, accept, gate)
        }

        var isCompiled: Bool { lock.withLock { stored != nil } }

        /// Nil only for a pattern that does not compile (RedactionTests compile every default one).
        var expression: NSRegularExpression? {
            lock.withLock {
                if stored == nil && !refused {
                    stored = try? NSRegularExpression(pattern: pattern, options: [.caseInsensitive])
                    refused = stored == nil
                }
                return stored
            }
        }
    }

    /// The known-names check, if any; the default checks are compiled once per process, at the
    /// first check made (a pass that only redacts a beacon's user id compiles none of them).
    private let extraChecks: [Check]
    /// The names given to `init` (the crash-sender rebuilds the same verifier from them).
    let knownNames: [String]
    /// Off: every check runs on every text (tests: the hints change no finding).
    let usesHints: Bool

    /// `knownNames`: the names the redactor was given (`Redactor.knownNames`), flagged wherever they appear.
    public init(knownNames: [String] = []) {
        self.init(knownNames: knownNames, usesHints: true)
    }

    init(knownNames: [String], usesHints: Bool) {
        self.knownNames = knownNames
        self.usesHints = usesHints
        // Compiled now: a name list that makes no expression is dropped here, as before.
        extraChecks = PIIPatterns.knownNames(knownNames).map { Self.compile([("known-names", $0, nil)]) }?.filter { $0.expression != nil } ?? []
    }

    public func findings(in text: String) -> [Finding] {
        findings(in: text, path: nil)
    }

    /// Every string value of a JSON document, except under the keys in `skippingKeys` (machine fields
    /// such as `build_id` or `address`), at any depth. Data that is not JSON is checked as text.
    public func findings(inJSON data: Data, skippingKeys: Set<String>) -> [Finding] {
        guard let root = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]) else {
            return findings(in: String(decoding: data, as: UTF8.self), path: nil)
        }
        var found: [Finding] = []
        walk(root, path: "", key: nil, skipping: skippingKeys, into: &found)
        return found
    }

    private func walk(_ value: Any, path: String, key: String?, skipping: Set<String>, into found: inout [Finding]) {
        switch value {
        case let object as [String: Any]:
            for (childKey, child) in object.sorted(by: { $0.key < $1.key }) where !skipping.contains(childKey) {
                walk(child, path: path.isEmpty ? childKey : "\(path).\(childKey)", key: childKey, skipping: skipping, into: &found)
            }
        case let array as [Any]:
            for (index, child) in array.enumerated() {
                walk(child, path: "\(path)[\(index)]", key: key, skipping: skipping, into: &found)
            }
        case let string as String:
            found += findings(in: string, path: path.isEmpty ? "$" : path)
        case let number as NSNumber:
            // A coordinate stored as a number: {"lat": 37.7749}.
            if let key, key.range(of: #"^(?:lat(?:itude)?|lng|lon(?:g|gitude)?)$"#, options: [.regularExpression, .caseInsensitive]) != nil,
               number.doubleValue.rounded() != number.doubleValue {   // decimals: not a flag or a count
                found.append(Finding(rule: "gps-labelled", excerpt: "\(key): ‹gps-labelled›", path: path))
            }
        default:
            break
        }
    }

    /// The findings, and whether any check's hint let it read the text (false: no check ran).
    /// `known`: the facts the redactor read from this very text (`Redactor.Redacted.unchangedFacts`),
    /// not read again.
    func findingsNoting(in text: String, known: Redactor.TextFacts? = nil) -> (findings: [Finding], admitted: Bool) {
        var admitted = false
        let found = findings(in: text, path: nil, admitted: &admitted, known: known)
        return (found, admitted)
    }

    private func findings(in text: String, path: String?) -> [Finding] {
        var admitted = false
        return findings(in: text, path: path, admitted: &admitted)
    }

    private func findings(in text: String, path: String?, admitted anyAdmitted: inout Bool, known: Redactor.TextFacts? = nil) -> [Finding] {
        guard !text.isEmpty else { return [] }
        // ASCII text is read once for the seed hints (Decision 0038); other text meets every check,
        // composed as the redactor reads it. Facts the redactor read are used only for a text of
        // as many bytes: a memo keyed by String finds an ASCII text's entry for its canonical
        // twins too ("\u{212A}" is "K"), and a twin that is not ASCII is longer in UTF-8.
        let facts = usesHints ? (known.flatMap { $0.length == text.utf8.count ? $0 : nil } ?? Redactor.TextFacts(text)) : nil
        let text = facts == nil ? Redactor.composed(text) : text
        // The default checks whose hint lets the text through, then the known-names one. Hints are
        // read from their own array of plain values: a check is copied (its expression and
        // closure retained) only when it runs.
        let gates = Self.defaultGates
        var admitted: [Int] = []
        for index in gates.indices {
            if let gate = gates[index], let facts, !facts.admits(gate) { continue }
            admitted.append(index)
        }
        guard !admitted.isEmpty || !extraChecks.isEmpty else { return [] }
        anyAdmitted = true
        let ns = text as NSString
        let length = ns.length
        var hits: [(rule: String, range: NSRange)] = []
        for check in admitted.map({ Self.defaultChecks[$0] }) + extraChecks {
            guard let expression = check.expression else { continue }
            for match in expression.matches(in: text, options: [], range: NSRange(location: 0, length: length)) {
                if let accept = check.accept {
                    let groups = (0..<match.numberOfRanges).map { index -> String? in
                        let range = match.range(at: index)
                        return range.location == NSNotFound ? nil : ns.substring(with: range)
                    }
                    let end = NSMaxRange(match.range)
                    let following = ns.substring(with: NSRange(location: end, length: min(3, ns.length - end)))
                    guard accept(groups, following) else { continue }
                }
                hits.append((check.name, match.range))
            }
        }
        // Sorted once; an excerpt looks only at the hits near its own (payloads can hold thousands).
        let sorted = hits.sorted { $0.range.location < $1.range.location }
        let longest = sorted.map(\.range.length).max() ?? 0
        return sorted.indices.map { index in
            Finding(rule: sorted[index].rule, excerpt: Self.excerpt(ns, around: index, of: sorted, longest: longest), path: path)
        }
    }

    /// Up to 16 characters either side, every finding replaced by ‹rule› so that no raw value is quoted.
    private static func excerpt(_ text: NSString, around index: Int, of hits: [(rule: String, range: NSRange)], longest: Int) -> String {
        let range = hits[index].range
        let start = text.rangeOfComposedCharacterSequence(at: max(0, range.location - 16)).location
        let endIndex = min(text.length, NSMaxRange(range) + 16)
        let end = endIndex == text.length ? endIndex : NSMaxRange(text.rangeOfComposedCharacterSequence(at: endIndex - 1))
        // Hits are sorted by start; one that starts before the excerpt can reach into it by at most `longest`.
        var first = index
        while first > 0, hits[first - 1].range.location >= start - longest { first -= 1 }
        var out = start > 0 ? "…" : ""
        var cursor = start
        for hit in hits[first...].prefix(while: { $0.range.location < end })
        where NSMaxRange(hit.range) > start && NSMaxRange(hit.range) > cursor {
            if hit.range.location > cursor {
                out += text.substring(with: NSRange(location: cursor, length: hit.range.location - cursor))
            }
            out += "‹\(hit.rule)›"
            cursor = NSMaxRange(hit.range)
        }
        if cursor < end { out += text.substring(with: NSRange(location: cursor, length: end - cursor)) }
        if end < text.length { out += "…" }
        return out.replacingOccurrences(of: "\n", with: " ")
    }

    // MARK: checks

    private typealias P = PIIPatterns

    /// The redactor's masked forms: "[REDACTED]", "[TOKEN:abcd...]", "***", "<redacted>".
    private static func isMasked(_ value: String) -> Bool {
        (value.hasPrefix("[") && value.hasSuffix("]")) || (value.hasPrefix("<") && value.hasSuffix(">"))
            || (!value.isEmpty && value.allSatisfy { $0 == "*" || $0 == "x" || $0 == "X" })
    }

    private static func labelledValue(_ groups: [String?]) -> String {
        (groups.count > 5 ? groups[3] ?? groups[4] ?? groups[5] : nil) ?? ""
    }

    /// A labelled value that is neither one of the redactor's forms nor a truncation ("abcd…" + "...").
    private static let unredactedValue: @Sendable ([String?], String) -> Bool = { groups, following in
        let value = labelledValue(groups)
        // A 12-hex value is the session-id rule's hash, which "session_token" also labels.
        return !isMasked(value) && !P.isSessionHash(value) && !following.hasPrefix("...")
    }

    private static func compile(_ list: [(String, String, (@Sendable ([String?], String) -> Bool)?)]) -> [Check] {
        list.map { name, pattern, accept in
            let seedRule = Redactor.seed000RuleList.first { $0.name == name }
            var gate = seedRule?.pattern == pattern ? Redactor.seedHints[name]?.gate
                : ownHintWords[pattern].map { Redactor.Hint($0).resolved(in: Redactor.hintWords).gate }
            // Its acceptance refuses hex: a text whose long runs are all hex cannot be flagged.
            if name == "long-token", pattern == P.longToken { gate?.shape = .alphanumericRunNotHex(32) }
            return Check(name: name, pattern: pattern, accept: accept, gate: gate)
        }
    }

    /// How many default checks have a hint, and how many there are (tests).
    static var hintedCheckCount: Int { defaultChecks.count(where: { $0.gate != nil }) }
    static var defaultCheckCount: Int { defaultChecks.count }
    /// The default checks, made anew (tests: none is compiled before a text needs it; every one compiles).
    static func freshDefaultChecks() -> (compiled: () -> Int, compileAll: () -> [String]) {
        let checks = makeDefaultChecks()
        return ({ checks.count(where: \.isCompiled) }, { checks.filter { $0.expression == nil }.map(\.name) })
    }
    /// The default checks' hints, by position (compiling the checks on first use).
    private static let defaultGates: [Redactor.Gate?] = defaultChecks.map(\.gate)

    /// The checks whose pattern is the verifier's own, and the word each cannot match without
    /// (the patterns are case-insensitive; `Redactor.hintWords` holds these words too).
    static let bearerPattern = #"\bBearer\s+[\w~+/-][\w.~+/=-]{7,}"#
    static let basicPattern = #"\bBasic\s+[A-Za-z0-9+/]{8,}={0,2}"#
    static let ownHintWords: [String: [String]] = [bearerPattern: ["bearer"], basicPattern: ["basic"]]

    private static let defaultChecks: [Check] = makeDefaultChecks()

    private static func makeDefaultChecks() -> [Check] { compile([
        ("email", P.email, nil),
        ("url-credentials", P.urlCredentials, { groups, _ in groups[3] != "[REDACTED]" }),
        ("password", P.labelledPattern(labels: P.passwordLabels, value: P.passwordValue, quoted: P.anyQuoted, after: P.keywordStart),
         unredactedValue),
        ("bearer", bearerPattern, nil),
        ("authorization", basicPattern, nil),
        ("jwt", P.jwt, nil),
        ("api-key", P.apiKeyPrefixes, nil),
        ("token", P.labelledPattern(labels: P.tokenLabels, value: P.tokenValue, after: P.keywordStart), unredactedValue),
        // Pure hex is left out: build ids, commits and digests are hex, and are not secrets.
        ("long-token", P.longToken, { groups, _ in !(groups[0] ?? "").allSatisfy(\.isHexDigit) }),
        ("fcm-token", P.fcm, nil),
        ("fcm-token-labelled", P.labelledPattern(labels: P.fcmLabels, value: P.fcmLabelledValue), unredactedValue),
        ("session-id", P.labelledPattern(labels: P.sessionLabels, value: P.sessionValue, loose: true), unredactedValue),
        ("device-id", P.labelledPattern(labels: P.deviceLabels, value: P.deviceValue, loose: true), unredactedValue),
        ("udid", P.newUDID, nil),
        ("mac-address", P.macAddress, nil),

        ("card", P.card, { groups, _ in P.isCardNumber(groups[0] ?? "") }),
        ("iban", P.iban, { groups, _ in P.redactIBAN(groups[0] ?? "") != nil }),
        ("card-labelled", P.labelledPattern(labels: P.cardLabels, value: P.cardLabelledValue, loose: true), nil),
        ("cvv", P.labelledPattern(labels: P.cvvLabels, value: P.cvvValue, loose: true), nil),
        ("card-expiry", P.labelledPattern(labels: P.expiryLabels, value: P.expiryValue, loose: true), nil),
        ("bank-account", P.labelledPattern(labels: P.bankLabels, value: P.bankValue, loose: true), nil),
        ("iban-labelled", P.labelledPattern(labels: P.ibanLabels, value: P.ibanLabelledValue, loose: true), nil),

        ("gps-pair", P.gpsPair, { groups, _ in P.isCoordinatePair(groups[1] ?? "", groups[2] ?? "") }),
        ("gps-hemisphere", P.gpsHemisphere, nil),
        ("gps-labelled", P.labelledPattern(labels: P.gpsLabels, value: P.gpsLabelledValue), nil),

        ("invoice", P.invoice, nil),
        ("invoice-id", P.labelledPattern(labels: P.invoiceLabels, value: P.invoiceIDValue, loose: true), unredactedValue),

        ("ipv6", P.ipv6Candidate, { groups, _ in P.ipv6Groups(groups[0] ?? "") != nil }),
        // What redaction keeps is no finding: before, any breadcrumb naming 127.0.0.1 had the record refused.
        ("ipv4", P.ipv4, { groups, _ in !P.isKeptIPv4(firstOctet: groups[1], address: groups[0] ?? "") }),

        ("phone-labelled", P.labelledPattern(labels: P.phoneLabels, value: P.phoneLabelledValue, loose: true),
         { groups, _ in P.maskPhone(labelledValue(groups)) != nil }),
        ("phone", P.phoneNANP, nil),
        ("phone-international", P.phoneInternational, { groups, _ in P.maskPhone(groups[0] ?? "") != nil }),

        ("child-name", P.labelledPattern(labels: P.childLabels, value: P.personNames, quoted: P.quotedName), nil),
        ("child-name-field", P.labelledPattern(labels: P.named(P.childLabels), value: P.nameFieldValue), unredactedValue),
        ("parent-name", P.labelledPattern(labels: P.parentLabels, value: P.personNames, quoted: P.quotedName), nil),
        ("parent-name-field", P.labelledPattern(labels: P.named(P.parentLabels), value: P.nameFieldValue), unredactedValue),
        ("teacher-name", P.labelledPattern(labels: P.teacherLabels, value: P.personNames, quoted: P.quotedName), nil),
        ("teacher-name-field", P.labelledPattern(labels: P.named(P.teacherLabels), value: P.nameFieldValue), unredactedValue),
        ("honorific-name", P.honorificName, nil),

        ("room-labelled", P.labelledPattern(labels: P.roomLabels, value: P.roomValue), nil),
        ("room", P.room, nil),
    ]) }
}
