// Property tests of the record reader over the committed corpus (real records: complete, nested
// crash, watchdog, partial; a Swift backtracer JSON): thousands of seeded mutations must each
// either read or be refused with a CrashRecordError — never trap, never another error. The same
// corpus seeds the coverage-guided fuzzer in tools/fuzz-record-parser.
import CrashReportModel
import CrashTestSupport
import Foundation
import Testing

let corpusFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Corpus")
let corpusFiles = ((try? FileManager.default.contentsOfDirectory(at: corpusFolder, includingPropertiesForKeys: nil)) ?? [])
    .filter { $0.pathExtension == "crash" }.sorted { $0.path < $1.path }

func mutate(_ data: Data, _ random: inout SeededGenerator) -> Data {
    var bytes = [UInt8](data)
    guard !bytes.isEmpty else { return Data([UInt8.random(in: 0...255, using: &random)]) }
    switch Int.random(in: 0..<6, using: &random) {
    case 0:   // cut anywhere, as a dying writer would
        bytes.removeSubrange(Int.random(in: 0..<bytes.count, using: &random)...)
    case 1:   // flip bytes
        for _ in 0..<Int.random(in: 1...8, using: &random) {
            bytes[Int.random(in: 0..<bytes.count, using: &random)] ^= UInt8.random(in: 1...255, using: &random)
        }
    case 2:   // insert noise
        let noise = (0..<Int.random(in: 1...64, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
        bytes.insert(contentsOf: noise, at: Int.random(in: 0...bytes.count, using: &random))
    case 3, 4:   // drop or duplicate a line
        var lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map(Array.init)
        let index = Int.random(in: 0..<lines.count, using: &random)
        if Int.random(in: 0...1, using: &random) == 0 { lines.remove(at: index) } else { lines.insert(lines[index], at: index) }
        bytes = Array(lines.joined(separator: [UInt8(ascii: "\n")]))
    default:   // swap digits and quotes, which keeps lines JSON-shaped but wrong
        for _ in 0..<Int.random(in: 1...4, using: &random) {
            let index = Int.random(in: 0..<bytes.count, using: &random)
            bytes[index] = [UInt8(ascii: "0"), UInt8(ascii: "\""), UInt8(ascii: "x"), UInt8(ascii: "-"), UInt8(ascii: "}")]
                .randomElement(using: &random)!
        }
    }
    return Data(bytes)
}

@Suite("CrashRecord reader under mutation")
struct RecordFuzzTests {
    @Test("the corpus is there and reads")
    func corpusReads() throws {
        #expect(corpusFiles.count >= 5)
        for file in corpusFiles {
            _ = try CrashRecord.load(contentsOf: file)
        }
    }

    @Test("mutated records read or are refused cleanly", arguments: corpusFiles)
    func mutations(_ file: URL) throws {
        let original = try Data(contentsOf: file)
        // Seeded from the file name (deterministic: Swift's hashValue is not).
        let seed = file.lastPathComponent.utf8.reduce(UInt64(20_261_121)) { $0 &* 31 &+ UInt64($1) }
        var random = SeededGenerator(state: seed)
        var read = 0, refused = 0
        for _ in 0..<2000 {
            let input = mutate(original, &random)
            do {
                let record = try CrashRecord(data: input, source: "mutant")
                #expect(record.frames.count <= input.count)
                read += 1
            } catch is CrashRecordError {
                refused += 1
            } catch {
                Issue.record("unexpected error \(type(of: error)): \(error)")
            }
        }
        #expect(read + refused == 2000)
    }

    @Test("a record cut at any line boundary after its header still reads, as partial", arguments: corpusFiles.filter {
        (try? String(contentsOf: $0, encoding: .utf8))?.hasPrefix(#"{"format":"#) == true
    })
    func cutAtLineBoundaries(_ file: URL) throws {
        let text = try String(contentsOf: file, encoding: .utf8)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: true)
        for count in 1..<lines.count {
            let record = try CrashRecord(data: Data(lines.prefix(count).joined(separator: "\n").utf8), source: file.lastPathComponent)
            let hasEnd = lines.prefix(count).contains { $0.contains(#""type":"end""#) }
            #expect(record.hasEnd == hasEnd)
            if !hasEnd { #expect(record.isPartial) }
        }
    }
}
