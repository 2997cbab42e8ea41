// Redaction of free text (log messages, metadata values, error messages) for every data type of seed
// 000's mandatory redaction table, plus its URL rule. Rules are data (a pattern and a template, or a
// transform where a check or a hash is needed); the defaults are seed 000's and callers can extend them.
import Foundation
import Glibc

public struct Redactor: Sendable {
    public struct Rule: Sendable {
        /// What a transform sees: the whole match and its capture groups (nil when a group took no part).
        public struct Match: Sendable {
            public let text: String
            /// groups[0] is the whole match.
            public let groups: [String?]
            public subscript(_ group: Int) -> String? { group < groups.count ? groups[group] : nil }
        }

        /// Returns the replacement, or nil when the match turns out not to be sensitive (a digit run that
        /// fails the Luhn check), which leaves the text for the rules after this one.
        public typealias Transform = @Sendable (Match) -> String?

        public var name: String
        public var pattern: String
        /// NSRegularExpression template ($1… for groups); unused when `transform` is set.
        public var template: String
        public var transform: Transform?
        /// What a text must hold for the pattern to have a chance (seed rules only): checked
        /// before the regular expression runs, which costs microseconds even when nothing matches.
        var hint: Hint?

        public init(name: String, pattern: String, template: String) {
            self.name = name
            self.pattern = pattern
            self.template = template
            self.transform = nil
        }

        public init(name: String, pattern: String, transform: @escaping Transform) {
            self.name = name
            self.pattern = pattern
            self.template = ""
            self.transform = transform
        }
    }

    /// A rule's regular expression and template. A seed rule's (it has a hint) is compiled the
    /// first time a text passes its hint: building the seed redactor compiled 43 ICU expressions
    /// (~20 ms of CPU) even for a pass that redacts one user id. Others are compiled at init, so
    /// that a custom rule that does not compile is named in `rejectedRuleNames`.
    /// Guarded by an NSLock (a pthread mutex), not `Mutex`: ThreadSanitizer sees no order in
    /// Synchronization's `Mutex` on Linux and reported its guarded accesses as races (CI, 2026-11-27).
    private final class Compiled: @unchecked Sendable {
        typealias Ready = (expression: NSRegularExpression, template: [TemplatePart])
        let rule: Rule
        /// The rule's hint, as read for each text.
        let gate: Gate?
        private let lock = NSLock()
        private var stored: Ready?

        init(_ rule: Rule, _ ready: Ready?) {
            self.rule = rule
            self.gate = rule.hint?.gate
            self.stored = ready
        }

        static func compile(_ rule: Rule) -> Ready? {
            guard let expression = try? NSRegularExpression(pattern: rule.pattern, options: [.caseInsensitive]) else { return nil }
            return (expression, TemplatePart.parse(rule.template, groups: expression.numberOfCaptureGroups))
        }

        var isCompiled: Bool { lock.withLock { stored != nil } }

        /// Nil only for a seed pattern that does not compile (RedactionTests compile every one).
        var ready: Ready? {
            lock.withLock {
                if stored == nil { stored = Self.compile(rule) }
                return stored
            }
        }
    }

    public let rules: [Rule]
    /// Names replaced by [NAME_REDACTED] wherever they appear, after all rules.
    public let knownNames: [String]
    /// Rules whose pattern did not compile. They are skipped: check this when rules come from configuration.
    public let rejectedRuleNames: [String]
    private let compiled: [Compiled]

    public init(rules: [Rule], knownNames: [String] = []) {
        self.rules = rules
        self.knownNames = knownNames
        var compiled: [Compiled] = []
        var rejected: [String] = []
        // Known names go last so that a labelled form ("child: Tommy Smith") is redacted by its own rule first.
        for rule in rules + [Self.knownNamesRule(knownNames)].compactMap({ $0 }) {
            if rule.hint != nil {
                compiled.append(Compiled(rule, nil))   // a seed rule: compiled at its first use
            } else if let ready = Compiled.compile(rule) {
                compiled.append(Compiled(rule, ready))
            } else {
                rejected.append(rule.name)
            }
        }
        self.compiled = compiled
        self.rejectedRuleNames = rejected
    }

    /// How many rules have their expression compiled (tests: seed rules compile at first use).
    var compiledRuleCount: Int { compiled.count(where: \.isCompiled) }

    /// The rules whose pattern does not compile, compiling every one now (tests).
    func rulesThatDoNotCompile() -> [String] { compiled.filter { $0.ready == nil }.map(\.rule.name) }

    /// The same rules with `extra` applied first (a caller's rules are usually the more specific ones).
    public func adding(_ extra: [Rule]) -> Redactor {
        Redactor(rules: extra + rules, knownNames: knownNames)
    }

    public func addingKnownNames(_ names: [String]) -> Redactor {
        Redactor(rules: rules, knownNames: knownNames + names)
    }

    /// Seed 000's redactor.
    public static let seed000 = Redactor(rules: seed000Rules)

    /// Seed 000's rules, most specific first: a rule's output is never looked at again by a later rule,
    /// so "password=hunter2@x.io" is a password and not an email, and a card number is not half-eaten
    /// by the phone rule.
    public static let seed000Rules: [Rule] = {
        typealias P = PIIPatterns
        return seed000RuleList.map { rule in
            var rule = rule
            rule.hint = seedHints[rule.name]
            return rule
        }
    }()

    /// Per seed rule, what its pattern cannot match without: one of these words (lower case;
    /// the patterns are case-insensitive), a number of digits, a length. Each follows from the
    /// pattern (its labels, its literal prefixes, its digit counts); `RedactionTests` checks on
    /// both corpora that the rules give the same output with and without them.
    static let seedHints: [String: Hint] = seedHintList.mapValues { $0.resolved(in: hintWords) }
    /// Every seed hint's words and the verifier's own (`RedactionVerifier.ownHintWords`), looked
    /// for in one pass over a text.
    static let hintWords = HintWords(seedHintList.values.flatMap(\.words) + RedactionVerifier.ownHintWords.values.flatMap { $0 })
    private static let seedHintList: [String: Hint] = [
        "build-id": Hint(["build"]), "memory-dump": Hint(["0x"]), "jwt": Hint(["eyj"]), "bearer": Hint(["bearer"]),
        "fcm-token": Hint([":apa91b"]), "fcm-token-labelled": Hint(["token", "registration"]), "url-credentials": Hint(["://"]),
        "password": Hint(["pass", "pwd"]), "authorization": Hint(["authorization"]), "session-id": Hint(["sess", "sid"]),
        "mac-address": Hint(shape: .hexSeparators(5)),
        "device-id": Hint(["device", "udid", "machine", "android", "idf", "advertising", "hardware", "hwid", "install", "imei", "serial"]),
        "udid": Hint(length: 25, shape: .hexDashHex),
        "api-key": Hint(["sk_", "pk_", "rk_", "gh", "github_pat_", "xox", "akia", "aiza", "glpat-", "sg."]),
        "token": Hint(["token", "secret", "key"]), "email": Hint(["@", "%40"]),
        "card-labelled": Hint(["card", "cc", "pan"]), "cvv": Hint(["cvv", "cvc", "csc", "security", "verification"]),
        "card-expiry": Hint(["exp", "valid"]), "bank-account": Hint(["account", "acct", "routing", "aba", "sort", "bsb", "transit"]),
        "iban-labelled": Hint(["iban", "bic", "swiftcode", "swift_code", "swift-code", "swift code"]), "iban": Hint(digits: 2, shape: .lettersThenDigits), "card": Hint(digits: 13, shape: .cardRun(13)),
        "gps-pair": Hint(["."], digits: 10, shape: .decimals(fraction: 4, count: 2)), "gps-hemisphere": Hint(digits: 3, shape: .hemisphere), "gps-labelled": Hint(["lat", "lng", "lon"]),
        "invoice": Hint(["inv-"]), "invoice-id": Hint(["invoice"]), "ipv6": Hint(shape: .hexColons(2)), "ipv4": Hint(["."], digits: 4, shape: .dottedQuad),
        "phone-labelled": Hint(["phone", "tel", "mobile", "cell", "fax", "whatsapp", "sms", "contact"]), "phone": Hint(digits: 10, shape: .phoneTail), "phone-international": Hint(["+"], digits: 2),
        "child-name": Hint(childWords), "child-name-field": Hint(childWords),
        "parent-name": Hint(parentWords), "parent-name-field": Hint(parentWords),
        "teacher-name": Hint(teacherWords), "teacher-name-field": Hint(teacherWords),
        "honorific-name": Hint(shape: .honorific),
        "room-labelled": Hint(["room", "group"]), "room": Hint(["room", "rm", "class"]),
        "long-token": Hint(digits: 1, length: 32, shape: .alphanumericRun(32)),
    ]
    private static let childWords = ["child", "kid", "student", "pupil", "son", "daughter", "learner"]
    private static let parentWords = ["parent", "guardian", "mother", "father", "mom", "mum", "dad", "emergency", "pick"]
    private static let teacherWords = ["teacher", "educator", "instructor", "tutor", "caregiver", "staff", "coach"]

