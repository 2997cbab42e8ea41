// The outgoing check's first pass (Decision 0040): almost every body has nothing to mask, and
// for those the full pass paid for a Foundation JSON tree, a copy of every object and array it
// rebuilt, and a walk over both. The first pass reads each line's JSON from its bytes
// (`JSONBytes`) and hands the scanner the same strings, under the same keys, as the full pass
// does (`stringFindings`, the same memo), and the same neighbouring texts of each array
// (`findingsAcross`). It only answers "nothing to mask"; at the first finding, or at anything it
// does not read exactly as JSONSerialization would (a number it cannot vouch for, a lone
// surrogate, bytes that are not UTF-8, a line that is not JSON, "message" twice in one object),
// the full pass runs and decides. `OutgoingFirstPassTests` checks the two agree.
import Foundation

extension OutgoingCheck {
    /// True when the full pass would mask nothing in these lines; false when it might.
    static func nothingToMask(_ lines: [Data.SubSequence], _ scanner: MemoScanner) -> Bool {
        for line in lines where !line.isEmpty {
            let clean: Bool = line.withUnsafeBytes { bytes in
                var pass = FirstPass(json: JSONBytes(bytes), scanner: scanner)
                do {
                    pass.json.skipSpace()
                    _ = try pass.value(key: nil, facts: nil, depth: 0)
                    pass.json.skipSpace()
                    return pass.json.atEnd
                } catch {
                    return false   // found, or not read as Foundation would: the full pass decides
                }
            }
            guard clean else { return false }
        }
        return true
    }
}

struct FirstPass {
    /// Something the full pass would mask.
    struct Found: Error {}

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

    var json: JSONBytes
    let scanner: MemoScanner

    init(json: JSONBytes, scanner: MemoScanner) {
        self.json = json
        self.scanner = scanner
    }

    /// `facts`: the key's (`MemoScanner.facts`), nil exactly when `key` is nil.
    mutating func value(key: String?, facts: MemoScanner.KeyFacts?, depth: Int) throws -> Value {
        guard depth < JSONBytes.maxDepth else { throw JSONBytes.Unsure() }
        switch json.peek() {
        case UInt8(ascii: "{"): return try object(depth: depth)
        case UInt8(ascii: "["): return try array(key: key, facts: facts, depth: depth)
        case UInt8(ascii: "\""):
            let text = try json.string()
            if !OutgoingCheck.stringFindings(text, key: key, facts: facts, scanner).isEmpty { throw Found() }
            return .text(text)
        case UInt8(ascii: "t"), UInt8(ascii: "f"), UInt8(ascii: "n"):
            _ = try json.literal()
        default:
            // Under a key the full pass reads a number as its digits (booleans it leaves alone).
            if let digits = try json.number(digits: key != nil), let key, let facts,
               !scanner.findings(in: digits, key: key, facts: facts).isEmpty { throw Found() }
        }
        return .other
    }

    private mutating func object(depth: Int) throws -> Value {
        guard !json.open() else { return .object(message: nil) }
        // "message" and "msg" as the full pass sees them: absent, a string, or something else.
        var message: Value?, msg: Value?
        repeat {
            let name: String, facts: MemoScanner.KeyFacts
            if let bytes = try json.plainName() {
                (name, facts) = scanner.name(bytes)
            } else {
                name = try json.name()
                facts = scanner.facts(name)
            }
            if facts.found { throw Found() }
            let isMessage = name == "message", isMsg = name == "msg"
            let child: Value
            if !isMessage && !isMsg && facts.machine {
                try json.skipValue(depth: depth + 1)
                child = .other
            } else {
                child = try value(key: name, facts: facts, depth: depth + 1)
            }
            // A repeated member: which one the full pass keeps is Foundation's choice.
            if isMessage {
                guard message == nil else { throw JSONBytes.Unsure() }
                message = child
            } else if isMsg {
                guard msg == nil else { throw JSONBytes.Unsure() }
                msg = child
            }
        } while try json.another(UInt8(ascii: "}"))
        if case .text(let text)? = message ?? msg { return .object(message: text) }
        return .object(message: nil)
    }

    private mutating func array(key: String?, facts: MemoScanner.KeyFacts?, depth: Int) throws -> Value {
        guard !json.open() else { return .other }
        var texts: [String] = []
        repeat {
            if let text = try value(key: key, facts: facts, depth: depth + 1).acrossText { texts.append(text) }
        } while try json.another(UInt8(ascii: "]"))
        if texts.count > 1, scanner.scanner.findingsAcross(texts).contains(where: { !$0.isEmpty }) { throw Found() }
        return .other
    }
}
