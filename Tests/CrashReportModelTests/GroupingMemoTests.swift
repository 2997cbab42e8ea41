// The grouping rule's remembered answers (CrashGrouping.Memo, Decision 0054): a remembered answer
// is the answer worked out, for every input, the first time and after; one input's answer never
// stands for another's; the table stays within its bounds whatever a sender sends.
@testable import CrashReportModel
import Foundation
import Testing

struct GroupingMemoTests {
    @Test func rememberedNamesAreTheNamesWorkedOut() throws {
        let names = try NameTests.corpus().flatMap { [$0.full, $0.simplified, $0.mangled] }
        #expect(names.count > 1500)
        var differing: [String] = []
        for round in 0..<2 {   // the first round fills the memo, the second reads it
            for name in names where CrashGrouping.groupingName(name) != CrashGrouping.computedGroupingName(name) {
                differing.append("round \(round): \(name)")
            }
        }
        #expect(differing.isEmpty, "\(differing.prefix(10))")
    }

    /// Spellings Swift's `==` takes for one string (the Kelvin sign is canonically "K"; é
    /// precomposed or not) are different bytes, and each keeps its own answer, whichever came first.
    @Test func equivalentSpellingsKeepTheirOwnAnswers() {
        let pairs = [("App.\u{212A}eyStore.load()", "App.KeyStore.load()"),
                     ("App.caf\u{E9}.open()", "App.cafe\u{301}.open()")]
        for (a, b) in pairs {
            #expect(a == b)   // one String to Swift
            for (first, second) in [(a, b), (b, a)] {
                var answers: [[UInt8]?] = []
                for name in [first, second] {
                    let answer = CrashGrouping.groupingName(name).map { Array($0.utf8) }
                    #expect(answer == CrashGrouping.computedGroupingName(name).map { Array($0.utf8) })
                    answers.append(answer)
                }
                #expect(answers[0] != nil && answers[0] != answers[1])
                #expect(CrashGrouping.origin(function: first, file: nil, module: "App", modulePath: nil)
                        == CrashGrouping.computedOrigin(function: first, file: nil, module: "App", modulePath: nil))
            }
        }
    }

    /// The same function with each other clue changed: each answer is its own clues', in either
    /// order of asking.
    @Test func everyClueIsPartOfTheRememberedOrigin() {
        let function = "Shop.checkout(Shop.Cart) -> ()"
        let clues: [(file: String?, module: String?, path: String?)] = [
            ("/srv/shop/Sources/Shop/Cart.swift", "Shop", "/srv/shop/.build/release/Shop"),
            ("/home/build-user/swift/stdlib/public/core/Array.swift", "Shop", "/srv/shop/.build/release/Shop"),
            ("/srv/shop/Sources/CrashReporting/API/CrashReporter.swift", "Shop", "/srv/shop/.build/release/Shop"),
            (nil, "libswiftCore.so", "/opt/swift/usr/lib/swift/linux/libswiftCore.so"),
            (nil, "Shop", "/usr/lib/x86_64-linux-gnu/Shop"),
            (nil, "Shop", "/srv/shop/.build/release/Shop"),
            (nil, nil, nil),
        ]
        var answers = Set<CrashGrouping.Origin>()
        for order in [Array(clues.indices), clues.indices.reversed()] {
            for index in order {
                let clue = clues[index]
                for function in [function, "ccr_signal_handler"] {
                    let expected = CrashGrouping.computedOrigin(function: function, file: clue.file, module: clue.module, modulePath: clue.path)
                    let remembered = CrashGrouping.origin(function: function, file: clue.file, module: clue.module, modulePath: clue.path)
                    #expect(remembered == expected, "\(function) \(clue)")
                    answers.insert(remembered)
                }
            }
        }
        #expect(answers == [.app, .system, .reporter])   // the clues do change the answer
    }

    @Test func theTableStaysWithinItsBounds() {
        let memo = CrashGrouping.Memo<Int, Int>(capacity: 8, maximumSize: 4)
        var computed = 0
        func square(_ key: Int, size: Int = 1) -> Int {
            memo.value(for: key, size: size) {
                computed += 1
                return key * key
            }
        }
        for key in 0..<100 {
            #expect(square(key) == key * key)
            #expect(square(key) == key * key)   // asked again at once: remembered
            #expect(memo.count <= 8)
        }
        #expect(computed == 100)
        // An input past the size bound is worked out every time and never kept.
        let before = memo.count
        for _ in 0..<3 { #expect(square(1000, size: 5) == 1_000_000) }
        #expect(computed == 103)
        #expect(memo.count == before)
    }
}
