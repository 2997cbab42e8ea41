// The last look at what leaves the process, built to miss different things than the redactor does:
// no regular expressions and none of the redactor's patterns or labels. It reads text the way a
// leak checker does: Unicode-normalised (full-width and other-script digits, no-break spaces,
// full-width "＠"), by shape (check digits over any separator, provider key formats, entropy and
// character classes, JWT headers that decode to JSON) and across neighbouring strings (a JWT or
// a card number split over breadcrumbs). `OutgoingCheck` runs it over every body a destination
// sends and masks what it finds (Decision 0035).
import Foundation

public struct LeakScanner: Sendable {
    public enum Kind: String, Sendable, CaseIterable {
        case card, ssn, email, awsKeyID = "aws-key-id", providerKey = "provider-key", jwt
        case highEntropy = "high-entropy", labelledSecret = "labelled-secret", urlCredentials = "url-credentials"
        case privateKey = "private-key", phone
    }

    public struct Finding: Sendable, Hashable, CustomStringConvertible {
        public let kind: Kind
        /// Where the finding is in the text that was scanned.
        public let range: Range<String.Index>
        public var description: String { kind.rawValue }
    }

    /// False runs every detector on every text, whatever `Needs` says (tests compare the two).
    let gated: Bool

    public init() { gated = true }
    @_spi(Benchmarks) public init(gated: Bool) { self.gated = gated }

    /// What every request body of the built-in destinations goes through before it is sent
    /// (JSON, or one JSON document per line; gzip'd when `gzipped`): the body with what was found
    /// masked, and the kinds found; nil when there was nothing to mask. A `DiagnosticsTransport`
    /// of an app's own should pass its body through it too.
    public static func cleanedBody(_ body: Data, gzipped: Bool) -> (body: Data, kinds: [String])? {
        OutgoingCheck.cleaned(body, gzipped: gzipped)
    }

    /// The same, with the first pass (Decision 0040) on or off: for the benchmark's comparison.
    @_spi(Benchmarks) public static func cleanedBody(_ body: Data, gzipped: Bool, firstPass: Bool) -> (body: Data, kinds: [String])? {
        OutgoingCheck.cleaned(body, gzipped: gzipped, firstPass: firstPass)
    }

    /// Everything in `text` that looks like a secret or personal data, in order, not overlapping.
    public func findings(in text: String) -> [Finding] {
        guard !text.isEmpty else { return [] }
        let view = NormalisedText(text)
        return view.findings(Self.merged(spans(view.scalars)))
    }

    /// A value under its key (a JSON field, a custom key, log metadata): read as "key=value", so
    /// that a label in the key counts, and as a whole, so that a password-shaped value under an
    /// innocent key ("note": "HyqGeflhD&VK9V494s") counts too. Ranges are in `value`.
    public func findings(in value: String, key: String) -> [Finding] {
        findings(in: value, key: key, keyMayBeLabel: Self.mayBeLabel(key))
    }

    @_spi(Benchmarks) public func findings(in value: String, key: String, keyMayBeLabel: Bool) -> [Finding] {
        guard !value.isEmpty else { return [] }
        let view = NormalisedText(value)
        var found: [(Kind, Range<Int>)]
        if keyMayBeLabel {
            let labelled = NormalisedText(key + "=" + value)
            let offset = labelled.scalars.count - view.scalars.count
            found = spans(labelled.scalars).compactMap { kind, range -> (Kind, Range<Int>)? in
                guard range.upperBound > offset else { return nil }
                return (kind, max(0, range.lowerBound - offset)..<(range.upperBound - offset))
            }
        } else {
            found = spans(view.scalars)
        }
        if Self.isSecretShaped(view.scalars) { found.append((.highEntropy, 0..<view.scalars.count)) }
        if let whole = Self.bareSSN(view.scalars) { found.append((.ssn, whole)) }
        return view.findings(Self.merged(found))
    }

    private func spans(_ scalars: [Unicode.Scalar]) -> [(Kind, Range<Int>)] {
        var spans: [(Kind, Range<Int>)] = []
        let needs = Needs(scalars)
        if !gated || needs.mayHaveAWSKeyID { Self.awsKeyIDs(scalars, into: &spans) }
        if !gated || needs.mayHaveCard { Self.cards(scalars, into: &spans) }
        if !gated || needs.mayHaveSSNOrPhone {
            Self.ssns(scalars, into: &spans)
            Self.phones(scalars, into: &spans)
        }
        if !gated || needs.mayHaveURLCredentials { Self.urlCredentials(scalars, into: &spans) }
        if !gated || needs.mayHavePrivateKey { Self.privateKeys(scalars, into: &spans) }
        let tokens = Self.tokens(scalars)
        Self.tokenShapes(scalars, tokens, gated: gated, into: &spans)
        Self.labelled(scalars, tokens, gated: gated, into: &spans)
        Self.obfuscatedEmails(scalars, tokens, into: &spans)
        if let whole = Self.bareSSN(scalars) { spans.append((.ssn, whole)) }
        return spans
    }

    /// What a detector needs before it can find anything, counted in one walk over the text (counts
    /// only, so the walk has no branch): a card has 13 digits, an SSN and a phone number 9; an AWS
    /// key id 20 upper-case letters and digits, two of them "A" (every prefix has two); URL
    /// credentials "://", a second ":" and an "@"; a PEM block ten dashes and a "B"
    /// ("-----BEGIN … PRIVATE KEY-----"). A detector whose need is not met is not run: it would
    /// find nothing (`LeakScannerGateTests` runs both ways; Decision 0050).
    struct Needs {
        var digits = 0, upperCase = 0, capitalA = 0, capitalB = 0, dashes = 0, colons = 0, slashes = 0, ats = 0

        init(_ scalars: [Unicode.Scalar]) {
            var digits = 0, upperCase = 0, capitalA = 0, capitalB = 0, dashes = 0, colons = 0, slashes = 0, ats = 0
            scalars.withUnsafeBufferPointer { s in
                for scalar in s {
                    let value = scalar.value
                    digits &+= value &- 48 < 10 ? 1 : 0
                    upperCase &+= value &- 65 < 26 ? 1 : 0
                    capitalA &+= value == 65 ? 1 : 0
                    capitalB &+= value == 66 ? 1 : 0
                    dashes &+= value == 45 ? 1 : 0
                    colons &+= value == 58 ? 1 : 0
                    slashes &+= value == 47 ? 1 : 0
                    ats &+= value == 64 ? 1 : 0
                }
            }
            (self.digits, self.upperCase, self.capitalA, self.capitalB) = (digits, upperCase, capitalA, capitalB)
            (self.dashes, self.colons, self.slashes, self.ats) = (dashes, colons, slashes, ats)
        }

        var mayHaveAWSKeyID: Bool { digits + upperCase >= 20 && capitalA >= LeakScanner.fewestAsInAWSPrefix }
        var mayHaveCard: Bool { digits >= 13 }
        var mayHaveSSNOrPhone: Bool { digits >= 9 }
        var mayHaveURLCredentials: Bool { colons >= 2 && slashes >= 2 && ats >= 1 }
        var mayHavePrivateKey: Bool { dashes >= 10 && capitalB >= 1 }
    }