    struct Hint: Sendable {
        /// A shape of characters the pattern needs, read from `TextFacts`.
        enum Shape: Sendable {
            /// 13+ digits with single spaces or dashes between them, counted from a digit the card
            /// pattern may start at (not after a letter, a digit, "_", ".", "+" or "-": a run inside
            /// a word starts no card) to one it may end at (last, or before neither a letter, a
            /// digit nor "_": the zeros at the start of a request id such as
            /// 00000000000000000000000000001eef end no card).
            case cardRun(Int)
            /// 32+ letters and digits in a row (long tokens).
            case alphanumericRun(Int)
            /// As many letters and digits in a row, one of them a letter past "f" (not hex: the
            /// verifier's long-token check flags no hex run).
            case alphanumericRunNotHex(Int)
            /// d.d.d.d (IPv4).
            case dottedQuad
            /// `count` numbers with at least `fraction` digits after a point (coordinates).
            case decimals(fraction: Int, count: Int)
            /// Two letters then two digits (IBAN).
            case lettersThenDigits
            /// ddd, a space, dash or dot, dddd (NANP phone numbers).
            case phoneTail
            /// At least this many ":" in one run of hex digits and colons (IPv6).
            case hexColons(Int)
            /// At least this many ":" or "-" in one run of hex digits, colons and dashes (MAC addresses).
            case hexSeparators(Int)
            /// 8 hex digits, a dash, 16 hex digits (new-style UDIDs).
            case hexDashHex
            /// A number with 2+ decimals, then spaces or tabs, then N or S (a latitude without "°").
            case hemisphere
            /// Mr, Mrs, Ms, Miss, Mx, Dr or Prof as written, not after a letter, an optional ".",
            /// spaces or tabs, then a capital letter.
            case honorific
        }

        var words: [String]
        /// What `TextFacts.admits` reads: plain values, no arrays (copied per rule and text).
        var gate: Gate
        init(_ words: [String] = [], digits: Int = 0, length: Int = 0, shape: Shape? = nil) {
            self.words = words
            self.gate = Gate(digits: digits, length: length, shape: shape)
        }

        func resolved(in table: HintWords) -> Hint {
            var hint = self
            hint.gate.mask = table.mask(of: words)
            hint.gate.needsWord = !words.isEmpty
            return hint
        }
    }

    struct Gate: Sendable {
        var digits: Int
        var length: Int
        var shape: Hint.Shape?
        /// The words, in `Redactor.hintWords`; one of them must be in the text when `needsWord`.
        var mask = HintWords.Mask()
        var needsWord = false
    }
}

extension Redactor.TextFacts {
    /// Whether a rule with this gate may match the text.
    func admits(_ gate: Redactor.Gate) -> Bool {
        guard length >= gate.length, digits >= gate.digits else { return false }
        switch gate.shape {
        case .cardRun(let count)?: guard longestCardRun >= count else { return false }
        case .alphanumericRun(let count)?: guard longestAlphanumericRun >= count else { return false }
        case .alphanumericRunNotHex(let count)?: guard longestNotHexRun >= count else { return false }
        case .dottedQuad?: guard dottedQuad else { return false }
        case .decimals(let fraction, let count)?: guard (fraction >= 4 ? longDecimals : decimals) >= count else { return false }
        case .lettersThenDigits?: guard lettersThenDigits else { return false }
        case .phoneTail?: guard phoneTail else { return false }
        case .hexColons(let count)?: guard hexColons >= count else { return false }
        case .hexSeparators(let count)?: guard hexSeparators >= count else { return false }
        case .hexDashHex?: guard hexDashHex else { return false }
        case .hemisphere?: guard hemisphere else { return false }
        case .honorific?: guard honorific else { return false }
        case nil: break
        }
        return !gate.needsWord || words.intersects(gate.mask)
    }
}

extension Redactor {

    /// An ASCII text, lower-cased and NUL-terminated, and its digit count; nil for other text
    /// (case-insensitive matching and `\d` reach beyond ASCII there, so hints are not used) and
    /// for text holding a NUL.
    struct TextFacts {
        var bytes: [UInt8]
        var digits = 0
        var longestCardRun = 0
        var longestAlphanumericRun = 0
        /// The longest run of letters and digits holding a letter g–z.
        var longestNotHexRun = 0
        var dottedQuad = false
        /// Numbers with a fraction of 1+ digits, and of 4+ digits.
        var decimals = 0
        var longDecimals = 0
        var lettersThenDigits = false
        var phoneTail = false
        /// The most colons, and colons or dashes, in one run of hex digits and those separators.
        var hexColons = 0
        var hexSeparators = 0
        var hexDashHex = false
        var hemisphere = false
        var honorific = false
        /// Which of `Redactor.hintWords` the text holds.
        var words = HintWords.Mask()

        init?(_ text: String) {
            bytes = Array(text.utf8)
            let survey = bytes.withUnsafeBufferPointer { Self.survey($0) }
            if survey.refused { return nil }
            digits = survey.digits
            if survey.capitals {
                honorific = Self.hasHonorific(bytes)   // on the text as written
                bytes.withUnsafeMutableBufferPointer { Self.lowerCase($0) }
            }
            scanShapes()
            words = Redactor.hintWords.find(in: bytes)
        }

        private static let ones: UInt64 = 0x0101_0101_0101_0101
        private static let highs: UInt64 = 0x8080_8080_8080_8080

        /// Eight bytes of ASCII at once: the high bit of each byte that is a capital letter. (Each
        /// byte plus 0x3F reaches 0x80 from "A" on, plus 0x25 from "[" on; no sum carries into the
        /// next byte below 0x80.)
        @inline(__always) private static func capitals(in word: UInt64) -> UInt64 {
            (word &+ 0x3F &* ones) & ~(word &+ 0x25 &* ones) & highs
        }

