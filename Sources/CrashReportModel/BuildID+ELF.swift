// Reads the GNU build-id of an ELF file on disk, to check that a file is the one a record names
// before trusting it (a rebuilt binary has a different build-id).
import Foundation

extension BuildID {
    /// The NT_GNU_BUILD_ID note of a 64-bit little-endian ELF file, or nil if it has none or is
    /// not such a file.
    public init?(elfFileAtPath path: String) {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        for header in ELFFile.programHeaders(handle) ?? [] where header.type == 4 {   // PT_NOTE
            guard header.fileSize > 0, header.fileSize < 1 << 20, (try? handle.seek(toOffset: header.offset)) != nil,
                  let notes = try? handle.read(upToCount: Int(header.fileSize)), notes.count == Int(header.fileSize) else { continue }
            if let id = Self.buildID(inNotes: notes, alignment: header.alignment == 8 ? 8 : 4) {
                self = id
                return
            }
        }
        return nil
    }

    private static func buildID(inNotes notes: Data, alignment: Int) -> BuildID? {
        func align(_ value: Int) -> Int { (value + alignment - 1) & ~(alignment - 1) }
        var cursor = 0
        while cursor + 12 <= notes.count {
            let nameSize = Int(notes.loadLE(UInt32.self, at: cursor))
            let descriptorSize = Int(notes.loadLE(UInt32.self, at: cursor + 4))
            let type = notes.loadLE(UInt32.self, at: cursor + 8)
            let nameStart = cursor + 12
            let descriptorStart = nameStart + align(nameSize)
            let next = descriptorStart + align(descriptorSize)
            guard descriptorStart + descriptorSize <= notes.count else { return nil }
            let nameBytes = notes[notes.startIndex + nameStart ..< notes.startIndex + nameStart + nameSize]
            if type == 3, nameSize == 4, Array(nameBytes) == [0x47, 0x4E, 0x55, 0] {   // NT_GNU_BUILD_ID, "GNU\0"
                let descriptor = notes[notes.startIndex + descriptorStart ..< notes.startIndex + descriptorStart + descriptorSize]
                return BuildID(hex: hexString(descriptor))
            }
            cursor = next
        }
        return nil
    }
}

/// Small reads of ELF program headers, for facts a record does not carry.
public enum ELFFile {
    struct ProgramHeader {
        var type: UInt32
        var offset: UInt64
        var virtualAddress: UInt64
        var fileSize: UInt64
        var alignment: UInt64
    }

    /// The program headers of a 64-bit little-endian ELF file, or nil if it is not one.
    static func programHeaders(_ handle: FileHandle) -> [ProgramHeader]? {
        guard let header = try? handle.read(upToCount: 64), header.count == 64,
              header.starts(with: [0x7F, 0x45, 0x4C, 0x46]), header[4] == 2, header[5] == 1 else { return nil }
        let offset = header.loadLE(UInt64.self, at: 32)
        let size = Int(header.loadLE(UInt16.self, at: 54))
        let count = Int(header.loadLE(UInt16.self, at: 56))
        guard size >= 56, count > 0, count < 4096, (try? handle.seek(toOffset: offset)) != nil,
              let table = try? handle.read(upToCount: size * count), table.count == size * count else { return nil }
        return (0..<count).map { index in
            let base = index * size
            return ProgramHeader(type: table.loadLE(UInt32.self, at: base), offset: table.loadLE(UInt64.self, at: base + 8),
                                 virtualAddress: table.loadLE(UInt64.self, at: base + 16), fileSize: table.loadLE(UInt64.self, at: base + 32),
                                 alignment: table.loadLE(UInt64.self, at: base + 48))
        }
    }

    /// The page-aligned p_vaddr of the first PT_LOAD segment (0 for PIE executables and shared
    /// libraries), or nil if the file is not a 64-bit little-endian ELF file.
    public static func firstLoadAddress(atPath path: String) -> UInt64? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        return programHeaders(handle)?.first { $0.type == 1 }.map { $0.virtualAddress & ~0xFFF }   // PT_LOAD
    }
}

extension Data {
    func loadLE<T: FixedWidthInteger>(_: T.Type, at offset: Int) -> T {
        var value = T.zero
        Swift.withUnsafeMutableBytes(of: &value) { destination in
            let start = startIndex + offset
            destination.copyBytes(from: self[start ..< start + MemoryLayout<T>.size])
        }
        return T(littleEndian: value)
    }
}

/// Lower-case hex of bytes (String(format:) goes through CVarArg boxing: 1 % of a crashtool run,
/// 7 % of an upload's CPU in the collector's idempotency digests).
public func hexString<Bytes: Sequence>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
    let digits = Array("0123456789abcdef".utf8)
    var out: [UInt8] = []
    out.reserveCapacity(bytes.underestimatedCount * 2)
    for byte in bytes {
        out.append(digits[Int(byte >> 4)])
        out.append(digits[Int(byte & 15)])
    }
    return String(decoding: out, as: UTF8.self)
}
