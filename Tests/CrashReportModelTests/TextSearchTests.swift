// The byte search and trim grouping uses instead of Foundation's (CrashReportModel/TextSearch.swift)
// answer as Foundation does, on ASCII and on text with other scripts and Unicode spaces; the one
// difference, a match next to a combining mark, is pinned down.
@testable import CrashReportModel
import Foundation
import Testing

struct TextSearchTests {
    static let pieces = ["a", "b", " ", "\t", "#", "0x", " + ", " in ", "é", "日本", "\u{00A0}", "\u{2003}", "::", "/", "🙂", ")"]

    /// Deterministic strings made of `pieces` (a linear congruential generator, fixed seed).
    static func strings(_ count: Int, pieces: [String] = pieces) -> [String] {
        var state: UInt64 = 0x5eed
        func next(_ bound: Int) -> Int {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Int((state >> 33) % UInt64(bound))
        }
        return (0..<count).map { _ in (0..<next(9)).map { _ in pieces[next(pieces.count)] }.joined() }
    }

    @Test func includesAnswersAsContains() {
        let texts = Self.strings(400)
        let needles = Self.strings(60) + ["", " ", "e", "\u{301}", "0x", " + ", "日"]
        for text in texts {
            for needle in needles {
                #expect(text.includes(needle) == text.contains(needle), "\(text.debugDescription) / \(needle.debugDescription)")
                let sub = text.dropFirst()
                #expect(sub.includes(needle) == sub.contains(needle), "\(sub.debugDescription) / \(needle.debugDescription)")
            }
        }
    }

    @Test func trimmingWhitespaceAnswersAsFoundation() {
        for text in Self.strings(2000, pieces: Self.pieces + ["e\u{301}", "\u{301}"]) + ["", " ", "\t\t", "\u{00A0}x\u{2003}", "x"] {
            #expect(text.trimmingWhitespace() == text.trimmingCharacters(in: .whitespaces), "\(text.debugDescription)")
        }
    }

    /// Foundation compares whole characters, the byte search compares bytes: they differ only where
    /// a combining mark joins a character of the match. Grouping's markers are ASCII words and
    /// punctuation in code names and paths, where no combining mark follows them.
    @Test func aCombiningMarkIsWhereTheyDiffer() {
        #expect("cafe\u{301}".includes("cafe") && !"cafe\u{301}".contains("cafe"))
        #expect(!"caf\u{E9}".includes("cafe\u{301}") && "caf\u{E9}".contains("cafe\u{301}"))
        #expect("a + b".includes(" + ") == "a + b".contains(" + "))
    }
}