        /// One read of the text, eight bytes at a time: whether it holds a byte that is not ASCII
        /// or a NUL (no facts then), how many digits, and whether it has a capital letter.
        static func survey(_ text: UnsafeBufferPointer<UInt8>) -> (refused: Bool, digits: Int, capitals: Bool) {
            guard let base = text.baseAddress else { return (false, 0, false) }
            let raw = UnsafeRawPointer(base)
            var refused: UInt64 = 0, capitals: UInt64 = 0, digits = 0, index = 0
            while index + 8 <= text.count {
                let word = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: index, as: UInt64.self))
                refused |= word & highs | (word &- ones) & ~word & highs   // a byte >= 128, a zero byte
                // Plus 0x50 reaches 0x80 from "0" on, plus 0x46 from ":" on (sums are only
                // meaningful when nothing was refused, the only case they are used).
                digits += ((word &+ 0x50 &* ones) & ~(word &+ 0x46 &* ones) & highs).nonzeroBitCount
                capitals |= Self.capitals(in: word)
                index += 8
            }
            while index < text.count {
                let byte = text[index]
                if byte >= 128 || byte == 0 { refused = 1 }
                if byte &- 48 <= 9 { digits += 1 } else if byte &- 65 <= 25 { capitals = 1 }
                index += 1
            }
            return (refused != 0, digits, capitals != 0)
        }

        /// Capital letters made small, eight bytes at a time (the text is ASCII).
        static func lowerCase(_ text: UnsafeMutableBufferPointer<UInt8>) {
            guard let base = text.baseAddress else { return }
            let raw = UnsafeMutableRawPointer(base)
            var index = 0
            while index + 8 <= text.count {
                let word = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: index, as: UInt64.self))
                raw.storeBytes(of: (word | Self.capitals(in: word) >> 2).littleEndian, toByteOffset: index, as: UInt64.self)
                index += 8
            }
            while index < text.count {
                if text[index] &- 65 <= 25 { text[index] |= 0x20 }
                index += 1
            }
        }

        /// The honorific pattern's ASCII form, on the text as written (it is case-sensitive).
        private static let titles: [[UInt8]] = ["Mrs", "Mr", "Ms", "Miss", "Mx", "Dr", "Prof"].map { Array($0.utf8) }

        static func hasHonorific(_ text: [UInt8]) -> Bool {
            func isLetter(_ byte: UInt8) -> Bool { (byte | 0x20) >= 97 && (byte | 0x20) <= 122 }
            for start in text.indices where text[start] == UInt8(ascii: "M") || text[start] == UInt8(ascii: "D")
                || text[start] == UInt8(ascii: "P") {
                guard start == 0 || !isLetter(text[start - 1]) else { continue }
                for title in titles where text.count - start >= title.count && text[start..<start + title.count].elementsEqual(title) {
                    var cursor = start + title.count
                    if cursor < text.count, text[cursor] == UInt8(ascii: ".") { cursor += 1 }
                    let blanks = cursor
                    while cursor < text.count, text[cursor] == 32 || text[cursor] == 9 { cursor += 1 }
                    if cursor > blanks, cursor < text.count, text[cursor] >= 65, text[cursor] <= 90 { return true }
                }
            }
            return false
        }

        private mutating func scanShapes() {
            // Read through a buffer into locals, written back once: the closures over `self`
            // that this replaced paid an exclusivity check and a bounds check per look.
            var shapes = Shapes()
            bytes.withUnsafeBufferPointer { shapes.scan($0) }
            longestCardRun = shapes.longestCardRun
            longestAlphanumericRun = shapes.longestAlphanumericRun
            longestNotHexRun = shapes.longestNotHexRun
            dottedQuad = shapes.dottedQuad
            decimals = shapes.decimals
            longDecimals = shapes.longDecimals
            lettersThenDigits = shapes.lettersThenDigits
            phoneTail = shapes.phoneTail
            hexColons = shapes.hexColons
            hexSeparators = shapes.hexSeparators
            hexDashHex = shapes.hexDashHex
            hemisphere = shapes.hemisphere
        }

        /// The shapes `Hint.Shape` names, read in one walk over the lower-cased bytes.
        private struct Shapes {
            var longestCardRun = 0, longestAlphanumericRun = 0, longestNotHexRun = 0, decimals = 0, longDecimals = 0
            var hexColons = 0, hexSeparators = 0
            var dottedQuad = false, lettersThenDigits = false, phoneTail = false, hexDashHex = false, hemisphere = false

            /// A lower-cased byte of \w: a letter, a digit or "_".
            @inline(__always) static func isWordByte(_ byte: UInt8) -> Bool {
                byte &- 48 <= 9 || byte &- 97 <= 25 || byte == UInt8(ascii: "_")
            }

            /// A lower-cased byte after which the card pattern starts no match: \w, ".", "+", "-".
            @inline(__always) static func blocksCard(_ byte: UInt8) -> Bool {
                isWordByte(byte) || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-")
            }

            mutating func scan(_ bytes: UnsafeBufferPointer<UInt8>) {
                let count = bytes.count
                @inline(__always) func isDigit(_ index: Int) -> Bool { index >= 0 && index < count && bytes[index] &- 48 <= 9 }
                @inline(__always) func isLetter(_ index: Int) -> Bool { index >= 0 && index < count && bytes[index] &- 97 <= 25 }
                @inline(__always) func isHex(_ byte: UInt8) -> Bool { byte &- 48 <= 9 || byte &- 97 <= 5 }
                var digitRun = 0, alphanumericRun = 0, runNotHex = false
                var hexRun = 0, runColons = 0, runSeparators = 0
                var index = 0
                while index < count {
                    let byte = bytes[index]
                    if byte &- 97 <= 25 {
                        // A run of letters at once (most of a text): per letter, only the hex and
                        // alphanumeric runs change, and two letters then two digits can only end it.
                        var end = index, lastNotHex = -1
                        while end < count, bytes[end] &- 97 <= 25 {
                            if bytes[end] &- 97 > 5 { lastNotHex = end }
                            end += 1
                        }
                        if lastNotHex >= 0 {
                            hexRun = end - 1 - lastNotHex; runColons = 0; runSeparators = 0
                            runNotHex = true
                        } else {
                            hexRun += end - index
                        }
                        alphanumericRun += end - index
                        longestAlphanumericRun = max(longestAlphanumericRun, alphanumericRun)
                        if runNotHex { longestNotHexRun = max(longestNotHexRun, alphanumericRun) }
                        if !lettersThenDigits, end - index >= 2, isDigit(end), isDigit(end + 1) { lettersThenDigits = true }
                        digitRun = 0
                        index = end
                        continue
                    }
                    let digit = byte &- 48 <= 9
                    if !digit, byte != UInt8(ascii: "."), byte != UInt8(ascii: ":"), byte != UInt8(ascii: "-"), byte != 32 {
                        // Any other byte (quotes, commas, brackets: much of a JSON body) ends every
                        // run and starts no shape: what the walk below does for it, at once.
                        hexRun = 0; runColons = 0; runSeparators = 0
                        alphanumericRun = 0; runNotHex = false
                        digitRun = 0
                        index += 1
                        continue
                    }
                    if isHex(byte) {
                        hexRun += 1
                    } else if byte == UInt8(ascii: ":") || byte == UInt8(ascii: "-") {
                        runSeparators += 1
                        hexSeparators = max(hexSeparators, runSeparators)
                        if byte == UInt8(ascii: ":") {
                            runColons += 1
                            hexColons = max(hexColons, runColons)
                        } else {
                            runColons = 0   // a dash ends a run of hex digits and colons
                            if !hexDashHex, hexRun >= 8 {
                                var after = 0
                                while after < 16, index + 1 + after < count, isHex(bytes[index + 1 + after]) { after += 1 }
                                hexDashHex = after == 16
                            }
                        }
                        hexRun = 0
                    } else {
                        hexRun = 0; runColons = 0; runSeparators = 0
                    }
                    if digit || byte &- 97 <= 25 {
                        alphanumericRun += 1
                        longestAlphanumericRun = max(longestAlphanumericRun, alphanumericRun)
                        if byte &- 103 <= 19 { runNotHex = true }   // g-z
                        if runNotHex { longestNotHexRun = max(longestNotHexRun, alphanumericRun) }
                    } else {
                        alphanumericRun = 0
                        runNotHex = false
                    }
                    if digit {
                        // A run starts where the card pattern's look-behind, (?<![\w.+-]), lets it.
                        if digitRun > 0 || index == 0 || !Self.blocksCard(bytes[index - 1]) { digitRun += 1 }
                        // Counted where the pattern's look-ahead, (?![\w]…), may end a match: at
                        // the end, or before a byte that is not a letter, a digit or "_".
                        if index + 1 == count || !Self.isWordByte(bytes[index + 1]) { longestCardRun = max(longestCardRun, digitRun) }
                    } else if !((byte == 32 || byte == UInt8(ascii: "-")) && isDigit(index - 1) && isDigit(index + 1)) {
                        digitRun = 0
                    }
                    if byte == UInt8(ascii: "."), isDigit(index - 1), isDigit(index + 1) {
                        var fraction = 0
                        while isDigit(index + 1 + fraction) { fraction += 1 }
                        decimals += 1
                        if fraction >= 4 { longDecimals += 1 }
                        if !hemisphere, fraction >= 2 {
                            var cursor = index + 1 + fraction
                            while cursor < count, bytes[cursor] == 32 || bytes[cursor] == 9 { cursor += 1 }
                            hemisphere = cursor < count && (bytes[cursor] == UInt8(ascii: "n") || bytes[cursor] == UInt8(ascii: "s"))
                        }
                    }
                    if !lettersThenDigits, isLetter(index), isLetter(index + 1), isDigit(index + 2), isDigit(index + 3) { lettersThenDigits = true }
                    if !phoneTail, (byte == 32 || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")),
                       isDigit(index - 1), isDigit(index - 2), isDigit(index - 3),
                       isDigit(index + 1), isDigit(index + 2), isDigit(index + 3), isDigit(index + 4) { phoneTail = true }
                    if !dottedQuad, digit, !isDigit(index - 1) {
                        // d+.d+.d+.d+ from here
                        var cursor = index, groups = 0
                        while groups < 4 {
                            guard isDigit(cursor) else { break }
                            while isDigit(cursor) { cursor += 1 }
                            groups += 1
                            guard groups < 4, cursor < count, bytes[cursor] == UInt8(ascii: ".") else { break }
                            cursor += 1
                        }
                        if groups == 4 { dottedQuad = true }
                    }
                    index += 1
                }
            }
        }
        var length: Int { bytes.count }
    }

    static let seed000RuleList: [Rule] = {
        typealias P = PIIPatterns
        return [
            // Kept as they are, so that the long-token rule leaves build ids and memory dumps alone.
            Rule(name: "build-id", pattern: #"(?<![A-Za-z0-9])(?:build[-_ ]?id(?:\[\w+\])?|GNU build ID)["']?[ \t]*[:=]?[ \t]*["']?"#
                 + #"[0-9a-f]{16,64}(?![0-9a-z])"#, transform: { $0.text }),
            Rule(name: "memory-dump", pattern: #"(?<![\w])0x[0-9a-f]{4,16}["']?[ \t]*[:=][ \t]*["']?[0-9a-f]{16,256}(?![0-9a-z])"#,
                 transform: { $0.text }),

            Rule(name: "jwt", pattern: P.jwt, transform: { P.tokenMask($0.text) }),
            Rule(name: "bearer", pattern: #"\b(Bearer)\s+([\w~+/-][\w.~+/=-]{7,})"#,
                 transform: { "\($0[1] ?? "Bearer") \(P.tokenMask($0[2] ?? ""))" }),
            Rule(name: "fcm-token", pattern: P.fcm, transform: { P.truncate20($0.text) }),
            P.labelled(name: "fcm-token-labelled", labels: P.fcmLabels, value: P.fcmLabelledValue) { P.truncate20($0) },
            Rule(name: "url-credentials", pattern: P.urlCredentials, template: "$1$2:[REDACTED]@"),
            P.labelled(name: "password", labels: P.passwordLabels, value: P.passwordValue, quoted: P.anyQuoted, after: P.keywordStart) { _ in
                "[REDACTED]"
            },
            P.labelled(name: "authorization", labels: #"(?:proxy-)?authorization"#,
                       value: #"(?!Bearer\b)(?:(?:Basic|Token|Digest|ApiKey)[ \t]+)?[\w~+/-][\w.~+/=-]{3,}"#) { value in
                let parts = value.split(separator: " ", maxSplits: 1)
                return parts.count == 2 ? "\(parts[0]) \(P.tokenMask(String(parts[1])))" : P.tokenMask(value)
            },
            P.labelled(name: "session-id", labels: P.sessionLabels, value: P.sessionValue, loose: true) {
                P.isSessionHash($0) ? $0 : P.sha256Prefix($0, 12)   // kept as is: redact(redact(x)) == redact(x)
            },
            Rule(name: "mac-address", pattern: P.macAddress,
                 transform: { P.sha256Prefix($0.text.lowercased(), 8) }),
            P.labelled(name: "device-id", labels: P.deviceLabels, value: P.deviceValue, loose: true) {
                P.sha256Prefix($0, 8)
            },
            Rule(name: "udid", pattern: P.newUDID, transform: { P.sha256Prefix($0.text, 8) }),
            Rule(name: "api-key", pattern: P.apiKeyPrefixes, transform: { P.tokenMask($0.text) }),
            P.labelled(name: "token", labels: P.tokenLabels, value: P.tokenValue, after: P.keywordStart) { P.tokenMask($0) },
            Rule(name: "email", pattern: P.email, template: "[EMAIL_REDACTED]"),

            P.labelled(name: "card-labelled", labels: P.cardLabels, value: P.cardLabelledValue, loose: true) { _ in "[PAYMENT_REDACTED]" },
            P.labelled(name: "cvv", labels: P.cvvLabels, value: P.cvvValue, loose: true) { _ in "[PAYMENT_REDACTED]" },
            P.labelled(name: "card-expiry", labels: P.expiryLabels, value: P.expiryValue, loose: true) { _ in "[PAYMENT_REDACTED]" },
            P.labelled(name: "bank-account", labels: P.bankLabels, value: P.bankValue, loose: true) { _ in "[PAYMENT_REDACTED]" },
            P.labelled(name: "iban-labelled", labels: P.ibanLabels, value: P.ibanLabelledValue, loose: true) { _ in "[PAYMENT_REDACTED]" },
            Rule(name: "iban", pattern: P.iban, transform: { P.redactIBAN($0.text) }),
            Rule(name: "card", pattern: P.card, transform: { P.isCardNumber($0.text) ? "[PAYMENT_REDACTED]" : nil }),

            Rule(name: "gps-pair", pattern: P.gpsPair,
                 transform: { P.isCoordinatePair($0[1] ?? "", $0[2] ?? "") ? "[LOCATION_REDACTED]" : nil }),
            Rule(name: "gps-hemisphere", pattern: P.gpsHemisphere, template: "[LOCATION_REDACTED]"),
            P.labelled(name: "gps-labelled", labels: P.gpsLabels, value: P.gpsLabelledValue) { _ in "[LOCATION_REDACTED]" },

            Rule(name: "invoice", pattern: P.invoice, template: "$1[REDACTED]"),
            P.labelled(name: "invoice-id", labels: P.invoiceLabels, value: P.invoiceIDValue, loose: true) { _ in "[REDACTED]" },

            Rule(name: "ipv6", pattern: P.ipv6Candidate, transform: { P.maskIPv6($0.text) }),
            Rule(name: "ipv4", pattern: P.ipv4,
                 transform: { P.isKeptIPv4(firstOctet: $0[1], address: $0.text) ? nil : "\($0[1] ?? "").\($0[2] ?? "").x.x" }),

            // Ten bare digits are a phone number only when labelled: unlabelled, they are as often nanosecond
            // durations, epoch times and counters.
            P.labelled(name: "phone-labelled", labels: P.phoneLabels, value: P.phoneLabelledValue, loose: true) { P.maskPhone($0) },
            Rule(name: "phone", pattern: P.phoneNANP, transform: { P.maskPhone($0.text) }),
            Rule(name: "phone-international", pattern: P.phoneInternational, transform: { P.maskPhone($0.text) }),

            P.labelled(name: "child-name", labels: P.childLabels, value: P.personNames, quoted: P.quotedName) { _ in "[CHILD_REDACTED]" },
            P.labelled(name: "child-name-field", labels: P.named(P.childLabels), value: P.nameFieldValue) { _ in "[CHILD_REDACTED]" },
            P.labelled(name: "parent-name", labels: P.parentLabels, value: P.personNames, quoted: P.quotedName) { _ in "[PARENT_REDACTED]" },
            P.labelled(name: "parent-name-field", labels: P.named(P.parentLabels), value: P.nameFieldValue) { _ in "[PARENT_REDACTED]" },
            P.labelled(name: "teacher-name", labels: P.teacherLabels, value: P.personNames, quoted: P.quotedName) { _ in "[TEACHER_REDACTED]" },
            P.labelled(name: "teacher-name-field", labels: P.named(P.teacherLabels), value: P.nameFieldValue) { _ in "[TEACHER_REDACTED]" },
            Rule(name: "honorific-name", pattern: P.honorificName, template: "[TEACHER_REDACTED]"),

            P.labelled(name: "room-labelled", labels: P.roomLabels, value: P.roomValue) { _ in "[ROOM_REDACTED]" },
            Rule(name: "room", pattern: P.room, template: "[ROOM_REDACTED]"),

            Rule(name: "long-token", pattern: P.longToken,
                 transform: { P.isHashShaped($0.text) ? nil : P.tokenMask($0.text) }),
        ]
    }()

    private static func knownNamesRule(_ names: [String]) -> Rule? {
        PIIPatterns.knownNames(names).map { Rule(name: "known-names", pattern: $0, template: "[NAME_REDACTED]") }
    }

    /// Seed 000's URL rule: path segments that are identifiers (numbers, UUIDs, long hex or opaque
    /// tokens) become [ID]; every query value becomes [REDACTED]; user info is dropped.
    /// `https://api.example.com/v1/children/12345/feed?date=2026-02-16` →
    /// `https://api.example.com/v1/children/[ID]/feed?date=[REDACTED]`.
    public func redactURL(_ url: URL) -> String {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return "[URL_REDACTED]" }
        components.user = nil
        components.password = nil
        let segments = components.percentEncodedPath.split(separator: "/", omittingEmptySubsequences: false).map { segment -> String in
            Self.isIdentifier(String(segment)) ? "%5BID%5D" : String(segment)   // "[ID]" once the URL is text
        }
        components.percentEncodedPath = segments.joined(separator: "/")
        if let items = components.queryItems {
            components.queryItems = items.map { URLQueryItem(name: $0.name, value: $0.value == nil ? nil : "[REDACTED]") }
        }
        components.fragment = nil
        return (components.string ?? "[URL_REDACTED]").replacingOccurrences(of: "%5BID%5D", with: "[ID]")
            .replacingOccurrences(of: "%5BREDACTED%5D", with: "[REDACTED]")
    }

    static func isIdentifier(_ segment: String) -> Bool {
        guard !segment.isEmpty else { return false }
        if segment.allSatisfy(\.isNumber) { return true }
        if UUID(uuidString: segment) != nil { return true }
        let hex = segment.allSatisfy { $0.isHexDigit }
        if hex && segment.count >= 16 { return true }
        let opaque = segment.count >= 20 && segment.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }
            && segment.contains(where: \.isNumber)
        return opaque
    }

    public func redact(_ text: String) -> String { redactNoting(text).text }

    /// A text's redaction, and whether any rule's hints let it look at the text at all.
    struct Redacted {
        var text: String
        var ruleAdmitted: Bool
        /// What the rules' hints read, when the text came out as it went in and is ASCII: the
        /// verify stage reads the same text, and takes them from the pass's memo.
        var unchangedFacts: TextFacts? = nil
    }

    func redactNoting(_ text: String) -> Redacted {
        guard !text.isEmpty else { return Redacted(text: text, ruleAdmitted: false) }
        // Facts are read from ASCII text only, which is already composed; other text is composed.
        let facts = TextFacts(text)
        var current = facts == nil ? Self.composed(text) : text
        var replacements: [[UInt16]] = []
        var admitted = false
        for entry in compiled {
            if let gate = entry.gate, facts?.admits(gate) == false { continue }
            admitted = true
            current = Self.apply(entry, to: current, replacements: &replacements)
        }
        // Nothing replaced: the text as it came, not its composed copy (a report keeps its bytes).
        guard !replacements.isEmpty else { return Redacted(text: text, ruleAdmitted: admitted, unchangedFacts: facts) }
        var out: [UInt16] = []
        Self.restore(Array(current.utf16), replacements, below: replacements.count, into: &out)
        return Redacted(text: Self.string(utf16: out), ruleAdmitted: admitted)
    }

    /// The text as the patterns read it: composed (NFC). In decomposed text (NFD, as macOS file
    /// names and some keyboards and databases give it) "García" is "Garci", U+0301, "a", and a
    /// pattern's `\p{L}` stops at the mark: "Mr. Émile Zola" went out whole and "Mia García" as
    /// "[CHILD_REDACTED]́a". Composed, a text and its canonical twins are read alike, so the
    /// memos keyed by `String` (whose equality is canonical) give each of them the same answer.
    /// ASCII text is already composed and is not copied.
    ///
    /// Three compositions are undone: "=", "<" and ">" with U+0338 compose into "≠", "≮" and
    /// "≯", which would hide a label's separator ("password=" U+0338 "hunter2" read as
    /// "password≠hunter2": review, 2026-11-28). Those three are kept decomposed in either
    /// spelling, so canonical twins are still read alike.
    static func composed(_ text: String) -> String {
        guard !text.utf8.allSatisfy({ $0 < 128 }) else { return text }
        let composed = text.precomposedStringWithCanonicalMapping
        guard composed.unicodeScalars.contains(where: { separatorBase($0) != nil }) else { return composed }
        var scalars = String.UnicodeScalarView()
        for scalar in composed.unicodeScalars {
            if let base = separatorBase(scalar) { scalars.append(base); scalars.append("\u{338}") } else { scalars.append(scalar) }
        }
        return String(scalars)
    }

    /// "=", "<" or ">" for "≠", "≮" or "≯".
    private static func separatorBase(_ scalar: Unicode.Scalar) -> Unicode.Scalar? {
        switch scalar.value {
        case 0x2260: "="
        case 0x226E: "<"
        case 0x226F: ">"
        default: nil
        }
    }

    // Each replacement is parked behind a placeholder of private-use characters (not \w, not digits)
    // until every rule has run, so that no rule rewrites another's output. Work is on UTF-16 arrays:
    // NSString ranges are UTF-16, and Foundation's template expansion re-bridges the whole text per match.
    private static let placeholderStart: UInt16 = 0xF8F0
    private static let placeholderEnd: UInt16 = 0xF8F1
    private static let placeholderDigit0: UInt16 = 0xF8E0

    private static func apply(_ entry: Compiled, to text: String, replacements: inout [[UInt16]]) -> String {
        guard let ready = entry.ready else { return text }
        let matches = ready.expression.matches(in: text, options: [], range: NSRange(location: 0, length: text.utf16.count))
        guard !matches.isEmpty else { return text }
        let units = Array(text.utf16)
        var out: [UInt16] = []
        out.reserveCapacity(units.count + 16)
        var last = 0
        for match in matches where match.range.length > 0 {
            func group(_ index: Int) -> String? {
                guard index < match.numberOfRanges else { return nil }
                let range = match.range(at: index)
                guard range.location != NSNotFound else { return nil }
                return string(utf16: units[range.location..<NSMaxRange(range)])
            }
            let replacement: String?
            if let transform = entry.rule.transform {
                let groups = (0..<match.numberOfRanges).map(group)
                replacement = transform(Rule.Match(text: groups[0] ?? "", groups: groups))
            } else {
                replacement = ready.template.map { part in
                    switch part {
                    case .literal(let text): text
                    case .group(let index): group(index) ?? ""
                    }
                }.joined()
            }
            guard let replacement else { continue }
            out.append(contentsOf: units[last..<match.range.location])
            out.append(placeholderStart)
            out.append(contentsOf: String(replacements.count).utf16.map { placeholderDigit0 + $0 - 48 })
            out.append(placeholderEnd)
            replacements.append(Array(replacement.utf16))
            last = NSMaxRange(match.range)
        }
        guard last > 0 else { return text }
        out.append(contentsOf: units[last...])
        return string(utf16: out)
    }

    /// `String(decoding:as: UTF16.self)`, written as UTF-8 directly when no unit is a surrogate:
    /// the standard library's generic path took ~80 ns a unit, most of a matched text's cost
    /// (the placeholders make the text non-ASCII). Surrogates (pairs, or lone ones to repair)
    /// take the standard path.
    static func string<Units: Collection<UInt16>>(utf16 units: Units) -> String {
        guard !units.isEmpty else { return "" }
        var surrogate = false
        let text = String(unsafeUninitializedCapacity: units.count * 3) { buffer in
            var count = 0
            for unit in units {
                if unit < 0x80 {
                    buffer[count] = UInt8(truncatingIfNeeded: unit)
                    count += 1
                } else if unit < 0x800 {
                    buffer[count] = 0xC0 | UInt8(truncatingIfNeeded: unit >> 6)
                    buffer[count + 1] = 0x80 | UInt8(truncatingIfNeeded: unit & 0x3F)
                    count += 2
                } else if unit & 0xF800 == 0xD800 {
                    surrogate = true
                    return 0
                } else {
                    buffer[count] = 0xE0 | UInt8(truncatingIfNeeded: unit >> 12)
                    buffer[count + 1] = 0x80 | UInt8(truncatingIfNeeded: (unit >> 6) & 0x3F)
                    buffer[count + 2] = 0x80 | UInt8(truncatingIfNeeded: unit & 0x3F)
                    count += 3
                }
            }
            return count
        }
        return surrogate ? String(decoding: units, as: UTF16.self) : text
    }

    /// A replacement may hold earlier placeholders (a rule's match can span one); `below` stops cycles.
    /// Input that already held these private-use characters may see them replaced, never revealed.
    private static func restore(_ text: [UInt16], _ replacements: [[UInt16]], below limit: Int, into out: inout [UInt16]) {
        var index = 0
        while index < text.count {
            let unit = text[index]
            index += 1
            guard unit == placeholderStart else { out.append(unit); continue }
            var number = 0
            var end = index
            while end < text.count, text[end] >= placeholderDigit0, text[end] < placeholderDigit0 + 10, number < limit {
                number = number * 10 + Int(text[end] - placeholderDigit0)
                end += 1
            }
            if end > index, end < text.count, text[end] == placeholderEnd, number < limit {
                restore(replacements[number], replacements, below: number, into: &out)
                index = end + 1
            } else {
                out.append(unit)   // not one of ours: the input held this character
            }
        }
    }
}

