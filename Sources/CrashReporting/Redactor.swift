// Redaction of free text (log messages, metadata values) with seed 000's log-message patterns:
// emails, passwords, tokens, bearer tokens, phone numbers, IP addresses, invoice numbers, and
// long opaque tokens. Rules are data: configurable, defaults are seed 000's.
import Foundation

public struct Redactor: Sendable {
    public struct Rule: Sendable {
        public var name: String
        public var pattern: String
        /// NSRegularExpression template ($1… for groups).
        public var template: String

        public init(name: String, pattern: String, template: String) {
            self.name = name
            self.pattern = pattern
            self.template = template
        }
    }

    public let rules: [Rule]
    private let compiled: [(NSRegularExpression, String)]

    public init(rules: [Rule]) {
        self.rules = rules
        compiled = rules.compactMap { rule in
            (try? NSRegularExpression(pattern: rule.pattern, options: [.caseInsensitive])).map { ($0, rule.template) }
        }
    }

    /// Seed 000's rules, most specific first (so "password=hunter2@x.io" is a password, not an email).
    public static let seed000 = Redactor(rules: [
        Rule(name: "password", pattern: #"(password|passwd|pwd)(\s*[:=]\s*)\S+"#, template: "$1$2[REDACTED]"),
        Rule(name: "bearer", pattern: #"Bearer\s+([\w-]{4})[\w.~+/=-]*"#, template: "Bearer [TOKEN:$1...]"),
        Rule(name: "token", pattern: #"(token|api[_-]?key|secret)(\s*[:=]\s*)([\w.-]{4})[\w.-]{6,}"#, template: "$1$2[TOKEN:$3...]"),
        Rule(name: "email", pattern: #"[\w.+-]+@[\w-]+(\.[\w-]+)*\.[a-z]{2,}"#, template: "[EMAIL_REDACTED]"),
        Rule(name: "invoice", pattern: #"\b(INV-\d{4}-)\d+"#, template: "$1[REDACTED]"),
        Rule(name: "invoice-id", pattern: #"(invoice[_-]?id\s*[:=]\s*)\w+"#, template: "$1[REDACTED]"),
        Rule(name: "ipv4", pattern: #"\b(\d{1,3})\.(\d{1,3})\.\d{1,3}\.\d{1,3}\b"#, template: "$1.$2.x.x"),
        Rule(name: "phone", pattern: #"(\+?\d{1,3}[-. ]?)?\b(\d{3})[-. ]?\d{3}[-. ]?\d{4}\b"#, template: "$1$2-***-****"),
        Rule(name: "long-token", pattern: #"\b([A-Za-z0-9]{4})[A-Za-z0-9]{28,}\b"#, template: "[TOKEN:$1...]"),
    ])

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

    public func redact(_ text: String) -> String {
        guard !text.isEmpty else { return text }
        var result = text
        for (expression, template) in compiled {
            let range = NSRange(result.startIndex..., in: result)
            result = expression.stringByReplacingMatches(in: result, options: [], range: range, withTemplate: template)
        }
        return result
    }
}
