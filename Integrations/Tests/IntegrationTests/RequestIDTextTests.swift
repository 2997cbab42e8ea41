// CrashReportingHummingbird's request id text: made without RequestID.description's cost (and
// without an allocation), it must be what description gives (the id Hummingbird's own log lines
// carry), for every id. And RequestIdentifier, which holds it: the same bytes inline or as a String.
@testable import CrashReportingHummingbird
import Hummingbird
import Logging
import Testing

@Suite("Hummingbird request ids")
struct RequestIDTextTests {
    @Test("the request id text is RequestID's description: fresh ids, leading zeros, extremes, and read from a logger")
    func sameAsDescription() throws {
        let texts = try #require(RequestIDText(), "RequestID's layout or format changed: the middleware falls back to context.id")
        var ids = (0..<2000).map { _ in RequestID() }
        // Counters with leading zeros and at the extremes (the layout is what the init checked).
        for value: UInt64 in [0, 1, 0xF, 0x10, 0xABC, 0x0123_4567_89AB_CDEF, 0x7FFF_FFFF_FFFF_FFFF, 0x8000_0000_0000_0000, .max] {
            ids.append(unsafeBitCast(value, to: RequestID.self))
        }
        let differing = ids.filter { texts.identifier(of: $0).description != $0.description }.map(\.description)
        #expect(differing.isEmpty, "ids whose text differs from their description: \(differing.prefix(5))")

        var logger = Logger(label: "test")
        let id = RequestID()
        logger[metadataKey: "hb.request.id"] = .stringConvertible(id)
        #expect(texts.identifier(of: logger)?.description == id.description)
        logger[metadataKey: "hb.request.id"] = .string("not a RequestID")
        #expect(texts.identifier(of: logger) == nil, "anything else under the key: nil, and the middleware reads context.id")
        // Read from the metadata value's container, not cast: checked at init, and so tested here.
        #expect(texts.readsContainer, "the id is cast (as? RequestID) on this platform")
        let viaLogger = ids.filter { id in
            logger[metadataKey: "hb.request.id"] = .stringConvertible(id)
            return texts.identifier(of: logger)?.description != id.description
        }
        #expect(viaLogger.isEmpty, "ids read from a logger unlike their description: \(viaLogger.prefix(5).map(\.description))")
        // Other values of 8 bytes, stored where a RequestID would be: not taken for one.
        struct EightBytes: CustomStringConvertible, Sendable { var bits: UInt64; var description: String { "\(bits)" } }
        for other in [.stringConvertible(12345 as Int), .stringConvertible(EightBytes(bits: 7)), .stringConvertible(3.5 as Double),
                      .stringConvertible("text"), .array([]), .dictionary([:])] as [Logger.MetadataValue] {
            logger[metadataKey: "hb.request.id"] = other
            #expect(texts.identifier(of: logger) == nil, "\(other) taken for a request id")
        }
    }
}

@Test("the id's text from a template, for every prefix length 0-16 (aligned and unaligned stores) and extreme counters")
func textFromTemplate() {
    let alphabet = Array("0123456789abcdefghijklmnop".utf8)
    for length in 0...16 {
        let prefix = Array(alphabet.prefix(length))
        var template: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        withUnsafeMutableBytes(of: &template) { $0.copyBytes(from: prefix) }
        for value: UInt64 in [0, 1, 0xF, 0xA0, 0x0123_4567_89AB_CDEF, 0xFEDC_BA98_7654_3210, .max, 0x8000_0000_0000_0000] {
            let digits = String(value, radix: 16)
            let expected = String(decoding: prefix, as: UTF8.self) + String(repeating: "0", count: 16 - digits.count) + digits
            let text = RequestIDText.text(of: value, template: template, prefixCount: length)
            #expect(text.description == expected, "prefix of \(length): \(text.description) against \(expected)")
        }
    }
}

@Suite("Request identifiers")
struct RequestIdentifierTests {
    @Test("an id written inline (0 to 32 bytes) and the same id as a String give the same bytes, text and equality")
    func inlineAndText() {
        let alphabet = Array("0123456789abcdef-Z".utf8)
        for count in 0...RequestIdentifier.inlineCapacity {
            let bytes = (0..<count).map { alphabet[($0 * 7 + count) % alphabet.count] }
            let inline = RequestIdentifier(count: count) { buffer in
                for index in 0..<count { buffer[index] = bytes[index] }
            }
            let text = String(decoding: bytes, as: UTF8.self)
            let asText = RequestIdentifier(text)
            #expect(inline.withUTF8 { Array($0) } == bytes, "\(count) bytes inline")
            #expect(asText.withUTF8 { Array($0) } == Array(text.utf8))
            #expect(inline.description == text && inline == asText, "\(count): \(inline.description) against \(text)")
            var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
            withUnsafeMutableBytes(of: &words) { $0.copyBytes(from: bytes) }
            let fromWords = RequestIdentifier(inlineWords: words, count: count)
            #expect(fromWords == inline && fromWords.description == text, "\(count) bytes given as words")
        }
        let long = String(repeating: "x", count: 100)
        #expect(RequestIdentifier(long).description == long)
        #expect(RequestIdentifier("a") != RequestIdentifier(count: 1) { $0[0] = UInt8(ascii: "b") })
    }
}