/// NSRegularExpression's template syntax: "$n" is group n, a backslash quotes the next character.
enum TemplatePart: Sendable {
    case literal(String)
    case group(Int)

    static func parse(_ template: String, groups: Int) -> [TemplatePart] {
        var parts: [TemplatePart] = []
        var literal = ""
        var characters = template.makeIterator()
        var pending: Character? = nil
        while let character = pending ?? characters.next() {
            pending = nil
            switch character {
            case "\\":
                if let next = characters.next() { literal.append(next) }
            case "$":
                var number: Int? = nil
                while let next = characters.next() {
                    if let digit = next.wholeNumberValue, next.isASCII, (number ?? 0) * 10 + digit <= groups {
                        number = (number ?? 0) * 10 + digit
                    } else {
                        pending = next
                        break
                    }
                }
                if let number {
                    if !literal.isEmpty { parts.append(.literal(literal)); literal = "" }
                    parts.append(.group(number))
                } else {
                    literal.append("$")
                }
            default:
                literal.append(character)
            }
        }
        if !literal.isEmpty { parts.append(.literal(literal)) }
        return parts
    }
}

/// Patterns and checks shared by the redactor and the verifier, so that what one redacts the other looks for.
enum PIIPatterns {
    // MARK: labels (matched case-insensitively)

