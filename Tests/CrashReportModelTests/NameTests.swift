// SwiftNames.simplified against what `swift-demangle --simplified` prints, for the symbols in
// Corpus/simplified-names.tsv (libswiftCore and the CrashFixture program; tools/make-name-corpus).
import CrashReportModel
import Foundation
import Testing

struct NameTests {
    static func corpus() throws -> [(mangled: String, full: String, simplified: String)] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Corpus/simplified-names.tsv")
        return try String(contentsOf: url, encoding: .utf8).split(separator: "\n").filter { !$0.hasPrefix("#") }.map { line in
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            return (fields[0], fields[1], fields[2])
        }
    }

    @Test func simplifiedNamesMatchSwiftDemangle() throws {
        let entries = try Self.corpus()
        #expect(entries.count > 500)
        var differing: [String] = []
        for entry in entries where SwiftNames.simplified(entry.full) != entry.simplified {
            differing.append("\(entry.mangled): \(SwiftNames.simplified(entry.full)) ≠ \(entry.simplified)")
        }
        #expect(differing.isEmpty, "\(differing.count) of \(entries.count):\n\(differing.prefix(20).joined(separator: "\n"))")
    }

    @Test func namesThatAreNotSwiftStayAsTheyAre() {
        for name in ["start_thread", "__libc_start_call_main", "std::vector<int>::at(unsigned long)", "ccr_signal_handler", "main"] {
            #expect(SwiftNames.simplified(name) == name)
        }
    }
}