    /// Secrets split over neighbouring strings (breadcrumbs, log lines): the last word of each,
    /// joined with the next one or two, read as a JWT or a card number. Returns, per string, the
    /// ranges of the pieces.
    public func findingsAcross(_ texts: [String]) -> [[Finding]] {
        var result = Array(repeating: [Finding](), count: texts.count)
        guard texts.count > 1 else { return result }
        let tails = texts.map(Self.tail(of:))
        for start in texts.indices {
            for count in 2...3 where start + count <= texts.count {
                let members = start..<(start + count)
                guard members.allSatisfy({ tails[$0] != nil }) else { break }
                // A JWT begins "ey" (its header's "{\""); a split card is two runs of 4–12 digits.
                let head = tails[start]!.scalars
                let mayBeJWT = head.first == "e" && head.dropFirst().first == "y"
                let mayBeCard = count == 2 && members.allSatisfy { member in
                    (4...12).contains(tails[member]!.scalars.count) && tails[member]!.scalars.allSatisfy(Self.isDigit)
                }
                guard !gated || mayBeJWT || mayBeCard else { continue }
                let pieces = members.map { tails[$0]!.scalars }
                let joined = pieces.flatMap { $0 }
                let dotted = Array(pieces.map { String(String.UnicodeScalarView($0)) }.joined(separator: ".").unicodeScalars)
                var kind: Kind?
                if Self.isJWT(joined) || Self.isJWT(dotted) {
                    kind = .jwt
                } else if count == 2, pieces.allSatisfy({ (4...12).contains($0.count) && $0.allSatisfy(Self.isDigit) }),
                          Self.isCardNumber(joined.map { Int($0.value) - 48 }) {
                    kind = .card
                }
                guard let kind else { continue }
                for member in members {
                    result[member] += NormalisedText(texts[member]).findings([(kind, tails[member]!.range)])
                }
            }
        }
        return result
    }

    // MARK: digits

    @inline(__always) static func isDigit(_ scalar: Unicode.Scalar) -> Bool { scalar.value >= 48 && scalar.value <= 57 }
    @inline(__always) static func isASCIILetter(_ scalar: Unicode.Scalar) -> Bool { (scalar.value | 0x20) >= 97 && (scalar.value | 0x20) <= 122 }
    @inline(__always) static func isWordScalar(_ scalar: Unicode.Scalar) -> Bool {
        if scalar.value < 128 { return isDigit(scalar) || isASCIILetter(scalar) }
        return isWordScalarBeyondASCII(scalar)
    }
    static func isWordScalarBeyondASCII(_ scalar: Unicode.Scalar) -> Bool {
        scalar.properties.isAlphabetic || scalar.properties.numericType != nil
            || scalar.properties.generalCategory == .nonspacingMark || scalar.properties.generalCategory == .spacingMark
    }

    /// Issuer prefixes of the card networks, and the check digit.
    static func isCardNumber(_ digits: [Int]) -> Bool {
        guard (13...19).contains(digits.count) else { return false }
        let two = digits[0] * 10 + digits[1], three = two * 10 + digits[2], four = three * 10 + digits[3]
        let issuer = digits[0] == 4 || (51...55).contains(two) || (2221...2720).contains(four) || two == 34 || two == 37
            || four == 6011 || two == 65 || (644...649).contains(three)
            || two == 35 || two == 36 || two == 38 || two == 30 || two == 62 || two == 50 || (56...69).contains(two)
        guard issuer else { return false }
        var sum = 0
        for (offset, digit) in digits.reversed().enumerated() {
            let value = offset % 2 == 1 ? digit * 2 : digit
            sum += value > 9 ? value - 9 : value
        }
        return sum % 10 == 0
    }

    @inline(__always) static func isCardSeparator(_ scalar: Unicode.Scalar) -> Bool {
        scalar == " " || scalar == "-" || scalar == "." || scalar == "/" || scalar == "_"
    }

    /// Runs of digits with up to two separators between them (space, dash, dot, slash,
    /// underscore: the normaliser made every space-like character a space); every window of
    /// 13–19 digits that starts and ends at a group boundary is tried.
    private static func cards(_ s: [Unicode.Scalar], into spans: inout [(Kind, Range<Int>)]) {
        s.withUnsafeBufferPointer { cards($0, into: &spans) }
    }

    /// Read through a buffer pointer: no array bounds check at each look (3.97 -> 2.96 M
    /// instructions over 3 rounds of tools/bench-privacy's check; the same for the others below).
    private static func cards(_ s: UnsafeBufferPointer<Unicode.Scalar>, into spans: inout [(Kind, Range<Int>)]) {
        var index = 0
        var groups: [(start: Int, end: Int)] = []
        while index < s.count {
            guard isDigit(s[index]), index == 0 || !isWordScalar(s[index - 1]) else { index += 1; continue }
            groups.removeAll(keepingCapacity: true)
            var cursor = index
            while cursor < s.count, isDigit(s[cursor]) {
                let start = cursor
                while cursor < s.count, isDigit(s[cursor]) { cursor += 1 }
                groups.append((start, cursor))
                var gap = cursor
                while gap < s.count, gap - cursor < 2, isCardSeparator(s[gap]) { gap += 1 }
                guard gap > cursor, gap < s.count, isDigit(s[gap]), groups.count < 24 else { break }
                cursor = gap
            }
            let end = groups.last!.end
            // A card has 13 digits or more: a shorter run ("200", "10.0.3.7") has none.
            let runDigits = groups.reduce(0) { $0 + $1.end - $1.start }
            if runDigits >= 13, end >= s.count || !isWordScalar(s[end]) {
                let digits = groups.map { s[$0.start..<$0.end].map { Int($0.value) - 48 } }
                search: for first in groups.indices {
                    // A card starts the run or follows a space: "0.4221165755827173" is a fraction.
                    if first > 0, s[groups[first].start - 1] != " " { continue }
                    var collected: [Int] = []
                    var dotted = false
                    for last in first..<groups.count {
                        collected += digits[last]
                        if last > first, s[groups[last - 1].end..<groups[last].start].contains(".") { dotted = true }
                        if collected.count > 19 { break }
                        // Dots separate card groups ("4111.1111.1111.1111"), not a number's fraction.
                        if dotted, !(last - first >= 2 && groups[first...last].allSatisfy({ (3...6).contains($0.end - $0.start) })) { continue }
                        if collected.count >= 13, isCardNumber(collected) {
                            spans.append((.card, groups[first].start..<groups[last].end))
                            break search
                        }
                    }
                }
            }
            index = max(end, index + 1)
        }
    }

    /// AWS access key ids: a known four-letter prefix and 16 upper-case letters or digits, wherever
    /// they stand (inside a URL's query, after a slash).
    private static func awsKeyIDs(_ s: [Unicode.Scalar], into spans: inout [(Kind, Range<Int>)]) {
        guard s.count >= 20 else { return }
        let prefixes = awsKeyPrefixes.map { Array($0.unicodeScalars) }
        func isUpperAlnum(_ scalar: Unicode.Scalar) -> Bool { isDigit(scalar) || (scalar.value >= 65 && scalar.value <= 90) }
        var index = 0
        while index + 20 <= s.count {
            // Every prefix begins with "A": most positions end at the first test.
            guard s[index] == "A", index == 0 || !isUpperAlnum(s[index - 1]) && !isASCIILetter(s[index - 1]),
                  prefixes.contains(where: { s[index..<(index + 4)].elementsEqual($0) }),
                  s[(index + 4)..<(index + 20)].allSatisfy(isUpperAlnum),
                  index + 20 == s.count || !(isUpperAlnum(s[index + 20]) || isASCIILetter(s[index + 20])) else { index += 1; continue }
            spans.append((.awsKeyID, index..<(index + 20)))
            index += 20
        }
    }