    /// Password and token labels are matched from their keyword, whatever comes before ("new_password",
    /// "X-Auth-Token", "accessToken"): scanning for a prefix at every position made them the slowest rules.
    static let passwordLabels = #"password|passwd|passwort|passphrase|pwd"#
    static let tokenLabels = #"token|secret|apikey|(?:secret|private|signing|encryption|master|access|api|auth|client|app|license)"#
        + #"[_-]?key"#
    /// Not after "/" ("/etc/passwd: …") nor inside the redactor's own "[TOKEN:…]".
    static let keywordStart = #"(?<![/\[])"#
    static let passwordValue = #"[^\s&"',;]+"#
    /// Not a truncation already made by the FCM rules (20 characters and "...").
    static let tokenValue = #"(?![\w:~+/-]{20}\.\.\.(?![\w.]))[\w~+/-][\w.~+/=-]{5,}"#
    static let fcmLabels = #"(?:fcm|gcm|firebase|push|registration|apns|device|messaging)[_ -]?(?:registration[_ -]?)?token"#
        + #"|registration[_ -]?id"#
    static let sessionLabels = #"(?:j|php|asp\.net_)?sess(?:ion)?[_ -]?id|sid|session[_ -]?(?:key|token)|connect\.sid"#
    static let deviceLabels = [
        #"device[_ -]?(?:id|identifier|uuid|serial)"#, "udid", #"machine[_ -]?id"#, #"android[_ -]?id"#, "idf[av]",
        #"advertising[_ -]?id"#, #"hardware[_ -]?id"#, "hwid", #"install(?:ation)?[_ -]?id"#, "imei", #"serial[_ -]?(?:number|no)"#,
    ].joined(separator: "|")
    static let cardLabels = #"(?:credit[_ -]?)?card[_ -]?(?:number|num|no)|cc[_ -]?(?:number|num)|credit[_ -]?card|pan"#
    static let cvvLabels = #"cvv2?|cvc2?|csc|security[_ -]?code|card[_ -]?verification(?:[_ -]?(?:code|value))?"#
    static let expiryLabels = #"exp(?:iry|iration)?(?:[_ -]?date)?|valid[_ -]?thru|expires"#
    static let expiryValue = #"(?:0[1-9]|1[0-2])[ \t]?[/-][ \t]?(?:20)?\d{2}(?!\d)"#
    static let bankLabels = [
        #"(?:bank[_ -]?)?account[_ -]?(?:number|num|no\.?|#)"#, #"acct[_ -]?(?:number|num|no\.?|#)?"#,
        #"routing[_ -]?(?:number|num|no\.?|#)?"#, #"aba[_ -]?(?:number|routing)?"#, #"sort[_ -]?code"#, "bsb", #"transit[_ -]?number"#,
    ].joined(separator: "|")
    static let ibanLabels = #"iban|bic|swift[_ -]?(?:code|bic)"#
    static let ibanLabelledValue = #"(?-i:[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]{2,4}){2,8}|[A-Z]{6}[A-Z0-9]{2}(?:[A-Z0-9]{3})?)(?![A-Za-z0-9])"#
    static let gpsLabels = #"lat(?:itude)?|lng|lon(?:g|gitude)?"#
    static let invoiceLabels = #"invoice[_ -]?(?:id|number|num|no\.?|ref(?:erence)?)?"#
    static let phoneLabels = #"(?:tele)?phone(?:[_ -]?(?:number|no\.?))?|tel|mobile(?:[_ -]?(?:number|no\.?))?|cell(?:phone)?"#
        + #"|fax|whatsapp|sms|contact[_ -]?number"#
    static let childLabels = #"child(?:ren)?|kid|student|pupil|son|daughter|learner|enrolled[_ -]?child"#
    static let parentLabels = #"parent|guardian|mother|father|mom|mum|dad|emergency[_ -]?contact"#
        + #"|pick[_ -]?up[_ -]?(?:by|person|contact)|authori[sz]ed[_ -]?pickup"#
    static let teacherLabels = #"teacher|educator|instructor|tutor|caregiver|staff(?:[_ -]?member)?|coach|(?:lead|head|assistant)[_ -]?teacher"#
    static let roomLabels = #"room|class[_ -]?room|room[_ -]?(?:name|id|number|no)|classroom[_ -]?(?:name|id)|group[_ -]?name"#

