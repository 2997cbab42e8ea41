// A JSON document read token by token from its bytes, for the privacy passes that only need its
// strings and numbers (the outgoing check's first pass, the verify stage): Foundation's
// JSONSerialization built a tree of boxed values and dictionaries to be walked once and thrown
// away (Decision 0040). Strict: whatever JSONSerialization would refuse, or give back in another
// form than this reader says, throws `JSONBytes.Unsure`, and the caller reads the document with
// JSONSerialization instead.
import Foundation
import Glibc

struct JSONBytes {
    struct Unsure: Error {}

    let bytes: UnsafeRawBufferPointer
    var at = 0

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    /// Deeper than this is left to JSONSerialization (and its own limit).
    static let maxDepth = 400

    func peek() -> UInt8? { at < bytes.count ? bytes[at] : nil }

    var atEnd: Bool { at == bytes.count }

    mutating func skipSpace() {
        while let b = peek(), b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D { at += 1 }
    }

    mutating func expect(_ wanted: UInt8) throws {
        guard peek() == wanted else { throw Unsure() }
        at += 1
    }

    /// After a member or an element: true when another follows (its comma read), false at the
    /// container's end (`close` read).
    mutating func another(_ close: UInt8) throws -> Bool {
        skipSpace()
        if peek() == UInt8(ascii: ",") {
            at += 1
            skipSpace()
            return true
        }
        try expect(close)
        return false
    }

    /// At "{" or "[": reads it; true when the container is empty (its end read too).
    mutating func open() -> Bool {
        let close = peek() == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]")
        at += 1
        skipSpace()
        guard peek() == close else { return false }
        at += 1
        return true
    }

    /// A member's name and its colon.
    mutating func name() throws -> String {
        guard peek() == UInt8(ascii: "\"") else { throw Unsure() }
        let name = try string()
        skipSpace()
        try expect(UInt8(ascii: ":"))
        skipSpace()
        return name
    }

    /// true, false or null.
    mutating func literal() throws -> Bool? {
        switch peek() {
        case UInt8(ascii: "t"): try expectWord("true"); return true
        case UInt8(ascii: "f"): try expectWord("false"); return false
        default: try expectWord("null"); return nil
        }
    }

    private mutating func expectWord(_ word: StaticString) throws {
        let count = word.utf8CodeUnitCount
        guard at + count <= bytes.count, memcmp(bytes.baseAddress! + at, word.utf8Start, count) == 0 else { throw Unsure() }
        at += count
    }

    /// A number, in JSON's grammar strictly. With `digits`, also what JSONSerialization's NSNumber
    /// for it gives as `stringValue` (how the full passes read a number): an integer of up to 18
    /// digits is that as written; any other number is read by JSONSerialization here too (it
    /// refuses some, "1e400", and writes others its way).
    mutating func number(digits: Bool) throws -> String? {
        let start = at
        @inline(__always) func isDigit(_ b: UInt8?) -> Bool { b.map { $0 &- 48 <= 9 } ?? false }
        if peek() == UInt8(ascii: "-") { at += 1 }
        guard isDigit(peek()) else { throw Unsure() }
        if peek() == UInt8(ascii: "0") {
            at += 1
        } else {
            while isDigit(peek()) { at += 1 }
        }
        var integer = true
        if peek() == UInt8(ascii: ".") {
            integer = false
            at += 1
            guard isDigit(peek()) else { throw Unsure() }
            while isDigit(peek()) { at += 1 }
        }
        if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
            integer = false
            at += 1
            if peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") { at += 1 }
            guard isDigit(peek()) else { throw Unsure() }
            while isDigit(peek()) { at += 1 }
        }
        let raw = UnsafeRawBufferPointer(rebasing: bytes[start..<at])
        if integer, raw.count <= 18, !(raw.count >= 2 && raw[0] == UInt8(ascii: "-") && raw[1] == UInt8(ascii: "0")) {
            return digits ? String(decoding: raw, as: UTF8.self) : nil
        }
        guard let number = (try? JSONSerialization.jsonObject(with: Data(raw), options: [.fragmentsAllowed])) as? NSNumber else {
            throw Unsure()
        }
        return digits ? number.stringValue : nil
    }

    /// Any value, read for its syntax only.
    mutating func skipValue(depth: Int) throws {
        guard depth < Self.maxDepth else { throw Unsure() }
        switch peek() {
        case UInt8(ascii: "\""): _ = try string()
        case UInt8(ascii: "{"):
            guard !open() else { return }
            repeat {
                _ = try name()
                try skipValue(depth: depth + 1)
            } while try another(UInt8(ascii: "}"))
        case UInt8(ascii: "["):
            guard !open() else { return }
            repeat { try skipValue(depth: depth + 1) } while try another(UInt8(ascii: "]"))
        case UInt8(ascii: "t"), UInt8(ascii: "f"), UInt8(ascii: "n"): _ = try literal()
        default: _ = try number(digits: false)
        }
    }

    /// A string from its opening quote: its bytes as they are when nothing is escaped, decoded
    /// otherwise. Not UTF-8, a control character, a bad escape or a lone surrogate: unsure.
    mutating func string() throws -> String {
        at += 1
        let start = at
        var escaped = false
        // The closing quote: a plain loop over the bytes (no optional per byte).
        let count = bytes.count
        var cursor = at
        while cursor < count {
            let b = bytes[cursor]
            if b == UInt8(ascii: "\"") { break }
            if b < 0x20 { throw Unsure() }
            if b == UInt8(ascii: "\\") {
                escaped = true
                cursor += 2
            } else {
                cursor += 1
            }
        }
        at = cursor
        guard at < count else { throw Unsure() }
        let raw = UnsafeRawBufferPointer(rebasing: bytes[start..<at])
        at += 1
        guard escaped else {
            guard let text = String(validating: raw, as: UTF8.self) else { throw Unsure() }
            return text
        }
        var out: [UInt8] = []
        out.reserveCapacity(raw.count)
        var i = 0
        func hex4(_ from: Int) throws -> UInt32 {
            guard from + 4 <= raw.count else { throw Unsure() }
            var value: UInt32 = 0
            for b in raw[from..<(from + 4)] {
                let digit: UInt32
                switch b {
                case 48...57: digit = UInt32(b) - 48
                case 97...102: digit = UInt32(b) - 87
                case 65...70: digit = UInt32(b) - 55
                default: throw Unsure()
                }
                value = value * 16 + digit
            }
            return value
        }
        while i < raw.count {
            let b = raw[i]
            guard b == UInt8(ascii: "\\") else {
                out.append(b)
                i += 1
                continue
            }
            guard i + 1 < raw.count else { throw Unsure() }
            let kind = raw[i + 1]
            i += 2
            switch kind {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(kind)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = try hex4(i)
                i += 4
                if (0xD800...0xDBFF).contains(scalar) {
                    guard i + 6 <= raw.count, raw[i] == UInt8(ascii: "\\"), raw[i + 1] == UInt8(ascii: "u") else { throw Unsure() }
                    let low = try hex4(i + 2)
                    guard (0xDC00...0xDFFF).contains(low) else { throw Unsure() }
                    i += 6
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00...0xDFFF).contains(scalar) {
                    throw Unsure()
                }
                guard let decoded = Unicode.Scalar(scalar) else { throw Unsure() }
                out.append(contentsOf: String(decoded).utf8)
            default: throw Unsure()
            }
        }
        guard let text = String(validating: out, as: UTF8.self) else { throw Unsure() }
        return text
    }
}
