// A small JSON reader for record lines, yielding native Swift values (String, Int, UInt64, Double,
// Bool, NSNull, [Any], [String: Any]). JSONSerialization yields NSNumber, and every `as? Int` on it
// goes through bridging and a protocol-conformance search that cost crashtool ~1 ms per run.
// Strict: anything that is not one complete JSON value is nil. Fuzzed with the record reader.
import Foundation

enum JSONLine {
    /// Parses `bytes` as one JSON value (surrounding whitespace allowed); nil if it is not valid.
    static func parse(_ bytes: Data) -> Any? {
        bytes.withUnsafeBytes { raw -> Any? in
            var parser = Parser(bytes: raw.bindMemory(to: UInt8.self))
            guard let value = parser.value(depth: 0) else { return nil }
            parser.skipWhitespace()
            return parser.index == parser.bytes.count ? value : nil
        }
    }

    private struct Parser {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        mutating func skipWhitespace() {
            while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        }

        mutating func value(depth: Int) -> Any? {
            guard depth < 64 else { return nil }
            skipWhitespace()
            guard index < bytes.count else { return nil }
            switch bytes[index] {
            case UInt8(ascii: "{"): return object(depth: depth)
            case UInt8(ascii: "["): return array(depth: depth)
            case UInt8(ascii: "\""): return string()
            case UInt8(ascii: "t"): return literal("true", true)
            case UInt8(ascii: "f"): return literal("false", false)
            case UInt8(ascii: "n"): return literal("null", NSNull())
            default: return number()
            }
        }

        mutating func literal(_ text: StaticString, _ value: Any) -> Any? {
            let count = text.utf8CodeUnitCount
            guard index + count <= bytes.count else { return nil }
            for offset in 0..<count where bytes[index + offset] != text.utf8Start[offset] { return nil }
            index += count
            return value
        }

        mutating func object(depth: Int) -> [String: Any]? {
            index += 1
            var result: [String: Any] = [:]
            skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                index += 1
                return result
            }
            while true {
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\""), let key = string() else { return nil }
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return nil }
                index += 1
                guard let member = value(depth: depth + 1) else { return nil }
                result[key] = member
                skipWhitespace()
                guard index < bytes.count else { return nil }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                if bytes[index] == UInt8(ascii: "}") { index += 1; return result }
                return nil
            }
        }

        mutating func array(depth: Int) -> [Any]? {
            index += 1
            var result: [Any] = []
            skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                index += 1
                return result
            }
            while true {
                guard let element = value(depth: depth + 1) else { return nil }
                result.append(element)
                skipWhitespace()
                guard index < bytes.count else { return nil }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                if bytes[index] == UInt8(ascii: "]") { index += 1; return result }
                return nil
            }
        }

        mutating func string() -> String? { JSONStringReader.read(bytes, at: &index) }

        mutating func number() -> Any? {
            let start = index
            if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
            var isInteger = true
            var digits = 0
            while index < bytes.count {
                let c = bytes[index]
                if c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") {
                    digits += 1
                } else if c == UInt8(ascii: ".") || c == UInt8(ascii: "e") || c == UInt8(ascii: "E") || c == UInt8(ascii: "+")
                            || (c == UInt8(ascii: "-") && index > start) {
                    isInteger = false
                } else {
                    break
                }
                index += 1
            }
            guard digits > 0 else { return nil }
            let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
            if isInteger {
                if let value = Int(text) { return value }
                if let value = UInt64(text) { return value }
            }
            guard let value = Double(text), value.isFinite else { return nil }
            return value
        }
    }
}

/// A JSON string read from its bytes, strictly: JSON's escapes, surrogate pairs joined, UTF-8
/// checked. Shared by the record reader (`JSONLine`) and the runtime's privacy passes (which
/// must read a string exactly as JSONSerialization does, or not at all).
public enum JSONStringReader {
    /// Where the run of bytes a JSON string holds as they are ends, from `start`: the index of the
    /// first quote, backslash or control character (below 0x20), or `bytes.count`; and whether the
    /// run is ASCII. Eight bytes at a time: a word has a byte below n (n <= 0x80) exactly when
    /// (w - 0x01…01 * n) & ~w & 0x80…80 is not zero, and a byte equal to c when w ^ (0x01…01 * c)
    /// has a byte below 1; the word that has one is read byte by byte.
    @inlinable public static func plainRun(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> (end: Int, ascii: Bool) {
        guard let base = bytes.baseAddress, start < bytes.count else { return (max(start, bytes.count), true) }
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        func below(_ word: UInt64, _ n: UInt64) -> Bool { (word &- ones &* n) & ~word & highs != 0 }
        var index = start
        var seen: UInt64 = 0
        while index + 8 <= bytes.count {
            let word = UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self)
            if below(word, 0x20) || below(word ^ (ones &* 0x22), 1) || below(word ^ (ones &* 0x5C), 1) { break }
            seen |= word
            index += 8
        }
        var high = UInt8(truncatingIfNeeded: (seen & highs) == 0 ? 0 : 0x80)
        while index < bytes.count {
            let byte = base[index]
            if byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { break }
            high |= byte
            index += 1
        }
        return (index, high < 0x80)
    }