    /// Whole words, longest first (so "Tommy Smith" wins over "Tommy"), the words joined as in a URL or an
    /// identifier ("tommy_smith", "Tommy%20Smith"); nil without names.
    static func knownNames(_ names: [String]) -> String? {
        let words = names.map { Redactor.composed($0).split(whereSeparator: \.isWhitespace).map { NSRegularExpression.escapedPattern(for: String($0)) } }
            .filter { !$0.isEmpty }
        guard !words.isEmpty else { return nil }
        let alternatives = words.sorted { $0.joined().count > $1.joined().count }.map { $0.joined(separator: #"(?:[\s_.+-]|%20)+"#) }
        return #"(?<![\p{L}\p{N}_])(?:"# + alternatives.joined(separator: "|") + #")(?![\p{L}\p{N}_])"#
    }

    /// Labels with a name suffix ("child_name", "parentFullName"): their value is a name whatever its case.
    static func named(_ labels: String) -> String {
        #"(?:"# + labels + #")[_ -]?(?:full[_ -]?|first[_ -]?|last[_ -]?|display[_ -]?)?name"#
    }

    // MARK: values

    private static let nameWord = #"\p{Lu}[\p{L}\p{M}'’-]*\.?"#
    private static let particles = #"(?:de|del|della|da|di|van|von|der|den|la|le|du|bin|al|y)"#
    /// Capitalised words, optionally after an honorific: "Tommy Smith", "Ms. Johnson", "Maria de la Cruz".
    static let personName = #"(?-i:(?:(?:Mrs|Mr|Ms|Miss|Mx|Dr|Prof)\.?[ \t]+)?"# + nameWord
        + #"(?:(?:[ \t]+"# + particles + #")*[ \t]+"# + nameWord + #"){0,3})"#
    /// "Lucas Dubois, Chloé Dubois", "Linda and Tom Park".
    static let personNames = personName + #"(?:[ \t]*(?:,|&|\band\b)[ \t]*"# + personName + #")*"#
    static let quotedName = (double: #"(?-i:\p{Lu}[^"\n]{0,80})"#, single: #"(?-i:\p{Lu}[^'\n]{0,80})"#)
    /// A field named "…name" holds a name whatever its case: "tommy_smith", "Emma%20Johnson".
    static let nameFieldValue = #"\p{L}[\w'’.+%-]*(?:[ \t]+(?-i:\p{Lu})[\p{L}\p{M}'’-]*){0,3}"#
    static let honorificName = #"(?<![\p{L}])(?-i:(?:Mrs|Mr|Ms|Miss|Mx|Dr|Prof)\.?[ \t]+\p{Lu}[\p{L}\p{M}'’-]+"#
        + #"(?:[ \t]+\p{Lu}[\p{L}\p{M}'’-]+)?)"#
    static let roomValue = #"[\p{L}\p{N}][\p{L}\p{M}\p{N}'’-]*(?:[ \t]+(?-i:\p{Lu})[\p{L}\p{M}\p{N}'’-]*){0,3}"#
    /// "Room 101", "room #12", "Rm. 4", "Classroom B", "Room Bumblebees", "Class 3B"; a bare "Class" takes only
    /// a number or a letter ("Class NSObject" is Swift).
    static let room = #"(?<![\p{L}\p{N}])(?:"# + [
        #"(?-i:(?:Room|ROOM|Classroom|CLASSROOM)[ \t]+(?:[A-Z](?:\d|[a-z]+)?(?:[ \t]+[A-Z][a-z]+)?))"#,
        #"(?:room|classroom|rm\.?)[ \t]*#?[ \t]*\d+[A-Za-z]?"#,
        #"(?-i:Class[ \t]+(?:\d+[A-Z]?|[A-Z]))"#,
    ].joined(separator: "|") + #")(?![\p{L}\p{N}])"#

    /// "INV-2024-001234" (the year stays) or "INV-001234"; never "INV-2024-[REDACTED]" again.
    static let invoice = #"(?<![\w-])(INV-(?:\d{4}-(?=[A-Z0-9]*\d)|(?!\d{4}-)))[A-Z0-9]*\d[A-Z0-9]*"#
    /// Session ids contain a digit (so "session id missing" stays).
    static let sessionValue = #"(?=[\w.~+/%:-]*\d)[\w.~+/%:-]{6,}"#
    /// "postgres://app:secret@db" (user info in a URL).
    static let urlCredentials = #"(?<![\w+.-])([a-z][\w+.-]*://)([^\s:/@]*):([^\s@/]+)@"#
    static let email = #"(?<![\w.+-])[\w.+-]+(?:@|%40)(?!\d+x\.)[\w-]+(?:\.[\w-]+)*\.[a-z]{2,}(?![\w])"#
    static let jwt = #"(?<![\w-])eyJ[\w-]{5,}\.[\w-]{5,}\.[\w-]{5,}"#
    static let fcm = #"(?<![\w-])[\w-]{11,}:APA91b[\w-]{20,}"#
    /// Keys that announce themselves: Stripe, GitHub, Slack, AWS, Google, GitLab, SendGrid.
    static let apiKeyPrefixes = #"(?<![\w-])(?:"# + [
        #"(?:sk|pk|rk)_(?:live|test)_[0-9A-Za-z]{10,}"#, #"gh[pousr]_[0-9A-Za-z]{20,}"#, #"github_pat_\w{20,}"#,
        #"xox[abprs]-[\w-]{10,}"#, #"(?-i:AKIA[0-9A-Z]{16})"#, #"AIza[\w-]{30,}"#, #"glpat-[\w-]{20,}"#, #"SG\.[\w-]{16,}\.[\w-]{16,}"#,
    ].joined(separator: "|") + ")"
    static let newUDID = #"(?<![\w-])[0-9a-f]{8}-[0-9a-f]{16}(?![\w-])"#
    /// Seed 000's long opaque strings (≥ 32 alphanumerics), when they mix letters and digits (so long
    /// type names are not tokens) and are not a Swift mangled symbol.
    static let longToken = #"(?<![\w$])(?=[A-Za-z0-9]*\d)(?=[A-Za-z0-9]*[A-Za-z])[A-Za-z0-9]{32,}(?![\w])"#

    /// Grouped as cards print them, or 14–16 bare digits (register dumps are full of 19–20 digit decimals,
    /// a tenth of them Luhn-valid). Not after "+": "+4915112345678" is a phone number.
    static let card = #"(?<![\w.+-])(?:\d{4}([ -])\d{4}\1\d{4}\1\d{1,4}(?:\1\d{1,3})?|\d{4}([ -])\d{6}\2\d{4,5}|\d{14,16})"#
        + #"(?![\w]|[.-]\d)"#
    static let iban = #"(?<![\w])(?-i:[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]{4}){2,7}(?:[ ]?[A-Z0-9]{1,3})?)(?![\w])"#

    /// Two decimals with 4+ places: "37.7749, -122.4194", "@-37.8136,144.9631", "q=35.6762%2C139.6503".
    static let gpsPair = #"(?<![\w.+-])([-+]?\d{1,2}\.\d{4,})°?(?:[ \t]*[,;/][ \t]*|%2C|[ \t]+)([-+]?\d{1,3}\.\d{4,})°?(?![\d.])"#
    /// "41.8781° N, 87.6298° W" and degrees-minutes-seconds "40°26'46\"N 79°58'56\"W".
    static let gpsHemisphere: String = {
        func angle(_ degreeDigits: String) -> String {
            #"(?:\d{"# + degreeDigits + #"}(?:\.\d+)?°[ \t]*(?:\d{1,2}(?:\.\d+)?['′][ \t]*)?(?:\d{1,2}(?:\.\d+)?(?:"|″|'')[ \t]*)?"#
                + #"|\d{"# + degreeDigits + #"}\.\d{2,}°?[ \t]*)"#
        }
        return #"(?<![\w.])"# + angle("1,2") + #"[NS][ \t]*,?[ \t]*"# + angle("1,3") + #"[EW](?![\w])"#
    }()

    private static let octet = #"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"#
    /// Not after "version"/"build": "version 10.2.1.4" is a version.
    static let ipv4 = #"(?<![\w.])(?<!version )(?<!build )("# + octet + #")\.("# + octet + #")\.(?:"# + octet + #")\.(?:"# + octet + #")"#
        + #"(?![\w]|\.\d)"#
    /// What the ipv4 rule keeps and the verifier's ipv4 check accepts: loopback (127/8) and the
    /// unspecified address name no one ("connect to 127.0.0.1:5432 refused", "listening on 0.0.0.0").
    static func isKeptIPv4(firstOctet: String?, address: String) -> Bool { firstOctet == "127" || address == "0.0.0.0" }
    /// Anything made of hex groups and colons; `ipv6Groups` decides.
    static let ipv6Candidate = #"(?<![\w:.%])[0-9a-f]{0,4}(?::[0-9a-f]{0,4}){2,7}(?:(?<=:)\d{1,3}(?:\.\d{1,3}){3})?(?:%[\w.-]+)?(?![\w:])"#

    static let phoneNANP = #"(?<![\w.+*-])(?:\+?1[-. ]?)?(?:\(\d{3}\)[-. ]?|\d{3}[-. ])\d{3}[-. ]\d{4}(?![\w*]|[-.]\d)"#
    static let phoneInternational = #"(?<![\w+*])\+[1-9]\d{0,2}(?:[ .-]?\(?\d{1,5}\)?){1,6}(?![\w*]|[.-]\d)"#

    static let macAddress = #"(?<![\w:-])(?:[0-9a-f]{2}([:-]))(?:[0-9a-f]{2}\1){4}[0-9a-f]{2}(?![\w:-])"#
    static let fcmLabelledValue = #"[\w:-]{21,}"#
    /// 12+ characters: the seed's own 8-hex `device_identifier` is not hashed again.
    static let deviceValue = #"[0-9A-Za-z][0-9A-Za-z:_-]{11,}"#
    static let cardLabelledValue = #"\d[\d -]{10,21}\d"#
    static let cvvValue = #"\d{3,4}(?!\d)"#
    static let bankValue = #"\d[\d -]{3,30}\d(?!\d)"#
    static let gpsLabelledValue = #"[-+]?\d{1,3}\.\d{2,}"#
    /// With a digit: "invoice list loaded" is not an invoice number.
    static let invoiceIDValue = #"#?(?=[\w-]*\d)[\w-]{3,}"#
    static let phoneLabelledValue = #"\+?[\d(][\d ().-]{5,}\d"#

    /// A label starts a word ("reason:" is no "son:"), is not a path component, nor the redactor's "[TOKEN:".
    static let labelStart = #"(?<![A-Za-z0-9/\[])"#

    /// Any quoted string, JSON escapes included.
    static let anyQuoted = (double: #"(?:[^"\\\n]|\\.)+"#, single: #"(?:[^'\\\n]|\\.)+"#)

    /// Groups: 1 label, 2 separator, 3 double-quoted value, 4 single-quoted value, 5 bare value.
    static func labelledPattern(labels: String, value: String, quoted: (double: String, single: String)? = nil,
                                loose: Bool = false, after start: String = labelStart) -> String {
        let separator = loose ? #"(["']?(?:[ \t]*[:=#][ \t]*|[ \t]+|[ \t]+is[ \t]+))"# : #"(["']?[ \t]*[:=][ \t]*)"#
        let quoted = quoted ?? (double: value, single: value)
        return start + #"((?:"# + labels + #"))"# + separator
            + #"(?:"("# + quoted.double + #")"|'("# + quoted.single + #")'|("# + value + #"))"#
    }

    /// `label` `separator` `value`, where the value may also be quoted (JSON, shell). The label and separator
    /// are kept; `render` gets the unquoted value and returns its replacement (nil: not sensitive after all).
    /// A quoted value must match `quoted` (the unquoted `value` pattern when nil). `loose` also accepts a
    /// plain space as separator ("UDID 0000…", "account number 1234…").
    static func labelled(name: String, labels: String, value: String, quoted: (double: String, single: String)? = nil,
                         loose: Bool = false, after start: String = labelStart,
                         render: @escaping @Sendable (String) -> String?) -> Redactor.Rule {
        let pattern = labelledPattern(labels: labels, value: value, quoted: quoted, loose: loose, after: start)
        return Redactor.Rule(name: name, pattern: pattern) { match in
            let label = match[1] ?? "", separator = match[2] ?? ""
            for (group, quote) in [(3, "\""), (4, "'"), (5, "")] {
                if let inner = match[group] {
                    guard let out = render(inner) else { return nil }
                    return "\(label)\(separator)\(quote)\(out)\(quote)"
                }
            }
            return nil
        }
    }

    // MARK: transforms and checks

    /// Seed 000's token form: the first 4 characters, only when the value is long enough to keep them.
    static func tokenMask(_ token: String) -> String {
        token.count >= 12 ? "[TOKEN:\(token.prefix(4))...]" : "[TOKEN:...]"
    }

    /// Seed 000's FCM form: the first 20 characters and "...".
    static func truncate20(_ token: String) -> String { "\(token.prefix(20))..." }

    /// What the session-id rule writes: 12 lower-case hex characters.
    static func isSessionHash(_ value: String) -> Bool {
        value.utf8.count == 12 && value.allSatisfy { $0.isHexDigit && !$0.isUppercase }
    }

    static func sha256Prefix(_ value: String, _ length: Int) -> String {
        String(SHA256.hex(Array(value.utf8)).prefix(length))
    }

    /// A 40-hex string is a GNU build id, a git commit or a SHA-1 in crash reports: not a secret.
    /// Build-ids and commits (40), digests (32, 64, 128), trace and request ids (32): hex in one
    /// case. Unlabelled, they join a report to a build, an artifact or a server log; a hex
    /// secret under a label is still caught by the labelled rules.
    static func isHashShaped(_ text: String) -> Bool {
        [32, 40, 64, 128].contains(text.utf8.count) && text.allSatisfy(\.isHexDigit)
            && (text.allSatisfy { !$0.isUppercase } || text.allSatisfy { !$0.isLowercase })
    }

    static func luhn(_ digits: [Int]) -> Bool {
        var sum = 0
        for (index, digit) in digits.reversed().enumerated() {
            if index % 2 == 1 {
                let doubled = digit * 2
                sum += doubled > 9 ? doubled - 9 : doubled
            } else {
                sum += digit
            }
        }
        return sum % 10 == 0
    }

    /// 13–19 digits with a card network's prefix (so epoch times and counters are not cards) and a valid Luhn digit.
    static func isCardNumber(_ text: String) -> Bool {
        let digits = text.compactMap(\.wholeNumberValue)
        guard (13...19).contains(digits.count) else { return false }
        let prefix4 = digits.prefix(4).reduce(0) { $0 * 10 + $1 }
        let prefix2 = prefix4 / 100
        let network: Bool
        switch digits[0] {
        case 2: network = (2221...2720).contains(prefix4)
        case 3: network = [34, 37, 30, 36, 38, 35].contains(prefix2)
        case 4: network = true
        case 5: network = (51...55).contains(prefix2)
        case 6: network = prefix4 == 6011 || [62, 64, 65].contains(prefix2)
        default: network = false
        }
        return network && luhn(digits)
    }

    static func isValidIBAN(_ text: String) -> Bool {
        let compact = text.filter { !$0.isWhitespace }.uppercased()
        guard (15...34).contains(compact.count) else { return false }
        let rearranged = compact.dropFirst(4) + compact.prefix(4)
        var remainder = 0
        for character in rearranged {
            if let digit = character.wholeNumberValue, character.isASCII {
                remainder = (remainder * 10 + digit) % 97
            } else if let ascii = character.asciiValue, (65...90).contains(ascii) {
                remainder = (remainder * 100 + Int(ascii) - 55) % 97
            } else {
                return false
            }
        }
        return remainder == 1
    }

    /// The pattern may take an upper-case word after the IBAN: the longest valid prefix is redacted.
    static func redactIBAN(_ text: String) -> String? {
        var end = text.endIndex
        while end > text.startIndex {
            let candidate = text[..<end]
            if isValidIBAN(String(candidate)) { return "[PAYMENT_REDACTED]" + text[end...] }
            guard let space = candidate.lastIndex(of: " ") else { break }
            end = space
        }
        return nil
    }

    static func isCoordinatePair(_ latitude: String, _ longitude: String) -> Bool {
        guard let lat = Double(latitude), let lon = Double(longitude) else { return false }
        // Two fractions ("scale 0.1250, 0.8750") are ratios, not a place (that one is at sea off Africa).
        return abs(lat) <= 90 && abs(lon) <= 180 && max(abs(lat), abs(lon)) >= 1
    }

    /// The eight groups of an IPv6 address, or nil. Beyond the syntax, at least three groups must be
    /// written, so C++ "Abc::Def" and "::1" are not addresses.
    static func ipv6Groups(_ text: String) -> [String]? {
        var address = Substring(text)
        if let percent = address.firstIndex(of: "%") { address = address[..<percent] }
        var tail: [String] = []
        if address.contains("."), let colon = address.lastIndex(of: ":") {
            let octets = address[address.index(after: colon)...].split(separator: ".").compactMap { UInt8($0) }
            guard octets.count == 4 else { return nil }
            tail = [String(format: "%x", Int(octets[0]) << 8 | Int(octets[1])), String(format: "%x", Int(octets[2]) << 8 | Int(octets[3]))]
            address = address[...colon]
            if address.hasSuffix(":") && !address.hasSuffix("::") { address = address.dropLast() }
        }
        let halves = address.components(separatedBy: "::")
        guard halves.count <= 2 else { return nil }
        func groups(_ part: String) -> [String]? {
            if part.isEmpty { return [] }
            let pieces = part.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
            return pieces.allSatisfy({ (1...4).contains($0.count) && $0.allSatisfy(\.isHexDigit) }) ? pieces : nil
        }
        guard let head = groups(halves[0]) else { return nil }
        if halves.count == 1 {
            let all = head + tail
            return all.count == 8 ? all : nil
        }
        guard let rest = groups(halves[1]) else { return nil }
        let written = head + rest + tail
        guard written.count <= 7, written.count >= 3 else { return nil }
        return head + Array(repeating: "0", count: 8 - written.count) + rest + tail
    }

    static func maskIPv6(_ text: String) -> String? {
        guard let groups = ipv6Groups(text) else { return nil }
        return "\(groups[0]):\(groups[1]):x:x"
    }

    /// Seed 000's partial mask: the country code and area code stay, every other digit becomes "*".
    /// `+1-555-123-4567` → `+1-555-***-****`, `(555) 123-4567` → `(555) ***-****`.
    static func maskPhone(_ text: String) -> String? {
        let digitCount = text.filter(\.isASCII).filter(\.isNumber).count
        guard (7...15).contains(digitCount) else { return nil }
        let international = text.hasPrefix("+")
        var runs: [Int] = []   // lengths of the digit runs
        var inRun = false
        for character in text {
            if character.isASCII && character.isNumber {
                if inRun { runs[runs.count - 1] += 1 } else { runs.append(1) }
                inRun = true
            } else {
                inRun = false
            }
        }
        // "1-800-…" without "+" still has a country code in front.
        let groupsToKeep = international || (runs.first == 1 && runs.count > 2) ? 2 : 1
        var keep = 0
        for run in runs.prefix(groupsToKeep) {
            guard keep + run <= 6 else { break }
            keep += run
        }
        // One long run ("+4915112345678"), or too little left to mask: keep three digits only.
        if keep == 0 || digitCount - keep < 4 { keep = 3 }
        var seen = 0
        return String(text.map { character -> Character in
            guard character.isASCII && character.isNumber else { return character }
            seen += 1
            return seen <= keep ? character : "*"
        })
    }
}

/// The seed hints' words (lower case), all found in one pass over a text: a table by a word's first
/// two bytes, so that each position of the text costs one look-up. It replaced one `strstr` per word
/// and rule (a fifth of a redaction pass's time: Decision 0038).
struct HintWords: Sendable {
    /// A set of word numbers.
    struct Mask: Sendable {
        static let capacity = 256
        var bits = SIMD4<UInt64>()
        mutating func insert(_ number: Int) { bits[number / 64] |= 1 << UInt64(number % 64) }
        func intersects(_ other: Mask) -> Bool { bits & other.bits != SIMD4() }
    }

    private let words: [[UInt8]]
    /// Per first byte, the number of the one-byte word it is (-1: none).
    private let single: [Int16]
    /// Per first two bytes, where their words start in `ordered` (-1: none); `ordered` is sorted by them.
    private let start: [Int32]
    private let ordered: [(key: Int, number: Int)]
    /// One bit per first two bytes that start a word: 8 KiB that stay in the cache, read at every
    /// position before the 256 KiB `start` table, which is read only where a word may start.
    private let bigrams: [UInt64]

    init(_ list: [String]) {
        var seen: [String: Int] = [:]
        var words: [[UInt8]] = []
        for word in list where seen[word] == nil {
            precondition(!word.isEmpty && word.utf8.allSatisfy { $0 < 128 && !($0 >= 65 && $0 <= 90) }, "hint words are lower-case ASCII")
            seen[word] = words.count
            words.append(Array(word.utf8))
        }
        precondition(words.count <= Mask.capacity, "more hint words than a mask holds")
        self.words = words
        var single = [Int16](repeating: -1, count: 256)
        var ordered: [(key: Int, number: Int)] = []
        for (number, word) in words.enumerated() {
            if word.count == 1 { single[Int(word[0])] = Int16(number) } else { ordered.append((Int(word[0]) << 8 | Int(word[1]), number)) }
        }
        ordered.sort { $0.key < $1.key }
        var start = [Int32](repeating: -1, count: 65_536)
        var bigrams = [UInt64](repeating: 0, count: 65_536 / 64)
        for (index, entry) in ordered.enumerated().reversed() {
            start[entry.key] = Int32(index)
            bigrams[entry.key >> 6] |= 1 << UInt64(entry.key & 63)
        }
        self.bigrams = bigrams
        self.single = single
        self.start = start
        self.ordered = ordered
        self.numbers = seen
    }

    private let numbers: [String: Int]

    func mask(of list: [String]) -> Mask {
        var mask = Mask()
        for word in list { mask.insert(numbers[word]!) }
        return mask
    }

    /// The words `text` (lower case) holds.
    func find(in text: [UInt8]) -> Mask {
        var found = Mask()
        text.withUnsafeBufferPointer { text in
            bigrams.withUnsafeBufferPointer { bigrams in
            single.withUnsafeBufferPointer { single in
                for index in 0..<text.count {
                    let first = text[index]
                    let one = single[Int(first)]
                    if one >= 0 { found.insert(Int(one)) }
                    guard index + 1 < text.count else { break }
                    let key = Int(first) << 8 | Int(text[index + 1])
                    guard bigrams[key >> 6] & (1 << UInt64(key & 63)) != 0 else { continue }
                    var entry = Int(start[key])
                    guard entry >= 0 else { continue }
                    while entry < ordered.count, ordered[entry].key == key {
                        let word = words[ordered[entry].number]
                        if word.count <= text.count - index {
                            var same = true
                            for offset in 2..<max(2, word.count) where text[index + offset] != word[offset] { same = false; break }
                            if same { found.insert(ordered[entry].number) }
                        }
                        entry += 1
                    }
                }
            }
            }
        }
        return found
    }
}
