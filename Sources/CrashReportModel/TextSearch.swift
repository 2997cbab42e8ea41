// Literal substring search on UTF-8 bytes. Foundation's `contains(_:)` on Linux bridges both
// strings to NSString and searches UTF-16 (CFStringFind): 27 % of `CrashGrouping.issueKey`'s time
// in perf, for markers that are plain ASCII. It compares bytes where Foundation compares whole
// characters: the answers differ only where a combining mark joins a character of the match
// ("cafe\u{301}" holds "cafe" here, not for Foundation), which code names and paths after these
// markers do not have (TextSearchTests pins both down).
import Foundation

extension String {
    /// `trimmingCharacters(in: .whitespaces)`, without its NSString round trip when there is
    /// nothing to trim (the usual case): ends that are ASCII and not a space or a tab are kept.
    func trimmingWhitespace() -> String {
        guard let first = utf8.first, let last = utf8.last else { return self }
        func kept(_ byte: UInt8) -> Bool { byte < 0x80 && byte != UInt8(ascii: " ") && byte != UInt8(ascii: "\t") }
        return kept(first) && kept(last) ? self : trimmingCharacters(in: .whitespaces)
    }
}

extension StringProtocol {
    /// Whether `needle` occurs in the text, byte for byte, as `contains` answers (false for "").
    func includes(_ needle: String) -> Bool {
        var needle = needle
        return needle.withUTF8 { wanted in
            if wanted.isEmpty { return false }   // as Foundation answers for ""
            if let found = utf8.withContiguousStorageIfAvailable({ Self.search(wanted, in: $0) }) { return found }
            var copy = String(self)
            return copy.withUTF8 { Self.search(wanted, in: $0) }
        }
    }

    private static func search(_ wanted: UnsafeBufferPointer<UInt8>, in text: UnsafeBufferPointer<UInt8>) -> Bool {
        guard text.count >= wanted.count else { return false }
        let first = wanted[0]
        var start = 0
        while start <= text.count - wanted.count {
            if text[start] == first {
                var offset = 1
                while offset < wanted.count, text[start + offset] == wanted[offset] { offset += 1 }
                if offset == wanted.count { return true }
            }
            start += 1
        }
        return false
    }
}
