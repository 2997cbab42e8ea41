// A request's id as its text, held without an allocation when it has at most 32 bytes: a Swift
// String of more than 15 bytes lives on the heap, and CrashReportingHummingbird's ids have up to 32.
// Made once per request, it goes to the slot in flight as the request begins and into the "http"
// breadcrumb as it ends; a String is made only for a non-fatal report.

/// A request id's UTF-8 text: inline up to 32 bytes, else a String.
public struct RequestIdentifier: Sendable, CustomStringConvertible, Equatable {
    public static let inlineCapacity = 32
    private var inline: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
    /// The inline bytes' count, or -1 when `text` holds the id.
    private var inlineCount: Int8 = -1
    private var text = ""

    public init(_ text: String) {
        self.text = text
    }

    /// An id of `count` bytes (at most `inlineCapacity`), which `write` writes into the buffer it
    /// is given (exactly `count` bytes).
    public init(count: Int, writing write: (UnsafeMutableBufferPointer<UInt8>) -> Void) {
        precondition(count >= 0 && count <= Self.inlineCapacity, "an inline request id has at most 32 bytes")
        withUnsafeMutableBytes(of: &inline) { raw in
            raw.withMemoryRebound(to: UInt8.self) { write(UnsafeMutableBufferPointer(rebasing: $0[..<count])) }
        }
        inlineCount = Int8(count)
    }

    /// An id of `count` bytes (at most `inlineCapacity`): the inline words' first `count` bytes,
    /// in memory order. Only those bytes are read (`withUTF8`, `==`, `description`).
    package init(inlineWords words: (UInt64, UInt64, UInt64, UInt64), count: Int) {
        precondition(count >= 0 && count <= Self.inlineCapacity, "an inline request id has at most 32 bytes")
        inline = words
        inlineCount = Int8(count)
    }

    /// Calls `body` with the id's UTF-8 bytes.
    public func withUTF8<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        if inlineCount >= 0 {
            return try withUnsafeBytes(of: inline) { raw in
                try raw.withMemoryRebound(to: UInt8.self) { try body(UnsafeBufferPointer(rebasing: $0[..<Int(inlineCount)])) }
            }
        }
        var text = text
        return try text.withUTF8(body)
    }

    /// The id as a String.
    public var description: String {
        inlineCount >= 0 ? withUTF8 { String(decoding: $0, as: UTF8.self) } : text
    }

    public static func == (lhs: RequestIdentifier, rhs: RequestIdentifier) -> Bool {
        lhs.withUTF8 { left in rhs.withUTF8 { right in left.elementsEqual(right) } }
    }
}
