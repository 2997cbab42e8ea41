// The build-id note parser the module table uses at install and at crash time, fed crafted
// PT_NOTE segments: 4- and 8-aligned, the build-id after another note, and hostile sizes.
import CCrashCapture
import Testing

@Suite("Build-id notes")
struct BuildIDNoteTests {
    /// One note: 12-byte header, name, descriptor, each start rounded up to `alignment` from the
    /// segment's start (`offset` is where this note starts).
    static func note(type: UInt32, name: [UInt8], descriptor: [UInt8], alignment: Int, offset: Int) -> [UInt8] {
        func word(_ value: UInt32) -> [UInt8] { withUnsafeBytes(of: value.littleEndian, Array.init) }
        func padded(_ bytes: [UInt8], from start: Int) -> [UInt8] {
            let end = start + bytes.count
            return bytes + [UInt8](repeating: 0, count: (end + alignment - 1) / alignment * alignment - end)
        }
        var out = word(UInt32(name.count)) + word(UInt32(descriptor.count)) + word(type)
        out += padded(name, from: offset + out.count)
        out += padded(descriptor, from: offset + out.count)
        return out
    }

    static let gnu: [UInt8] = Array("GNU".utf8) + [0]
    static let buildID: [UInt8] = (0..<20).map { UInt8($0 * 11 & 0xff) }

    static func parse(_ notes: [UInt8], alignment: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 64)
        let length = notes.withUnsafeBufferPointer { ccr_build_id_from_notes($0.baseAddress!, $0.count, alignment, &out, out.count) }
        return Array(out.prefix(length))
    }

    @Test("after a property note, in an 8-aligned segment (the descriptor starts at 16, not 20)")
    func eightAligned() {
        let property = Self.note(type: 5, name: Self.gnu, descriptor: [UInt8](repeating: 0xaa, count: 16), alignment: 8, offset: 0)
        let build = Self.note(type: 3, name: Self.gnu, descriptor: Self.buildID, alignment: 8, offset: property.count)
        #expect(property.count == 32)
        #expect(Self.parse(property + build, alignment: 8) == Self.buildID)
    }

    @Test("in a 4-aligned segment, after an ABI tag")
    func fourAligned() {
        let tag = Self.note(type: 1, name: Self.gnu, descriptor: [0, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0], alignment: 4, offset: 0)
        let build = Self.note(type: 3, name: Self.gnu, descriptor: Self.buildID, alignment: 4, offset: tag.count)
        #expect(Self.parse(tag + build, alignment: 4) == Self.buildID)
    }

    @Test("callers on several threads at once each get their own note's build-id")
    func concurrentCallers() async {
        // Swift Testing runs this suite's tests in parallel; the parser once kept its scratch entry
        // in a static, and two callers could read each other's build-id (TSan caught it in CI).
        let wrong = await withTaskGroup(of: Int.self) { group in
            for caller in 0..<8 {
                group.addTask {
                    let own = (0..<20).map { UInt8(($0 + caller * 31) & 0xff) }
                    let notes = Self.note(type: 3, name: Self.gnu, descriptor: own, alignment: 4, offset: 0)
                    return (0..<2000).filter { _ in Self.parse(notes, alignment: 4) != own }.count
                }
            }
            return await group.reduce(0, +)
        }
        #expect(wrong == 0)
    }

    @Test("hostile sizes read nothing outside the segment")
    func hostile() {
        let build = Self.note(type: 3, name: Self.gnu, descriptor: Self.buildID, alignment: 4, offset: 0)
        #expect(Self.parse(Array(build.prefix(30)), alignment: 4).isEmpty)   // descriptor cut short
        var huge = build
        huge.replaceSubrange(4..<8, with: [0xff, 0xff, 0xff, 0xff])          // descsz 4 GiB
        #expect(Self.parse(huge, alignment: 8).isEmpty)
        huge = build
        huge.replaceSubrange(0..<4, with: [0xfd, 0xff, 0xff, 0xff])          // namesz near 4 GiB
        #expect(Self.parse(huge, alignment: 4).isEmpty)
        #expect(Self.parse([1, 2, 3], alignment: 4).isEmpty)
    }
}
