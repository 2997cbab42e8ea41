// RFC 3339 / ISO 8601 UTC timestamps without ICU. Foundation's ISO8601DateFormatter loads ICU on
// first use, which cost crashtool ~10 ms of a ~20 ms run; gmtime_r costs nothing.
import Foundation
#if canImport(Glibc)
import Glibc
#endif

public enum Timestamp {
    /// "2026-11-21T20:14:37.496Z" (milliseconds, UTC).
    public static func iso8601(_ date: Date) -> String {
        let seconds = date.timeIntervalSince1970
        var whole = time_t(seconds.rounded(.down))
        let milliseconds = Int(((seconds - Double(whole)) * 1000).rounded(.down))
        var parts = tm()
        gmtime_r(&whole, &parts)
        func pad(_ value: Int32, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(pad(Int32(milliseconds), 3))Z"
    }

    /// A JSONEncoder date strategy writing `iso8601(_:)`; readable by `.iso8601` decoders that
    /// accept fractional seconds and by every RFC 3339 parser.
    public static let encodingStrategy = JSONEncoder.DateEncodingStrategy.custom { date, encoder in
        var container = encoder.singleValueContainer()
        try container.encode(iso8601(date))
    }
}

/// The last component of a path ("libc.so.6" of "/lib/x86_64-linux-gnu/libc.so.6"), without
/// NSString bridging, which costs a measurable part of a short crashtool run.
public func fileName(of path: String) -> String {
    // One backward scan over the bytes; split() allocated an array per call (2 % of a crashtool run).
    var utf8 = Substring(path).utf8
    while utf8.last == UInt8(ascii: "/") { utf8 = utf8.dropLast() }
    guard !utf8.isEmpty else { return path }
    if let slash = utf8.lastIndex(of: UInt8(ascii: "/")) { utf8 = utf8[utf8.index(after: slash)...] }
    return String(Substring(utf8))
}
