// A JSON document read token by token from its bytes, for the privacy passes that only need its
// strings and numbers (the outgoing check's first pass, the verify stage): Foundation's
// JSONSerialization built a tree of boxed values and dictionaries to be walked once and thrown
// away (Decision 0040). Strict: whatever JSONSerialization would refuse, or give back in another
// form than this reader says, throws `JSONBytes.Unsure`, and the caller reads the document with
// JSONSerialization instead.
import CrashReportModel
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

    /// A member's name and its colon when the name is plain ASCII (no escape): its bytes, which
    /// the caller reads without making a `String` when it has seen them lately. Nil, having
    /// read nothing, for any other name (`name()` reads it then).
    mutating func plainName() throws -> UnsafeBufferPointer<UInt8>? {
        guard peek() == UInt8(ascii: "\""), let base = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else { throw Unsure() }
        let utf8 = UnsafeBufferPointer(start: base, count: bytes.count)
        let (end, ascii) = JSONStringReader.plainRun(utf8, from: at + 1)
        guard ascii, end < bytes.count, bytes[end] == UInt8(ascii: "\"") else { return nil }
        let name = UnsafeBufferPointer(rebasing: utf8[(at + 1)..<end])
        at = end + 1
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

    /// A string from its opening quote (`JSONStringReader`, the record reader's): a control
    /// character, a bad escape, a lone surrogate or bytes that are not UTF-8 are unsure.
    mutating func string() throws -> String {
        let utf8 = UnsafeBufferPointer(start: bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), count: bytes.count)
        guard let text = JSONStringReader.read(utf8, at: &at) else { throw Unsure() }
        return text
    }
}
