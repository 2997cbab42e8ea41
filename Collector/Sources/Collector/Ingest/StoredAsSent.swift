// The stored copies of an upload, cut from its bytes as sent instead of encoded again from the
// decoded model: each crash report's JSON is its element of `crash_reports`, and the upload's copy
// is the body with that array emptied. Encoding them again (JSONEncoder, sorted keys) was about a
// seventh of an upload's CPU time (Decision 0039). Only a body that was decoded with nothing
// filled in (`PayloadDecoding.Decoded.asSent`) is cut; every reader decodes the copies with the
// same model, so what it reads is what was grouped. Anything the scan does not expect — a key
// written with escapes, or twice in one object (other parsers keep another of the two than
// JSONDecoder does), an element count other than the decoded one — gives nil, and the copies are
// encoded as before.
import CrashReportModel

struct StoredAsSent: Equatable {
    /// Each element of the top-level `crash_reports` array, in order.
    var reports: [Range<Int>]
    /// The `crash_reports` value, brackets included.
    var array: Range<Int>

    /// The report at `index` as sent.
    func reportJSON(_ index: Int, of body: [UInt8]) -> String {
        String(decoding: body[reports[index]], as: UTF8.self)
    }

    /// The body with `crash_reports` emptied.
    func uploadJSON(of body: [UInt8]) -> String {
        String(decoding: body[..<array.lowerBound], as: UTF8.self) + "[]" + String(decoding: body[array.upperBound...], as: UTF8.self)
    }

    private static let crashReportsKey = Array("crash_reports".utf8)

    /// The ranges in `body`, a JSON object; nil when it is not one the scan can vouch for.
    /// Linear in the body's length, no recursion (open containers are kept on a stack).
    static func find(in body: [UInt8]) -> StoredAsSent? {
        body.withUnsafeBufferPointer { bytes -> StoredAsSent? in
            let count = bytes.count
            var at = 0

            func skipSpace() {
                while at < count, bytes[at] == 0x20 || bytes[at] == 0x0A || bytes[at] == 0x0D || bytes[at] == 0x09 { at += 1 }
            }
            /// Past the string starting at `at`; whether it held an escape. False when unterminated.
            func skipString(escaped: inout Bool) -> Bool {
                at += 1
                while at < count {
                    switch bytes[at] {
                    case 0x22: at += 1; return true
                    case 0x5C: escaped = true; at += 2
                    default: at += 1
                    }
                }
                return false
            }
            /// The key of the string that ends at `at`, begun at `start`, added to `keys`; false
            /// when it was written with an escape or is there already.
            func newKey(from start: Int, escaped: Bool, _ keys: inout KeySet) -> Bool {
                !escaped && keys.insert(String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<(at - 1)]), as: UTF8.self))
            }
            /// Past the value starting at `at`. False when it is not one, or when an object in it
            /// has a key written with an escape or twice.
            func skipValue() -> Bool {
                guard at < count else { return false }
                var escaped = false
                switch bytes[at] {
                case 0x22:
                    return skipString(escaped: &escaped)
                case 0x7B, 0x5B:
                    // The open containers: an object's keys so far, or nil for an array.
                    var open: [KeySet?] = []
                    var expectingKey = false
                    while at < count {
                        switch bytes[at] {
                        case 0x22:
                            let start = at + 1
                            var escapedHere = false
                            guard skipString(escaped: &escapedHere) else { return false }
                            if expectingKey {
                                guard open[open.count - 1] != nil, newKey(from: start, escaped: escapedHere, &open[open.count - 1]!) else { return false }
                                expectingKey = false
                            }
                            continue
                        case 0x7B: open.append(KeySet()); expectingKey = true
                        case 0x5B: open.append(nil); expectingKey = false
                        case 0x2C: expectingKey = open.last.map { $0 != nil } ?? false
                        case 0x7D, 0x5D:
                            open.removeLast()
                            expectingKey = false
                            if open.isEmpty { at += 1; return true }
                        default: break
                        }
                        at += 1
                    }
                    return false
                default:
                    let start = at
                    while at < count, bytes[at] != 0x2C, bytes[at] != 0x7D, bytes[at] != 0x5D, bytes[at] > 0x20 { at += 1 }
                    return at > start
                }
            }

            /// After an array's element or an object's member: true when a comma says another
            /// follows, false past the closing bracket, nil for anything else.
            func another(closing: UInt8) -> Bool? {
                skipSpace()
                guard at < count else { return nil }
                if bytes[at] == 0x2C { at += 1; return true }
                guard bytes[at] == closing else { return nil }
                at += 1
                return false
            }

            var found: StoredAsSent?
            var topKeys = KeySet()
            skipSpace()
            guard at < count, bytes[at] == 0x7B else { return nil }
            at += 1
            skipSpace()
            if at < count, bytes[at] == 0x7D { return nil }
            while true {
                skipSpace()
                guard at < count, bytes[at] == 0x22 else { return nil }
                let keyStart = at + 1
                var escaped = false
                guard skipString(escaped: &escaped), newKey(from: keyStart, escaped: escaped, &topKeys) else { return nil }
                let isReports = bytes[keyStart..<(at - 1)].elementsEqual(crashReportsKey)
                skipSpace()
                guard at < count, bytes[at] == 0x3A else { return nil }
                at += 1
                skipSpace()
                if isReports {
                    guard at < count, bytes[at] == 0x5B else { return nil }
                    let arrayStart = at
                    var reports: [Range<Int>] = []
                    at += 1
                    skipSpace()
                    if at < count, bytes[at] == 0x5D {
                        at += 1
                    } else {
                        while true {
                            skipSpace()
                            let start = at
                            guard skipValue() else { return nil }
                            reports.append(start..<at)
                            guard let more = another(closing: 0x5D) else { return nil }
                            if !more { break }
                        }
                    }
                    found = StoredAsSent(reports: reports, array: arrayStart..<at)
                } else {
                    guard skipValue() else { return nil }
                }
                guard let more = another(closing: 0x7D) else { return nil }
                if !more { break }
            }
            skipSpace()
            return at == count ? found : nil
        }
    }
}

/// An object's keys as the decoder compares them (Swift strings: canonically equivalent spellings
/// are one key), in a short array until there are many, then in a set: an object of 50,000 keys
/// costs 50,000 insertions, not their squares.
struct KeySet {
    private var few: [String] = []
    private var many: Set<String>?

    /// False when `key` is there already.
    mutating func insert(_ key: String) -> Bool {
        if many != nil { return many!.insert(key).inserted }
        if few.contains(key) { return false }
        few.append(key)
        if few.count > 16 {
            many = Set(few)
            few = []
        }
        return true
    }
}
