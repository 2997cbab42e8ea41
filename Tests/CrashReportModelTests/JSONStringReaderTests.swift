// `JSONStringReader` reads a string with no escape straight from its bytes: ASCII as it is,
// anything else checked as UTF-8. Either way it must give what `String(validating:as:)` gives.
import CrashReportModel
import CrashTestSupport
import Foundation
import Testing

@Suite("JSON string reader")
struct JSONStringReaderTests {
    static func read(_ body: [UInt8]) -> (text: String?, end: Int) {
        let quoted = [UInt8(ascii: "\"")] + body + [UInt8(ascii: "\""), UInt8(ascii: ",")]
        return quoted.withUnsafeBufferPointer { bytes in
            var index = 0
            let text = JSONStringReader.read(bytes, at: &index)
            return (text, index)
        }
    }

    @Test("strings without escapes, ASCII or not, valid UTF-8 or not: as String(validating:) reads them")
    func unescaped() {
        var random = SeededGenerator(state: 1128)
        let pieces: [[UInt8]] = [Array("plain ascii 0123 ~\u{7F}".utf8), Array("é".utf8), Array("日本".utf8), Array("😀".utf8),
                                 [0xC3], [0xE6, 0x97], [0xFF], [0x80], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xC0, 0xAF]]
        var ascii = 0, other = 0, refused = 0
        for _ in 0..<5000 {
            var body: [UInt8] = []
            for _ in 0..<Int.random(in: 0...6, using: &random) {
                // Mostly ASCII, as a payload is.
                body += Int.random(in: 0..<3, using: &random) == 0 ? pieces[Int.random(in: 0..<pieces.count, using: &random)] : pieces[0]
            }
            let (text, end) = Self.read(body)
            let expected = String(validating: body, as: UTF8.self)
            #expect(text == expected, "\(body)")
            #expect(text.map { Array($0.utf8) == body } ?? true, "\(body)")
            if text != nil { #expect(end == body.count + 2) }
            if expected == nil { refused += 1 } else if body.allSatisfy({ $0 < 0x80 }) { ascii += 1 } else { other += 1 }
        }
        #expect(ascii > 100 && other > 100 && refused > 100, "\(ascii) \(other) \(refused)")
    }
}

extension JSONStringReaderTests {
    @Test("the plain run ends at the first quote, backslash or control byte, at every position of a word and past it")
    func plainRunByPosition() {
        let stops: [UInt8] = [0x22, 0x5C, 0x00, 0x1F, 0x0A]
        let goes: [UInt8] = [0x20, 0x21, 0x23, 0x5B, 0x5D, 0x7F, 0x80, 0xA2, 0xDC, 0xFF]
        var checked = 0
        for length in 0...21 {
            for position in 0...length {
                for stop in stops + [nil] where stop != nil || position == length {
                    for fill in goes {
                        var bytes = [UInt8](repeating: UInt8(ascii: "a"), count: length)
                        if position < length { bytes[(position + 3) % length] = fill }
                        if let stop, position < length { bytes[position] = stop }
                        for start in [0, 1, 7, 8, 9] where start <= length {
                            let end = bytes[start...].firstIndex { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C } ?? bytes.count
                            let result = bytes.withUnsafeBufferPointer { JSONStringReader.plainRun($0, from: start) }
                            #expect(result.end == end, "\(bytes) from \(start)")
                            #expect(result.ascii == bytes[start..<end].allSatisfy { $0 < 0x80 }, "\(bytes) from \(start)")
                            checked += 1
                        }
                    }
                }
            }
        }
        #expect(checked > 10_000, "\(checked)")
    }
}

extension JSONStringReaderTests {
    @Test("strings with escapes between plain runs: as JSONSerialization reads them")
    func escaped() throws {
        var random = SeededGenerator(state: 2811)
        let pieces = [#"\""#, #"\\"#, #"\/"#, #"\n"#, #"\t"#, #"\u00e9"#, #"\ud83d\ude00"#, "plain text ", "é", "日本", "x", "0123456789abcdef"]
        for _ in 0..<3000 {
            let body = (0..<Int.random(in: 1...8, using: &random)).map { _ in pieces[Int.random(in: 0..<pieces.count, using: &random)] }.joined()
            let expected = try JSONSerialization.jsonObject(with: Data("\"\(body)\"".utf8), options: [.fragmentsAllowed]) as? String
            let (text, end) = Self.read(Array(body.utf8))
            #expect(text == expected, "\(body)")
            #expect(end == body.utf8.count + 2, "\(body)")
        }
    }
}

extension JSONStringReaderTests {
    @Test("strings with escapes read as JSONSerialization reads them, and refused where it refuses them")
    func escapedOrRefused() throws {
        var random = SeededGenerator(state: 2811)
        let pieces = ["plain", "\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t", "\\u00e9", "\\u65E5", "\\ud83d\\ude00",
                      "é", "{\\\"sku\\\":\\\"SKU-1\\\"}",
                      // refused: a lone or reversed surrogate, a bad or short escape, a control byte, a backslash at the end
                      "\\ud83d", "\\ude00\\ud83d", "\\x", "\\u12", "\\u12G4", "\u{01}", "\\\u{0A}", "\\"]
        var read = 0, refused = 0
        for _ in 0..<5000 {
            var body = ""
            for _ in 0..<Int.random(in: 1...8, using: &random) {
                body += Int.random(in: 0..<3, using: &random) == 0 ? pieces[Int.random(in: 0..<pieces.count, using: &random)] : pieces[Int.random(in: 0..<14, using: &random)]
            }
            let bytes = Array(body.utf8)
            let (text, end) = Self.read(bytes)
            // The reader stops at the first quote no backslash escapes ("\\" then "\"" ends the
            // string there): JSONSerialization is asked about exactly the bytes it read.
            func serialized(_ quoted: [UInt8]) -> String? {
                ((try? JSONSerialization.jsonObject(with: Data([UInt8(ascii: "[")] + quoted + [UInt8(ascii: "]")]))) as? [String])?.first
            }
            let quoted = [UInt8(ascii: "\"")] + bytes + [UInt8(ascii: "\"")]
            if let text {
                read += 1
                let expected = serialized(Array(quoted.prefix(end)))
                #expect(text == expected, "\(body)")
                #expect(Array(text.utf8) == Array((expected ?? "").utf8), "\(body)")
            } else {
                refused += 1
                #expect(serialized(quoted) == nil, "\(body)")
            }
        }
        #expect(read > 1000 && refused > 1000, "\(read) \(refused)")
    }
}