    /// The string whose opening quote is at `index`; `index` ends past its closing quote. Nil for
    /// what JSON does not allow: a control character, a bad escape, a lone surrogate, bytes that
    /// are not UTF-8, no closing quote.
    public static func read(_ bytes: UnsafeBufferPointer<UInt8>, at index: inout Int) -> String? {
        index += 1   // opening quote
        let start = index
        // Fast path: no escapes.
        let (end, ascii) = plainRun(bytes, from: start)
        index = end
        guard index < bytes.count else { return nil }
        if bytes[index] == UInt8(ascii: "\"") {
            let run = UnsafeBufferPointer(rebasing: bytes[start..<index])
            // ASCII is valid UTF-8 as it is: no generic validation (a metadata look-up a call).
            let text = ascii ? String(decoding: run, as: UTF8.self) : String(validating: run, as: UTF8.self)
            index += 1
            return text
        }
        // Escapes. First where the string ends (the first quote no backslash escapes), then its
        // bytes decoded into an array of that many (an escape is never shorter than what it
        // stands for), byte by byte: JSON inside JSON has an escape every few bytes, and
        // appending each run between two of them was most of reading such a string.
        var close = index
        while true {
            guard close < bytes.count else { return nil }
            let c = bytes[close]
            if c == UInt8(ascii: "\"") { break }
            if c < 0x20 { return nil }
            close = plainRun(bytes, from: close + 2).end   // past a backslash and the byte it escapes
        }
        var failed = false
        let decoded = [UInt8](unsafeUninitializedCapacity: close - start) { out, written in
            var from = start, to = 0
            func hex4() -> UInt32? {
                guard from + 4 <= close else { return nil }
                var value: UInt32 = 0
                for _ in 0..<4 {
                    let c = bytes[from]
                    let digit: UInt8
                    switch c {
                    case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = c - UInt8(ascii: "0")
                    case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = c - UInt8(ascii: "a") + 10
                    case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = c - UInt8(ascii: "A") + 10
                    default: return nil
                    }
                    value = value << 4 | UInt32(digit)
                    from += 1
                }
                return value
            }
            decoding: while from < close {
                let c = bytes[from]
                guard c == UInt8(ascii: "\\") else {
                    out[to] = c
                    to += 1
                    from += 1
                    continue
                }
                let escape = bytes[from + 1]   // before `close`: the scan above stepped over it
                from += 2
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out[to] = escape
                case UInt8(ascii: "b"): out[to] = 0x08
                case UInt8(ascii: "f"): out[to] = 0x0C
                case UInt8(ascii: "n"): out[to] = 0x0A
                case UInt8(ascii: "r"): out[to] = 0x0D
                case UInt8(ascii: "t"): out[to] = 0x09
                case UInt8(ascii: "u"):
                    guard var code = hex4() else { failed = true; break decoding }
                    if (0xD800...0xDBFF).contains(code) {   // a surrogate pair
                        guard from + 6 <= close, bytes[from] == UInt8(ascii: "\\"), bytes[from + 1] == UInt8(ascii: "u") else { failed = true; break decoding }
                        from += 2
                        guard let low = hex4(), (0xDC00...0xDFFF).contains(low) else { failed = true; break decoding }
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let scalar = Unicode.Scalar(code) else { failed = true; break decoding }
                    UTF8.encode(scalar) { byte in
                        out[to] = byte
                        to += 1
                    }
                    continue decoding
                default:
                    failed = true
                    break decoding
                }
                to += 1
            }
            written = to
        }
        guard !failed else { return nil }
        index = close + 1
        return String(validating: decoded, as: UTF8.self)
    }
}
