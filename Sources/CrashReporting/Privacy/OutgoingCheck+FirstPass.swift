// The outgoing check's first pass (Decision 0040): almost every body has nothing to mask, and
// for those the full pass paid for a Foundation JSON tree, a copy of every object and array it
// rebuilt, and a walk over both. The first pass reads each line's JSON from its bytes and hands
// the scanner the same strings, under the same keys, as the full pass does (`stringFindings`,
// the same memo), and the same neighbouring texts of each array (`findingsAcross`). It only
// answers "nothing to mask"; at the first finding, or at anything it does not read exactly as
// JSONSerialization would (a number with a fraction or an exponent under a key, a lone surrogate,
// bytes that are not UTF-8, a line that is not JSON, "message" twice in one object), the full
// pass runs and decides. `LeakCorpusTests` checks the two agree over the corpus.
import Foundation
import Glibc

extension OutgoingCheck {
    /// True when the full pass would mask nothing in these lines; false when it might.
    static func nothingToMask(_ lines: [Data.SubSequence], _ scanner: MemoScanner) -> Bool {
        for line in lines where !line.isEmpty {
            let outcome: FirstPass.Outcome = line.withUnsafeBytes { bytes in
                var pass = FirstPass(bytes: bytes, scanner: scanner)
                do {
                    pass.skipSpace()
                    _ = try pass.value(key: nil, depth: 0)
                    pass.skipSpace()
                    return pass.at == bytes.count ? .clean : .unsure
                } catch {
                    return error as? FirstPass.Outcome ?? .unsure
                }
            }
            guard outcome == .clean else { return false }
        }
        return true
    }
}

struct FirstPass {
    enum Outcome: Error { case clean, found, unsure }

    /// What a value gives its array for the split-secret check: a string, or an object's
    /// "message" (else "msg") when that is a string.
    enum Value {
        case text(String)
        case object(message: String?)
        case other

        var acrossText: String? {
            switch self {
            case .text(let text): text
            case .object(let message): message
            case .other: nil
            }
        }
    }

    let bytes: UnsafeRawBufferPointer
    let scanner: MemoScanner
    var at = 0
    private var machine: [String: Bool] = [:]

    init(bytes: UnsafeRawBufferPointer, scanner: MemoScanner) {
        self.bytes = bytes
        self.scanner = scanner
    }

    private func byte(_ offset: Int) -> UInt8? { offset < bytes.count ? bytes[offset] : nil }

    mutating func skipSpace() {
        while let b = byte(at), b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D { at += 1 }
    }

    private mutating func expect(_ wanted: UInt8) throws {
        guard byte(at) == wanted else { throw Outcome.unsure }
        at += 1
    }

    mutating func value(key: String?, depth: Int) throws -> Value {
        guard depth < 400 else { throw Outcome.unsure }
        switch byte(at) {
        case UInt8(ascii: "{"): return try object(depth: depth)
        case UInt8(ascii: "["): return try array(key: key, depth: depth)
        case UInt8(ascii: "\""):
            let text = try string()
            if !OutgoingCheck.stringFindings(text, key: key, scanner).isEmpty { throw Outcome.found }
            return .text(text)
        case UInt8(ascii: "t"): try literal("true")
        case UInt8(ascii: "f"): try literal("false")
        case UInt8(ascii: "n"): try literal("null")
        default: try number(key: key)
        }
        return .other
    }

    private mutating func literal(_ word: StaticString) throws {
        let count = word.utf8CodeUnitCount
        guard at + count <= bytes.count, memcmp(bytes.baseAddress! + at, word.utf8Start, count) == 0 else { throw Outcome.unsure }
        at += count
    }

    /// JSON's number grammar, strictly. Under a key the full pass reads a number as its NSNumber's
    /// `stringValue`: an integer of up to 18 digits is that as written; any other number is read
    /// by JSONSerialization here too.
    private mutating func number(key: String?) throws {
        let start = at
        if byte(at) == UInt8(ascii: "-") { at += 1 }
        func isDigit(_ b: UInt8?) -> Bool { b.map { $0 >= 48 && $0 <= 57 } ?? false }
        guard isDigit(byte(at)) else { throw Outcome.unsure }
        if byte(at) == UInt8(ascii: "0") {
            at += 1
        } else {
            while isDigit(byte(at)) { at += 1 }
        }
        var integer = true
        if byte(at) == UInt8(ascii: ".") {
            integer = false
            at += 1
            guard isDigit(byte(at)) else { throw Outcome.unsure }
            while isDigit(byte(at)) { at += 1 }
        }
        if byte(at) == UInt8(ascii: "e") || byte(at) == UInt8(ascii: "E") {
            integer = false
            at += 1
            if byte(at) == UInt8(ascii: "+") || byte(at) == UInt8(ascii: "-") { at += 1 }
            guard isDigit(byte(at)) else { throw Outcome.unsure }
            while isDigit(byte(at)) { at += 1 }
        }
        let raw = UnsafeRawBufferPointer(rebasing: bytes[start..<at])
        let digits: String
        if integer, raw.count <= 18, !(raw.count >= 2 && raw[0] == UInt8(ascii: "-") && raw[1] == UInt8(ascii: "0")) {
            guard key != nil else { return }
            digits = String(decoding: raw, as: UTF8.self)   // an Int's NSNumber reads as written
        } else {
            // Foundation's own reading: it refuses some ("1e400"), and writes others its way.
            guard let number = (try? JSONSerialization.jsonObject(with: Data(raw), options: [.fragmentsAllowed])) as? NSNumber else {
                throw Outcome.unsure
            }
            guard key != nil else { return }
            digits = number.stringValue
        }
        if let key, !scanner.findings(in: digits, key: key).isEmpty { throw Outcome.found }
    }

