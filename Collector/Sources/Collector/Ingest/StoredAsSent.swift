// The stored copies of an upload, cut from its bytes as sent instead of encoded again from the
// decoded model: each crash report's JSON is its element of `crash_reports`, and the upload's copy
// is the body with that array emptied. Encoding them again (JSONEncoder, sorted keys) was about a
// seventh of an upload's CPU time (Decision 0039). Only a body that was decoded with nothing
// filled in (`PayloadDecoding.Decoded.asSent`) is cut; every reader decodes the copies with the
// same model, so what it reads is what was grouped. Anything the scan does not expect — a top-level
// key written with escapes, `crash_reports` twice, an element count other than the decoded one —
// gives nil, and the copies are encoded as before.
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
    /// Linear in the body's length, no recursion (nesting is counted, not followed).
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
            /// Past the value starting at `at`. False when it is not one.
            func skipValue() -> Bool {
                guard at < count else { return false }
                var escaped = false
                switch bytes[at] {
                case 0x22:
                    return skipString(escaped: &escaped)
                case 0x7B, 0x5B:
                    var depth = 0
                    while at < count {
                        switch bytes[at] {
                        case 0x22: guard skipString(escaped: &escaped) else { return false }; continue
                        case 0x7B, 0x5B: depth += 1
                        case 0x7D, 0x5D:
                            depth -= 1
                            if depth == 0 { at += 1; return true }
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

            var found: StoredAsSent?
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
                guard skipString(escaped: &escaped), !escaped else { return nil }
                let isReports = bytes[keyStart..<(at - 1)].elementsEqual(crashReportsKey)
                skipSpace()
                guard at < count, bytes[at] == 0x3A else { return nil }
                at += 1
                skipSpace()
                if isReports {
                    guard found == nil, at < count, bytes[at] == 0x5B else { return nil }
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
                            skipSpace()
                            guard at < count else { return nil }
                            if bytes[at] == 0x2C { at += 1; continue }
                            guard bytes[at] == 0x5D else { return nil }
                            at += 1
                            break
                        }
                    }
                    found = StoredAsSent(reports: reports, array: arrayStart..<at)
                } else {
                    guard skipValue() else { return nil }
                }
                skipSpace()
                guard at < count else { return nil }
                if bytes[at] == 0x2C { at += 1; continue }
                guard bytes[at] == 0x7D else { return nil }
                at += 1
                break
            }
            skipSpace()
            return at == count ? found : nil
        }
    }
}