    /// A whole text that is nothing but ddd dd dddd (a field holding an SSN).
    private static func bareSSN(_ s: [Unicode.Scalar]) -> Range<Int>? {
        var start = 0, end = s.count
        while start < end, s[start] == " " { start += 1 }
        while end > start, s[end - 1] == " " { end -= 1 }
        guard end - start == 11, s[start + 3] == " ", s[start + 6] == " " else { return nil }
        let positions = [0, 1, 2, 4, 5, 7, 8, 9, 10].map { start + $0 }
        guard positions.allSatisfy({ isDigit(s[$0]) }) else { return nil }
        let area = positions.prefix(3).reduce(0) { $0 * 10 + Int(s[$1].value) - 48 }
        return area != 0 && area != 666 && area < 900 ? start..<end : nil
    }

    /// ddd-dd-dddd with the numbers the Social Security Administration issues; with spaces only
    /// after "ssn" or "social security".
    private static func ssns(_ s: [Unicode.Scalar], into spans: inout [(Kind, Range<Int>)]) {
        s.withUnsafeBufferPointer { ssns($0, into: &spans) }
    }

    /// Read through a buffer pointer, as `cards` is.
    private static func ssns(_ s: UnsafeBufferPointer<Unicode.Scalar>, into spans: inout [(Kind, Range<Int>)]) {
        guard s.count >= 11 else { return }
        for start in 0...(s.count - 11) {
            // The digits first: most scalars of a text are none, and spaces are many.
            guard isDigit(s[start]), isDigit(s[start + 2]) else { continue }
            let separator = s[start + 3]
            guard separator == "-" || separator == " ", s[start + 6] == separator else { continue }
            guard start == 0 || !(isWordScalar(s[start - 1]) || s[start - 1] == "-") else { continue }
            let positions = [0, 1, 2, 4, 5, 7, 8, 9, 10].map { start + $0 }
            guard positions.allSatisfy({ isDigit(s[$0]) }) else { continue }
            let end = start + 11
            guard end == s.count || !(isWordScalar(s[end]) || s[end] == "-") else { continue }
            let value = positions.map { Int(s[$0].value) - 48 }
            let area = value[0] * 100 + value[1] * 10 + value[2]
            let group = value[3] * 10 + value[4]
            let serial = value[5...].reduce(0) { $0 * 10 + $1 }
            guard area != 0, area != 666, area < 900, group != 0, serial != 0 else { continue }
            if separator == " " {
                let before = String(String.UnicodeScalarView(s[max(0, start - 24)..<start])).lowercased()
                guard before.contains("ssn") || before.contains("social security") else { continue }
            }
            spans.append((.ssn, start..<end))
        }
    }

    /// "+" (or "00") and a country code, then 8–14 more digits in groups; "(0)" may stand in the middle.
    private static func phones(_ s: [Unicode.Scalar], into spans: inout [(Kind, Range<Int>)]) {
        s.withUnsafeBufferPointer { phones($0, into: &spans) }
    }

    /// Read through a buffer pointer, as `cards` is.
    private static func phones(_ s: UnsafeBufferPointer<Unicode.Scalar>, into spans: inout [(Kind, Range<Int>)]) {
        var index = 0
        while index < s.count {
            let start = index
            var cursor: Int
            if s[index] == "+", index + 1 < s.count, isDigit(s[index + 1]), s[index + 1] != "0" {
                cursor = index + 1
            } else if s[index] == "0", index + 2 < s.count, s[index + 1] == "0", isDigit(s[index + 2]), s[index + 2] != "0" {
                cursor = index + 2
            } else {
                index += 1
                continue
            }
            guard start == 0 || !(isWordScalar(s[start - 1]) || s[start - 1] == "." || s[start - 1] == "-") else { index += 1; continue }
            var digits = 0, groups = 0, end = cursor
            while cursor < s.count, digits <= 15 {
                if isDigit(s[cursor]) {
                    let groupStart = cursor
                    while cursor < s.count, isDigit(s[cursor]) { cursor += 1 }
                    digits += cursor - groupStart
                    groups += 1
                    end = cursor
                    if cursor + 2 < s.count, s[cursor] == " " || s[cursor] == "-" || s[cursor] == ".",
                       isDigit(s[cursor + 1]) || s[cursor + 1] == "(" { cursor += 1; continue }
                    if cursor < s.count, s[cursor] == "(" || s[cursor] == " " { continue }
                    break
                } else if s[cursor] == "(" {
                    var close = cursor + 1
                    while close < s.count, close - cursor <= 4, isDigit(s[close]) { close += 1 }
                    guard close < s.count, s[close] == ")", close > cursor + 1 else { break }
                    digits += s[cursor + 1] == "0" && close == cursor + 2 ? 0 : close - cursor - 1
                    cursor = close + 1
                    if cursor < s.count, s[cursor] == " " || s[cursor] == "-" { cursor += 1 }
                } else if s[cursor] == " " {
                    cursor += 1
                } else {
                    break
                }
            }
            // "00" and a number with no space or dash in it is as often a zero-padded id ("00123456789").
            let grouped = s[index] == "+" || groups >= 2
            if (9...15).contains(digits), grouped, end == s.count || !isWordScalar(s[end]) {
                spans.append((.phone, start..<end))
                index = end
            } else {
                // Nothing inside the run can start a number (each position follows a digit or a space
                // within it): go on after it, so a long run is read once.
                index = max(index + 1, end)
            }
        }
    }

    // MARK: URLs and key blocks

    /// scheme://user:password@host — the password, and the user when it is an email.
    private static func urlCredentials(_ s: [Unicode.Scalar], into spans: inout [(Kind, Range<Int>)]) {
        var index = 0
        while index + 3 < s.count {
            guard s[index] == ":", s[index + 1] == "/", s[index + 2] == "/" else { index += 1; continue }
            let userStart = index + 3
            var cursor = userStart, colon: Int?, at: Int?
            while cursor < s.count, cursor - userStart < 512 {
                let scalar = s[cursor]
                if scalar == " " || scalar == "/" || scalar == "\"" || scalar == "\n" || scalar == "?" || scalar == "#" { break }
                if scalar == ":", colon == nil { colon = cursor }
                if scalar == "@" { at = cursor }
                cursor += 1
            }
            if let colon, let at, colon < at, at > colon + 1 {
                spans.append((.urlCredentials, (colon + 1)..<at))
                if s[userStart..<colon].contains("@") || s[userStart..<colon].contains("%") { spans.append((.email, userStart..<colon)) }
            }
            index = max(cursor, index + 3)
        }
    }

    /// The body of a PEM private key, to its END line or to the end of the text.
    private static func privateKeys(_ s: [Unicode.Scalar], into spans: inout [(Kind, Range<Int>)]) {
        let begin = Array("-----BEGIN ".unicodeScalars)
        let marker = Array("PRIVATE KEY-----".unicodeScalars)
        let endMarker = Array("-----END".unicodeScalars)
        func matches(_ pattern: [Unicode.Scalar], at position: Int) -> Bool {
            position + pattern.count <= s.count && s[position..<(position + pattern.count)].elementsEqual(pattern)
        }
        var index = 0
        while index + begin.count <= s.count {
            guard s[index] == "-", matches(begin, at: index) else { index += 1; continue }
            // "-----BEGIN [RSA |EC |OPENSSH |ENCRYPTED ]PRIVATE KEY-----" on one line.
            var labelEnd = index + begin.count
            while labelEnd < s.count, labelEnd - index < 48, s[labelEnd] != "\n", !matches(marker, at: labelEnd) { labelEnd += 1 }
            guard matches(marker, at: labelEnd) else { index += begin.count; continue }
            let bodyStart = labelEnd + marker.count
            var end = bodyStart
            while end < s.count, !matches(endMarker, at: end) { end += 1 }
            if end > bodyStart { spans.append((.privateKey, bodyStart..<end)) }
            // On after the END line's marker, so that its "PRIVATE KEY-----" starts nothing.
            index = end + endMarker.count
        }
    }