    private mutating func isMachineKey(_ name: String) -> Bool {
        if let known = machine[name] { return known }
        let answer = OutgoingCheck.machineKeys.contains(name.lowercased())
        if machine.count < 10_000 { machine[name] = answer }
        return answer
    }

    private mutating func object(depth: Int) throws -> Value {
        at += 1
        skipSpace()
        if byte(at) == UInt8(ascii: "}") {
            at += 1
            return .object(message: nil)
        }
        // "message" and "msg" as the full pass sees them: absent, a string, or something else.
        var message: Value?, msg: Value?
        while true {
            guard byte(at) == UInt8(ascii: "\"") else { throw Outcome.unsure }
            let name = try string()
            if !scanner.findings(in: name, key: nil).isEmpty { throw Outcome.found }
            skipSpace()
            try expect(UInt8(ascii: ":"))
            skipSpace()
            let isMessage = name == "message", isMsg = name == "msg"
            let child: Value
            if !isMessage && !isMsg && isMachineKey(name) {
                try skip(depth: depth + 1)
                child = .other
            } else {
                child = try value(key: name, depth: depth + 1)
            }
            // A repeated member: which one the full pass keeps is Foundation's choice.
            if isMessage {
                guard message == nil else { throw Outcome.unsure }
                message = child
            } else if isMsg {
                guard msg == nil else { throw Outcome.unsure }
                msg = child
            }
            skipSpace()
            if byte(at) == UInt8(ascii: ",") {
                at += 1
                skipSpace()
                continue
            }
            try expect(UInt8(ascii: "}"))
            break
        }
        let chosen = message ?? msg
        if case .text(let text)? = chosen { return .object(message: text) }
        return .object(message: nil)
    }

    private mutating func array(key: String?, depth: Int) throws -> Value {
        at += 1
        skipSpace()
        if byte(at) == UInt8(ascii: "]") {
            at += 1
            return .other
        }
        var texts: [String] = []
        while true {
            if let text = try value(key: key, depth: depth + 1).acrossText { texts.append(text) }
            skipSpace()
            if byte(at) == UInt8(ascii: ",") {
                at += 1
                skipSpace()
                continue
            }
            try expect(UInt8(ascii: "]"))
            break
        }
        if texts.count > 1, scanner.scanner.findingsAcross(texts).contains(where: { !$0.isEmpty }) { throw Outcome.found }
        return .other
    }

    /// A machine field's value: read for its syntax only.
    private mutating func skip(depth: Int) throws {
        guard depth < 400 else { throw Outcome.unsure }
        switch byte(at) {
        case UInt8(ascii: "\""): _ = try string()
        case UInt8(ascii: "t"): try literal("true")
        case UInt8(ascii: "f"): try literal("false")
        case UInt8(ascii: "n"): try literal("null")
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            let isObject = byte(at) == UInt8(ascii: "{")
            let close = isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")
            at += 1
            skipSpace()
            if byte(at) == close {
                at += 1
                return
            }
            while true {
                if isObject {
                    guard byte(at) == UInt8(ascii: "\"") else { throw Outcome.unsure }
                    _ = try string()
                    skipSpace()
                    try expect(UInt8(ascii: ":"))
                    skipSpace()
                }
                try skip(depth: depth + 1)
                skipSpace()
                if byte(at) == UInt8(ascii: ",") {
                    at += 1
                    skipSpace()
                    continue
                }
                try expect(close)
                return
            }
        default: try number(key: nil)
        }
    }

    /// A string from its opening quote: its bytes as they are when nothing is escaped, decoded
    /// otherwise. Not UTF-8, a control character, a bad escape or a lone surrogate: unsure.
    private mutating func string() throws -> String {
        at += 1
        let start = at
        var escaped = false
        while let b = byte(at), b != UInt8(ascii: "\"") {
            if b < 0x20 { throw Outcome.unsure }
            if b == UInt8(ascii: "\\") {
                escaped = true
                at += 2
            } else {
                at += 1
            }
        }
        guard at < bytes.count else { throw Outcome.unsure }
        let raw = UnsafeRawBufferPointer(rebasing: bytes[start..<at])
        at += 1
        guard escaped else {
            guard let text = String(validating: raw, as: UTF8.self) else { throw Outcome.unsure }
            return text
        }
        var out: [UInt8] = []
        out.reserveCapacity(raw.count)
        var i = 0
        func hex4(_ from: Int) throws -> UInt32 {
            guard from + 4 <= raw.count else { throw Outcome.unsure }
            var value: UInt32 = 0
            for b in raw[from..<(from + 4)] {
                let digit: UInt32
                switch b {
                case 48...57: digit = UInt32(b) - 48
                case 97...102: digit = UInt32(b) - 87
                case 65...70: digit = UInt32(b) - 55
                default: throw Outcome.unsure
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
            guard i + 1 < raw.count else { throw Outcome.unsure }
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
                    guard i + 6 <= raw.count, raw[i] == UInt8(ascii: "\\"), raw[i + 1] == UInt8(ascii: "u") else { throw Outcome.unsure }
                    let low = try hex4(i + 2)
                    guard (0xDC00...0xDFFF).contains(low) else { throw Outcome.unsure }
                    i += 6
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00...0xDFFF).contains(scalar) {
                    throw Outcome.unsure
                }
                guard let decoded = Unicode.Scalar(scalar) else { throw Outcome.unsure }
                out.append(contentsOf: String(decoded).utf8)
            default: throw Outcome.unsure
            }
        }
        guard let text = String(validating: out, as: UTF8.self) else { throw Outcome.unsure }
        return text
    }
}