    // MARK: words

    struct Token { var range: Range<Int> }

    /// Words: split at space, quotes, brackets and the characters that separate a label from its
    /// value ("=", ":", "&", ",", ";"); "/", "+", ".", "-", "_", "@", "%" stay inside.
    static func isSeparator(_ scalar: Unicode.Scalar) -> Bool {
        let value = scalar.value
        if value < 64 { return asciiSeparatorsLow & (1 << UInt64(value)) != 0 }
        if value < 128 { return asciiSeparatorsHigh & (1 << UInt64(value - 64)) != 0 }
        return scalar.properties.isWhitespace
    }

    /// The ASCII separators, a bit each: " \t\n\r\"'`=:&,;()[]{}<>|\\?#!*" (scalars 0–63, then 64–127;
    /// `LeakScannerGateTests.separators` checks the bits against that list).
    static let asciiSeparatorsLow: UInt64 = 0xFC00_17CF_0000_2600
    static let asciiSeparatorsHigh: UInt64 = 0x3800_0001_3800_0000

    static func tokens(_ s: [Unicode.Scalar]) -> [Token] {
        s.withUnsafeBufferPointer { tokens($0) }
    }

    private static func tokens(_ s: UnsafeBufferPointer<Unicode.Scalar>) -> [Token] {
        var tokens: [Token] = []
        tokens.reserveCapacity(s.count / 6)
        var index = 0
        while index < s.count {
            guard !isSeparator(s[index]) else { index += 1; continue }
            let start = index
            while index < s.count, !isSeparator(s[index]) { index += 1 }
            var end = index
            while end > start, s[end - 1] == "." || s[end - 1] == "," || s[end - 1] == "-" { end -= 1 }   // sentence punctuation
            if end > start { tokens.append(Token(range: start..<end)) }
        }
        return tokens
    }

    /// A text's last word as the scanner reads it (`lastWord` of `NormalisedText(text).scalars`)
    /// and that word's scalars. Plain ASCII (no byte the normaliser decodes: none from 0x80, no
    /// "%", no "&") is its own scalars, and is read from its bytes without normalising the whole
    /// text (the split-secret check reads the last word of every breadcrumb).
    static func tail(of text: String) -> (range: Range<Int>, scalars: [Unicode.Scalar])? {
        enum Plain { case not, word((range: Range<Int>, scalars: [Unicode.Scalar])?) }
        let plain: Plain? = text.utf8.withContiguousStorageIfAvailable { bytes in
            guard NormalisedText.isPlain(bytes) else { return .not }
            let scalars = bytes.lazy.map { Unicode.Scalar($0) }
            return .word(lastWord(scalars).map { ($0, Array(scalars[$0])) })
        }
        if case .word(let word)? = plain { return word }
        let view = NormalisedText(text)
        return lastWord(view.scalars).map { ($0, Array(view.scalars[$0])) }
    }

    /// The last of `tokens(s)`, when it has 4 characters or more; found from the end.
    static func lastWord<Scalars: RandomAccessCollection<Unicode.Scalar>>(_ s: Scalars) -> Range<Int>? where Scalars.Index == Int {
        var end = s.count
        while end > 0 {
            while end > 0, isSeparator(s[end - 1]) { end -= 1 }
            var start = end
            while start > 0, !isSeparator(s[start - 1]) { start -= 1 }
            var trimmed = end
            while trimmed > start, s[trimmed - 1] == "." || s[trimmed - 1] == "," || s[trimmed - 1] == "-" { trimmed -= 1 }
            if trimmed > start { return trimmed - start >= 4 ? start..<trimmed : nil }
            end = start   // a run of sentence punctuation alone is no word: the one before it
        }
        return nil
    }

    /// Provider key formats: prefix, shortest rest, and what the rest is made of.
    static let providerPrefixes: [(prefix: String, minRest: Int, charset: Charset)] = [
        ("sk-proj-", 20, .urlSafe), ("sk-ant-", 20, .urlSafe), ("sk-svcacct-", 20, .urlSafe), ("sk-", 32, .urlSafe),
        ("sk_live_", 16, .alnum), ("sk_test_", 16, .alnum), ("rk_live_", 16, .alnum), ("rk_test_", 16, .alnum),
        ("pk_live_", 16, .alnum), ("whsec_", 20, .alnum),
        ("ghp_", 30, .alnum), ("gho_", 30, .alnum), ("ghu_", 30, .alnum), ("ghs_", 30, .alnum), ("ghr_", 30, .alnum),
        ("github_pat_", 40, .urlSafe), ("glpat-", 20, .urlSafe), ("glptt-", 20, .urlSafe),
        ("xoxb-", 20, .urlSafe), ("xoxp-", 20, .urlSafe), ("xoxa-", 20, .urlSafe), ("xoxr-", 20, .urlSafe), ("xoxs-", 20, .urlSafe),
        ("AIza", 35, .urlSafe), ("ya29.", 20, .urlSafe), ("hf_", 30, .alnum), ("npm_", 36, .alnum), ("pypi-", 40, .urlSafe),
        ("SG.", 40, .urlSafe), ("shpat_", 32, .alnum), ("shpss_", 32, .alnum), ("dop_v1_", 64, .alnum),
        ("glc_", 30, .urlSafe), ("AccountKey=", 40, .base64),
    ]
    /// Each begins with "A" (`awsKeyIDs` tests that letter first).
    static let awsKeyPrefixes = ["AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "AIPA", "ABIA", "ACCA"]
    /// The fewest "A"s a prefix has (2): `Needs` asks for as many.
    static let fewestAsInAWSPrefix = awsKeyPrefixes.map { $0.filter { $0 == "A" }.count }.min() ?? 0

    enum Charset {
        case alnum, urlSafe, base64
        func contains(_ scalar: Unicode.Scalar) -> Bool {
            if LeakScanner.isDigit(scalar) || LeakScanner.isASCIILetter(scalar) { return true }
            switch self {
            case .alnum: return false
            case .urlSafe: return scalar == "-" || scalar == "_" || scalar == "."
            case .base64: return scalar == "+" || scalar == "/" || scalar == "="
            }
        }
    }

    private static func tokenShapes(_ s: [Unicode.Scalar], _ tokens: [Token], gated: Bool, into spans: inout [(Kind, Range<Int>)]) {
        for token in tokens where token.range.count >= 5 {   // shape(of:) needs 5 or more
            if gated, token.range.count < shortestLongShape, !mayHaveShortShape(s[token.range]) { continue }
            let word = Array(s[token.range])
            if let kind = shape(of: word) { spans.append((kind, token.range)) }
        }
    }

    static let providerPrefixScalars = providerPrefixes.map { (Array($0.prefix.unicodeScalars), $0.minRest, $0.charset) }
    /// The fewest characters `shape(of:)` reads as a JWT or a piece of one.
    static let shortestJWT = 10
    /// The fewest characters `isHighEntropy` reads.
    static let shortestHighEntropy = 20
    /// The fewest characters a high-entropy word or a provider key (its prefix and shortest rest:
    /// 24 today) has.
    static let shortestLongShape = min(shortestHighEntropy, providerPrefixes.map { $0.prefix.unicodeScalars.count + $0.minRest }.min() ?? 0)

    /// Whether `shape(of:)` can find anything in a word shorter than `shortestLongShape`: an email
    /// has "@" (`shape(of:)` asks for one before `isEmail`), a JWT or a piece of one begins with
    /// "e" (its header's "{") and has `shortestJWT` characters or more.
    static func mayHaveShortShape(_ word: ArraySlice<Unicode.Scalar>) -> Bool {
        if word.count >= shortestJWT, word.first == "e" { return true }
        return word.contains("@")
    }

    static func shape(of word: [Unicode.Scalar]) -> Kind? {
        if word.count >= 5, word.contains("@"), isEmail(word) { return .email }   // "jo@x.io" is short
        guard word.count >= 8 else { return nil }
        for (prefix, minRest, charset) in providerPrefixScalars where word.count >= prefix.count + minRest && word.starts(with: prefix) {
            if word.dropFirst(prefix.count).allSatisfy(charset.contains) { return .providerKey }
        }
        if word.count >= shortestJWT, word.contains("."), isJWT(word) { return .jwt }
        if word.count >= shortestJWT, word[0] == "e", word.contains("y"), isJWTPiece(word) { return .jwt }
        for part in word.split(separator: ".") {
            if isHighEntropy(Array(part)) { return .highEntropy }
            // A token in a URL path ("/share/<token>"): each segment on its own.
            if part.contains("/"), part.split(separator: "/").contains(where: { isHighEntropy(Array($0)) }) { return .highEntropy }
        }
        return nil
    }

    /// A JWT: three base64url parts, the first a JSON object.
    static func isJWT(_ word: [Unicode.Scalar]) -> Bool {
        let parts = word.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts.allSatisfy({ $0.count >= 4 && $0.allSatisfy(Charset.urlSafe.contains) }) else { return false }
        return decodesToJSON(Array(parts[0]))
    }

    /// A piece of one: a base64url run that decodes to the start of a JSON object.
    static func isJWTPiece(_ word: [Unicode.Scalar]) -> Bool {
        word.split(separator: ".").contains { part in
            part.count >= 10 && part.allSatisfy(Charset.urlSafe.contains) && decodesToJSON(Array(part))
        }
    }

    static func decodesToJSON(_ part: [Unicode.Scalar]) -> Bool {
        guard part.count >= 4, part[0] == "e", part[1] == "y" else { return false }
        var bits = 0, count = 0
        var bytes: [UInt8] = []
        for scalar in part.prefix(12) {
            let value: Int
            switch scalar {
            case "A"..."Z": value = Int(scalar.value) - 65
            case "a"..."z": value = Int(scalar.value) - 71
            case "0"..."9": value = Int(scalar.value) + 4
            case "-", "+": value = 62
            case "_", "/": value = 63
            default: return false
            }
            bits = (bits << 6) | value
            count += 6
            if count >= 8 {
                count -= 8
                bytes.append(UInt8((bits >> count) & 0xFF))
            }
        }
        guard bytes.count >= 2, bytes[0] == UInt8(ascii: "{") else { return false }
        let next = bytes.dropFirst().first { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\n") }
        return next == UInt8(ascii: "\"")
    }

    /// local@domain.tld, any script; "%40" for "@".
    static func isEmail(_ word: [Unicode.Scalar]) -> Bool {
        var text = String(String.UnicodeScalarView(word))
        if text.contains("%40") { text = text.replacingOccurrences(of: "%40", with: "@") }
        // A mailto: or a URL around it: from the last separator-like character.
        guard let at = text.lastIndex(of: "@") else { return false }
        let local = text[..<at].split(separator: "/").last.map(String.init) ?? ""
        let domain = text[text.index(after: at)...]
        guard local.unicodeScalars.contains(where: isWordScalar) else { return false }
        let labels = domain.split(separator: ".", omittingEmptySubsequences: false)
        guard labels.count >= 2, labels.allSatisfy({ !$0.isEmpty && $0.unicodeScalars.allSatisfy { isWordScalar($0) || $0 == "-" } }),
              let tld = labels.last, tld.count >= 2, tld.unicodeScalars.allSatisfy({ !isDigit($0) }) else { return false }
        return true
    }

    /// Random-looking: long, made of a key alphabet, all three of upper case, lower case and
    /// digits, classes changing often, and high Shannon entropy. Hex (build-ids, hashes, ids),
    /// mangled Swift symbols and paths are not.
    static func isHighEntropy(_ word: [Unicode.Scalar]) -> Bool {
        guard word.count >= shortestHighEntropy, word.count <= 4096 else { return false }
        guard word.allSatisfy(Charset.base64.contains) || word.allSatisfy(Charset.urlSafe.contains) else { return false }
        if word.allSatisfy({ isDigit($0) || ("a"..."f").contains($0) || ("A"..."F").contains($0) || $0 == "-" }) { return false }
        if word.starts(with: "$s".unicodeScalars) || word.starts(with: "_$s".unicodeScalars) || word.starts(with: "$S".unicodeScalars)
            || word.starts(with: "_T0".unicodeScalars) { return false }
        if word.contains("/") {
            // A path has words between its slashes: lower case or Capitalised, no digits.
            let segments = word.split(separator: "/")
            if segments.contains(where: { segment in
                segment.count >= 3 && segment.allSatisfy(isASCIILetter) && segment.dropFirst().allSatisfy { $0.value >= 97 }
            }) { return false }
        }
        var upper = 0, lower = 0, digits = 0, changes = 0
        var previous = -1
        // Counted by code point (both charsets are ASCII) and summed in that order. A dictionary's
        // order changes from one instance to the next, and so did the sum's last bits: a word at
        // the threshold was found by one scan of a text and not by the next (CI, 2026-11-28).
        var counts = [Int](repeating: 0, count: 128)
        for scalar in word {
            let kind: Int
            if isDigit(scalar) { digits += 1; kind = 0 } else if scalar.value >= 97 { lower += 1; kind = 1 } else if isASCIILetter(scalar) { upper += 1; kind = 2 } else { kind = 3 }
            if previous >= 0, kind != previous { changes += 1 }
            previous = kind
            counts[Int(scalar.value & 127)] += 1
        }
        guard upper >= 2, lower >= 2, digits >= 1 else { return false }
        guard Double(changes) >= Double(word.count) * 0.3 else { return false }
        let length = Double(word.count)
        var entropy = 0.0
        for count in counts where count > 0 {
            let p = Double(count) / length
            entropy -= p * log2(p)
        }
        return entropy >= min(4.0, log2(length) - 0.7)
    }

    /// A whole value shaped like a generated password or key: one word of 12–128 characters,
    /// upper and lower case and digits, short lower-case runs (random, not camelCase words) and
    /// either a symbol or 16 characters or more.
    static func isSecretShaped(_ value: [Unicode.Scalar]) -> Bool {
        var trimmed = value[...]
        while trimmed.last == "=" { trimmed = trimmed.dropLast() }   // base64 padding is not a symbol
        let word = Array(trimmed)
        guard (12...128).contains(word.count), word.allSatisfy({ $0.value > 32 && $0.value < 127 }) else { return false }
        if isHighEntropy(word) { return true }
        let text = String(String.UnicodeScalarView(word))
        if text.contains("://") || text.hasPrefix("/") || text.hasPrefix("./") || text.hasPrefix("$s") || text.hasPrefix("_$s") { return false }
        var upper = 0, lower = 0, digits = 0, symbols = 0, caseChanges = 0
        var lowerRuns: [Int] = []
        var run = 0
        var lastCase = 0   // 1 lower, 2 upper
        for scalar in word {
            if isDigit(scalar) { digits += 1 } else if isASCIILetter(scalar) {
                let thisCase = scalar.value >= 97 ? 1 : 2
                if thisCase == 1 { lower += 1; run += 1 } else { upper += 1 }
                if lastCase != 0, lastCase != thisCase { caseChanges += 1 }
                lastCase = thisCase
            } else { symbols += 1 }
            if !(isASCIILetter(scalar) && scalar.value >= 97), run > 0 { lowerRuns.append(run); run = 0 }
        }
        if run > 0 { lowerRuns.append(run) }
        // Without a symbol, only `isHighEntropy` (above) decides: type names ("HTTP2ToHTTP1ServerCodec") are alphanumeric too.
        guard upper >= 1, lower >= 1, digits >= 1, symbols > 0, caseChanges >= 3 else { return false }
        let meanRun = Double(lowerRuns.reduce(0, +)) / Double(max(1, lowerRuns.count))
        return meanRun <= 3.0 && (lowerRuns.max() ?? 0) <= 6
    }

    /// "jane at example dot com", "jane[at]example[dot]com", "jane.doe AT example DOT org":
    /// a word, "at", a word, then "dot" and a word at least once. Lower-case "at" needs the
    /// "dot" words (prose says "at example.com"); bracketed or upper-case "at" may stand before a dotted domain.
    private static func obfuscatedEmails(_ s: [Unicode.Scalar], _ tokens: [Token], into spans: inout [(Kind, Range<Int>)]) {
        func word(_ index: Int) -> String { String(String.UnicodeScalarView(s[tokens[index].range])) }
        func bracketed(_ index: Int) -> Bool {
            let range = tokens[index].range
            return range.lowerBound > 0 && ["[", "(", "{", "<"].contains(s[range.lowerBound - 1])
        }
        /// Whether the word at `index` can be an address's local part or a domain label (read from
        /// its scalars: most words are no such thing, and making a `String` of each costs more).
        func isLocal(_ index: Int) -> Bool {
            let text = s[tokens[index].range]
            return text.contains(where: isASCIILetter) && text.allSatisfy { isWordScalar($0) || $0 == "." || $0 == "_" || $0 == "-" || $0 == "+" }
        }
        func isMarker(_ index: Int) -> Bool {
            let range = tokens[index].range
            if range.count == 1 { return s[range.lowerBound] == "@" }
            return range.count == 2 && (s[range.lowerBound].value | 0x20) == 97 && (s[range.lowerBound + 1].value | 0x20) == 116
        }
        var index = 0
        while index + 2 < tokens.count {
            guard isMarker(index + 1) else { index += 1; continue }
            guard isLocal(index), isLocal(index + 2) else { index += 1; continue }
            var last = index + 2
            var dots = 0
            while last + 1 < tokens.count {
                // "dot" as a word, or a "." standing alone between spaces ("example . co.uk").
                let gap = s[tokens[last].range.upperBound..<tokens[last + 1].range.lowerBound]
                // " . " between spaces, not a sentence's end ("failed at startup. Retrying").
                if gap.count >= 3, gap.first == " ", gap.last == " ", gap.filter({ $0 == "." }).count == 1,
                   gap.allSatisfy({ $0 == " " || $0 == "." }), isLocal(last + 1) {
                    last += 1
                    dots += 1
                } else if last + 2 < tokens.count, word(last + 1).lowercased() == "dot", isLocal(last + 2) {
                    last += 2
                    dots += 1
                } else {
                    break
                }
            }
            let marker = word(index + 1)
            let strong = bracketed(index + 1) || marker == "AT" || marker == "@"
            if dots > 0 || (strong && word(index + 2).contains(".")) {
                spans.append((.email, tokens[index].range.lowerBound..<tokens[last].range.upperBound))
                index = last + 1
            } else {
                index += 1
            }
        }
    }

    // MARK: labels

    /// Labels, folded to lower-case letters without accents, in several languages. The value
    /// after one (past ":", "=", quotes, or a space after "--label") is a secret unless it is
    /// already masked or a word that describes a state.
    static let secretLabels: Set<String> = [
        "password", "passwd", "passwort", "passphrase", "pass", "pw", "pwd", "contrasena", "motdepasse", "senha", "parola",
        "wachtwoord", "haslo", "salasana", "losenord", "adgangskode", "secret", "secretkey", "clientsecret", "apisecret",
        "appsecret", "secretaccesskey", "awssecretaccesskey", "apikey", "accesskey", "privatekey", "signingkey",
        "encryptionkey", "masterkey", "token", "accesstoken", "authtoken", "refreshtoken", "idtoken", "sessiontoken",
        "bearertoken", "pin", "pincode", "otp", "totp", "mfacode", "ssn", "socialsecuritynumber", "tin", "itin", "taxid", "cvv", "cvc",
        "credential", "credentials", "xapikey", "authorization", "cookie", "setcookie",
    ]
    static let stateWords: Set<String> = [
        "true", "false", "null", "nil", "none", "empty", "missing", "required", "invalid", "incorrect", "wrong", "expired",
        "set", "unset", "redacted", "hidden", "changed", "updated", "reset", "ok", "yes", "no", "na", "rotated", "revoked",
        "provided", "present", "absent", "mismatch", "error", "failed", "undefined", "bearer", "basic",
    ]

    /// Whether a key ends in a label word ("password", "db_password", "X-Api-Key", "пароль").
    static func mayBeLabel(_ key: String) -> Bool {
        let folded = fold(key.split(whereSeparator: { $0 == "=" || $0 == ":" || $0 == " " }).last ?? "")
        if secretLabels.contains(folded) || bareLabels.contains(folded) { return true }
        return ["password", "passwd", "secret", "apikey", "token", "passphrase", "pin", "otp", "ssn", "code", "tin", "key", "cvv", "cvc"]
            .contains(where: folded.hasSuffix) || secretLabels.contains(where: folded.hasSuffix)
    }

    /// Labels that stand before a secret without ":" or "=" ("passwd Tr0ub4dor#3", "2FA code 300725"),
    /// when the value has a digit or a symbol.
    /// The first letters of `bareLabels` and of the last words of those of several words ("2FA code").
    static let bareLabelStarts: Set<Unicode.Scalar> = {
        var starts = Set(bareLabels.compactMap { $0.unicodeScalars.first }.filter(\.isASCII))
        starts.insert("c")   // "code"
        return starts
    }()

    /// `bareLabelStarts` as two words of bits, one per ASCII scalar (it holds only ASCII): a
    /// look-up at every word before a space, where hashing a scalar into the set cost more than
    /// the rest of the test.
    static let bareLabelStartBits: (low: UInt64, high: UInt64) = bareLabelStarts.reduce((0, 0)) { bits, scalar in
        scalar.value < 64 ? (bits.0 | 1 << UInt64(scalar.value), bits.1) : (bits.0, bits.1 | 1 << UInt64(scalar.value - 64))
    }

    /// Whether an ASCII scalar, lower-cased, is one of `bareLabelStarts`.
    @inline(__always) static func isBareLabelStart(_ value: UInt32, _ bits: (low: UInt64, high: UInt64)) -> Bool {
        let folded = value | 0x20
        return folded < 64 ? bits.low & (1 << UInt64(folded)) != 0 : bits.high & (1 << UInt64(folded & 63)) != 0
    }

    static let bareLabels: Set<String> = [
        "password", "passwd", "passwort", "passphrase", "2facode", "mfacode", "otpcode", "otp", "verificationcode",
        "smscode", "ssn", "пароль", "パスワード", "密码", "密碼", "비밀번호",
    ]

    /// Last words of labels of several words ("mot de passe", "2FA code", "client secret", "API key").
    static let multiWordEnds: Set<String> = ["passe", "code", "number", "secret", "key", "token", "senha", "id"]

    /// The label words a longer key may end with ("db_password", "X-Api-Key", "user.password").
    static let labelEndings = ["password", "passwd", "secret", "apikey", "token", "passphrase"]

    /// Words whose folded form may end a label: the last three letters or digits of every label
    /// and of the label endings `labelled` accepts ("db_password"). A word of three or more ASCII
    /// letters and digits whose own last three are not here is no label's last word; most words of
    /// a JSON body ("sku", "quantity", "price") are passed over without folding them (Decision 0038).
    static let labelTails: Set<UInt32> = {
        var tails: Set<UInt32> = []
        for label in secretLabels.union(bareLabels).union(labelEndings) {
            if let tail = asciiTail(Array(label.unicodeScalars)[...]) { tails.insert(tail) }
        }
        return tails
    }()

    /// The last three ASCII letters (lower-cased) or digits of `word`, packed; nil when it has another
    /// script's letters or fewer than three of them.
    static func asciiTail(_ word: ArraySlice<Unicode.Scalar>) -> UInt32? {
        asciiLetters(word).flatMap { $0.count >= 3 ? $0.last : nil }
    }

    /// The last three (or fewer) ASCII letters (lower-cased) and digits of `word`, packed, and how
    /// many letters and digits it has; nil when it has another script's letters.
    static func asciiLetters(_ word: ArraySlice<Unicode.Scalar>) -> (last: UInt32, count: Int)? {
        var last: UInt32 = 0, kept = 0
        for scalar in word.reversed() {
            guard scalar.isASCII else { return nil }
            guard isDigit(scalar) || isASCIILetter(scalar) else { continue }
            if kept < 3 { last |= (isDigit(scalar) ? scalar.value : scalar.value | 0x20) << (8 * UInt32(kept)) }
            kept += 1
        }
        return (last, kept)
    }

    /// Lower case, accents removed, letters (of any script) and digits only.
    static func fold(_ text: some StringProtocol) -> String {
        String(String(text).folding(options: [.diacriticInsensitive, .caseInsensitive], locale: nil).unicodeScalars
            .filter { isWordScalar($0) }.map(Character.init))
    }

    /// What a word of one or two ASCII letters and digits must fold to, to be read as a label:
    /// "pw", the only label that short, and "id", which ends "tax id". Any other such word
    /// ("in", "of", "3") is no label's last word, and is passed over without folding it (most
    /// words of prose that `asciiTail` cannot judge). Packed as `asciiLetters` packs.
    static let shortLabelWords: Set<UInt32> = Set(secretLabels.union(bareLabels).union(multiWordEnds).compactMap { word in
        asciiLetters(Array(word.unicodeScalars)[...]).flatMap { $0.count < 3 ? $0.last : nil }
    })

    private static func labelled(_ s: [Unicode.Scalar], _ tokens: [Token], gated: Bool, into spans: inout [(Kind, Range<Int>)]) {
        guard tokens.count >= 2 else { return }
        // Read once here, not at every word: each use of a static set retains and releases it.
        let bareLabelStarts = Self.bareLabelStartBits, labelTails = Self.labelTails
        var foldedWords: [String?] = []   // made at the first word folded: most texts have none
        func folded(_ index: Int) -> String {
            if foldedWords.isEmpty { foldedWords = [String?](repeating: nil, count: tokens.count) }
            if let known = foldedWords[index] { return known }
            let word = s[tokens[index].range]
            let result: String
            if word.allSatisfy(\.isASCII) {
                result = String(String.UnicodeScalarView(word.compactMap { scalar -> Unicode.Scalar? in
                    if isDigit(scalar) { return scalar }
                    return isASCIILetter(scalar) ? Unicode.Scalar(scalar.value | 0x20) : nil
                }))
            } else {
                result = fold(String(String.UnicodeScalarView(word)))
            }
            foldedWords[index] = result
            return result
        }
        for index in 0..<(tokens.count - 1) {
            // "[TOKEN:abcd...]": the redactor's own mask, not a label.
            if tokens[index].range.lowerBound > 0, s[tokens[index].range.lowerBound - 1] == "[" { continue }
            // Labels are short words: most words are not one.
            guard tokens[index].range.count <= 40 else { continue }
            // What stands between this word and the next must be able to separate a label from a
            // value: ":" or "=" (with quotes and spaces), or spaces alone (bare labels, "--flag value").
            let between = s[tokens[index].range.upperBound..<tokens[index + 1].range.lowerBound]
            let separatedGap = between.count <= 6 && (between.contains(":") || between.contains("="))
            let spacedGap = !separatedGap && !between.isEmpty && between.count <= 6 && between.allSatisfy { $0 == " " }
                && tokens[index].range.count <= 24
            guard separatedGap || spacedGap else { continue }
            // Before a plain space, only bare labels and "--flags" count: their words begin with one
            // of `bareLabelStarts` (or are in another script); most words of prose are passed over unfolded.
            if spacedGap {
                let first = s[tokens[index].range.lowerBound]
                guard first.value >= 128 || isBareLabelStart(first.value, bareLabelStarts) || first == "-" else { continue }
            }
            if let letters = Self.asciiLetters(s[tokens[index].range]) {
                if letters.count >= 3 {
                    if !labelTails.contains(letters.last) { continue }
                } else if gated, !shortLabelWords.contains(letters.last) {
                    continue
                }
            }
            // The label: this word, or it with the one or two before it ("mot de passe", "2FA code"):
            // wider only when this word ends a label of several words.
            var label: String?
            let widest = multiWordEnds.contains(folded(index)) ? 3 : 1
            for width in 1...widest where index - width + 1 >= 0 {
                let folded = ((index - width + 1)...index).map(folded).joined()
                if secretLabels.contains(folded) || bareLabels.contains(folded) { label = folded; break }
                // "db_password", "X-Api-Key", "user.password": a label word at the end of a key.
                if width == 1, folded.count > 4, labelEndings.contains(where: folded.hasSuffix) {
                    label = folded
                    break
                }
            }
            guard let label else { continue }
            let labelEnd = tokens[index].range.upperBound
            var value = tokens[index + 1].range
            // "Authorization: Bearer <token>": the scheme is not the secret; the word after it is.
            if index + 2 < tokens.count, ["bearer", "basic", "token", "digest"].contains(folded(index + 1)),
               s[tokens[index + 1].range.upperBound..<tokens[index + 2].range.lowerBound].allSatisfy({ $0 == " " }) {
                value = tokens[index + 2].range
            }
            let gap = s[labelEnd..<tokens[index + 1].range.lowerBound]
            let word = String(String.UnicodeScalarView(s[tokens[index].range]))
            let spaced = !gap.isEmpty && gap.allSatisfy { $0 == " " }
            let separated = gap.contains(":") || gap.contains("=")
            guard separated || (spaced && (word.hasPrefix("--") || bareLabels.contains(label))), gap.count <= 6,
                  !gap.contains("\n"), !gap.contains("[") && !gap.contains("<") && !gap.contains("*") else { continue }
            // A quoted value runs to its closing quote.
            var end = value.upperBound
            if let quote = gap.last, quote == "\"" || quote == "'" {
                var cursor = value.lowerBound
                while cursor < s.count, cursor - value.lowerBound < 256, s[cursor] != quote, s[cursor] != "\n" { cursor += 1 }
                end = cursor
            } else {
                // Unquoted: to the next space or field separator, punctuation included ("hunter!2").
                var cursor = value.lowerBound
                while cursor < s.count, cursor - value.lowerBound < 256,
                      !["\"", "'", "&", ",", ";", "<", ">", " ", "\t", "\n", "\r"].contains(s[cursor]),
                      s[cursor].value < 128 || !s[cursor].properties.isWhitespace { cursor += 1 }
                end = max(value.upperBound, cursor)
            }
            let scalars = s[value.lowerBound..<end]
            let text = String(String.UnicodeScalarView(scalars))
            let hasDigitOrSymbol = scalars.contains { isDigit($0) || (!isWordScalar($0) && $0 != " ") }
            if !separated && !word.hasPrefix("--") && !hasDigitOrSymbol { continue }   // "password reset"
            guard !stateWords.contains(fold(text)) || scalars.contains(where: isDigit) else { continue }
            guard !(text.hasPrefix("REDACTED") || text.allSatisfy({ $0 == "x" || $0 == "X" })) else { continue }
            // "Tests pass: 12/12", "pass=3": a count or a ratio after the short label.
            if label == "pass", scalars.allSatisfy({ isDigit($0) || $0 == "/" || $0 == "." || $0 == "%" }) { continue }
            spans.append((.labelledSecret, value.lowerBound..<end))
        }
    }

    // MARK: spans

    /// Sorted by start; an overlapping span joins the one before it.
    static func merged(_ spans: [(Kind, Range<Int>)]) -> [(Kind, Range<Int>)] {
        var result: [(Kind, Range<Int>)] = []
        for span in spans.sorted(by: { $0.1.lowerBound < $1.1.lowerBound }) where !span.1.isEmpty {
            if let last = result.last, span.1.lowerBound < last.1.upperBound {
                result[result.count - 1].1 = last.1.lowerBound..<max(last.1.upperBound, span.1.upperBound)
            } else {
                result.append(span)
            }
        }
        return result
    }
}

/// The text as the scanner reads it: per character, NFKC (full-width forms, ligatures), every
/// decimal digit of any script as an ASCII digit, every space-like character and dash as " " and
/// "-"; each scalar remembers the character it came from, so findings map back to the original.
struct NormalisedText {
    let original: String
    var scalars: [Unicode.Scalar] = []
    /// Per scalar, the offsets (in `original.unicodeScalars`) of the character it came from;
    /// empty when the text is plain ASCII with nothing to decode (each scalar is itself).
    var from: [Int32] = []
    var to: [Int32] = []

    init(_ text: String) {
        original = text
        // Plain ASCII with nothing to decode ("%", "&"): each byte is its scalar.
        var contiguous = text
        let plain: [Unicode.Scalar]? = contiguous.withUTF8 { bytes in
            guard Self.isPlain(bytes) else { return nil }
            guard !bytes.isEmpty else { return [] }
            return [Unicode.Scalar](unsafeUninitializedCapacity: bytes.count) { buffer, initialized in
                // A scalar is its 32-bit value: widened byte by byte, a loop the compiler vectorises.
                UnsafeMutableRawPointer(buffer.baseAddress!).withMemoryRebound(to: UInt32.self, capacity: bytes.count) { wide in
                    for index in bytes.indices { wide[index] = UInt32(bytes[index]) }
                }
                initialized = bytes.count
            }
        }
        if let plain {
            scalars = plain
            return
        }
        let source = Array(text.unicodeScalars)
        scalars.reserveCapacity(source.count)
        from.reserveCapacity(source.count)
        to.reserveCapacity(source.count)
        var position = 0
        func emit(_ scalar: Unicode.Scalar, _ start: Int, _ end: Int) {
            scalars.append(scalar)
            from.append(Int32(start))
            to.append(Int32(end))
        }
        func hex(_ scalar: Unicode.Scalar) -> UInt32? {
            switch scalar {
            case "0"..."9": scalar.value - 48
            case "a"..."f": scalar.value - 87
            case "A"..."F": scalar.value - 55
            default: nil
            }
        }
        while position < source.count {
            let scalar = source[position]
            // Percent-encoding ("%40", "%20", "%2B") and numeric HTML entities ("&#64;", "&#x40;")
            // of printable ASCII read as the character they stand for.
            if scalar == "%", position + 2 < source.count, let high = hex(source[position + 1]), let low = hex(source[position + 2]),
               (0x20..<0x7F).contains(high * 16 + low) {
                emit(Unicode.Scalar(UInt8(high * 16 + low)), position, position + 3)
                position += 3
                continue
            }
            if scalar == "&", position + 3 < source.count, source[position + 1] == "#" {
                var cursor = position + 2
                let isHex = source[cursor] == "x" || source[cursor] == "X"
                if isHex { cursor += 1 }
                var value: UInt32 = 0
                let digitsStart = cursor
                while cursor < source.count, cursor - digitsStart < 6,
                      let digit = isHex ? hex(source[cursor]) : (LeakScanner.isDigit(source[cursor]) ? source[cursor].value - 48 : nil) {
                    value = value * (isHex ? 16 : 10) + digit
                    cursor += 1
                }
                if cursor > digitsStart, cursor < source.count, source[cursor] == ";", (0x20..<0x7F).contains(value) {
                    emit(Unicode.Scalar(UInt8(value)), position, cursor + 1)
                    position = cursor + 1
                    continue
                }
            }
            if scalar.isASCII {
                emit(scalar, position, position + 1)
            } else {
                for normal in String(scalar).precomposedStringWithCompatibilityMapping.unicodeScalars {
                    emit(Self.plain(normal), position, position + 1)
                }
            }
            position += 1
        }
    }

    /// Whether UTF-8 `bytes` hold nothing the normaliser decodes (no byte from 0x80, no "%", no
    /// "&"): such a text's scalars are its bytes.
    static func isPlain(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var special: UInt8 = 0
        for byte in bytes { special |= (byte & 0x80) | (byte == UInt8(ascii: "%") ? 1 : 0) | (byte == UInt8(ascii: "&") ? 1 : 0) }
        return special == 0
    }

    static func plain(_ scalar: Unicode.Scalar) -> Unicode.Scalar {
        guard scalar.value > 127 else { return scalar }
        let properties = scalar.properties
        if properties.numericType == .decimal, let value = properties.numericValue, value >= 0, value <= 9 {
            return Unicode.Scalar(UInt8(48 + Int(value)))
        }
        if properties.isWhitespace { return " " }
        if properties.generalCategory == .dashPunctuation { return "-" }
        return scalar
    }

    func findings(_ spans: [(LeakScanner.Kind, Range<Int>)]) -> [LeakScanner.Finding] {
        guard !spans.isEmpty else { return [] }
        // Spans come sorted and apart (`merged`): one walk forward through the text, not one
        // from its start per finding (a body of many findings would be quadratic).
        let view = original.unicodeScalars
        var cursor = view.startIndex, cursorOffset = 0
        return spans.map { kind, range in
            let lower = from.isEmpty ? range.lowerBound : Int(from[range.lowerBound])
            let upper = from.isEmpty ? range.upperBound : Int(to[range.upperBound - 1])
            if lower < cursorOffset { cursor = view.startIndex; cursorOffset = 0 }   // not sorted after all: start over
            cursor = view.index(cursor, offsetBy: lower - cursorOffset)
            cursorOffset = lower
            let end = view.index(cursor, offsetBy: upper - lower)
            return LeakScanner.Finding(kind: kind, range: cursor..<end)
        }
    }
}
