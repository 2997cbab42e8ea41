// Seed 000's size limits, applied to a payload before it is sent, keeping the most recent entries;
// the 5 MB limit is on the gzip'd body, so encoding and compression happen here too. A 413 from
// the server shrinks the payload once more (oldest logs and custom data first).
import CZlib
import CrashReportModel
import Foundation

enum PayloadLimits {
    typealias Limits = DiagnosticsPayload.Limits

    /// Cuts counts and lengths to the seed's limits.
    static func apply(_ payload: inout DiagnosticsPayload) {
        payload.logs = Array(payload.logs.suffix(Limits.logEntries))
        // Counted in Unicode scalars, as JSON Schema's maxLength counts (a Character can hold several).
        for index in payload.logs.indices where payload.logs[index].message.unicodeScalars.count > Limits.logMessageCharacters {
            var scalars = String.UnicodeScalarView()
            scalars.append(contentsOf: payload.logs[index].message.unicodeScalars.prefix(Limits.logMessageCharacters - 1))
            payload.logs[index].message = String(scalars) + "…"
        }
        payload.network_errors = Array(payload.network_errors.suffix(Limits.networkErrors))
        payload.crash_reports = Array(payload.crash_reports.suffix(Limits.crashReports))
        for index in payload.crash_reports.indices {
            payload.crash_reports[index].stack_trace = Array(payload.crash_reports[index].stack_trace.prefix(Limits.stackFrames))
            for thread in payload.crash_reports[index].thread_info.indices {
                payload.crash_reports[index].thread_info[thread].frames =
                    Array(payload.crash_reports[index].thread_info[thread].frames.prefix(Limits.stackFrames))
            }
        }
        payload.screenshots = Array(payload.screenshots.suffix(Limits.screenshots))
        // custom_data over 100 KB: drop the largest values first (ties by name) until it fits.
        var sizes = payload.custom_data.mapValues { encodedSize(of: $0) }
        while !payload.custom_data.isEmpty, encodedSize(of: payload.custom_data) > Limits.customDataBytes {
            let largest = sizes.max { $0.value != $1.value ? $0.value < $1.value : $0.key > $1.key }!.key
            payload.custom_data[largest] = nil
            sizes[largest] = nil
        }
    }

    /// The oldest half of the logs and all custom data go, then the oldest half of the network
    /// errors; nil when nothing is left to drop.
    static func shrunk(_ payload: DiagnosticsPayload) -> DiagnosticsPayload? {
        var smaller = payload
        if !smaller.logs.isEmpty || !smaller.custom_data.isEmpty {
            smaller.logs.removeFirst(smaller.logs.count - smaller.logs.count / 2)
            smaller.custom_data = [:]
            return smaller
        }
        if !smaller.network_errors.isEmpty {
            smaller.network_errors.removeFirst(smaller.network_errors.count - smaller.network_errors.count / 2)
            return smaller
        }
        return nil
    }

    /// The gzip'd JSON body within `maxCompressedBytes`, shrinking as needed; nil when even the
    /// smallest form is too large (a crash report alone cannot be: 50 frames are a few KB).
    /// `gzipped`: the payload's gzip'd JSON (an upload pass's comes from its memo: encoded once a record).
    static func body(for payload: inout DiagnosticsPayload, maxCompressedBytes: Int = Limits.compressedBytes,
                     gzipped: (DiagnosticsPayload) throws -> Data = { try Gzip.compress($0.encoded()) }) throws -> Data? {
        while true {
            let compressed = try gzipped(payload)
            if compressed.count <= maxCompressedBytes { return compressed }
            guard let smaller = shrunk(payload) else { return nil }
            payload = smaller
        }
    }

    private static func encodedSize<T: Encodable>(of value: T) -> Int {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        return (try? encoder.encode(value).count) ?? 0
    }
}

/// gzip (RFC 1952) through the system's zlib. (SPI for the benchmarks, which time it as a baseline.)
@_spi(Benchmarks) public enum Gzip {
    struct Failure: Error, CustomStringConvertible {
        var code: Int32
        var description: String { "zlib error \(code)" }
    }

    public static func compress(_ data: Data, level: Int32 = 6) throws -> Data {
        var stream = z_stream()
        // windowBits 15 + 16: a gzip header and trailer instead of zlib's.
        var status = deflateInit2_(&stream, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY, zlibVersion(),
                                   Int32(MemoryLayout<z_stream>.size))
        guard status == Z_OK else { throw Failure(code: status) }
        defer { deflateEnd(&stream) }
        var output = Data(count: Int(deflateBound(&stream, uLong(data.count))) + 32)
        let written: Int = try data.withUnsafeBytes { input in
            try output.withUnsafeMutableBytes { out in
                stream.next_in = UnsafeMutablePointer(mutating: input.bindMemory(to: Bytef.self).baseAddress)
                stream.avail_in = uInt(input.count)
                stream.next_out = out.bindMemory(to: Bytef.self).baseAddress
                stream.avail_out = uInt(out.count)
                status = deflate(&stream, Z_FINISH)
                guard status == Z_STREAM_END else { throw Failure(code: status) }
                return out.count - Int(stream.avail_out)
            }
        }
        output.count = written
        return output
    }

    /// The most `decompress` allocates from the trailer's word before inflating (16 MiB: a
    /// diagnostics body is at most 5 MB gzip'd).
    static let largestHint = 16 << 20

    /// What `decompress` allocates first: the gzip trailer's length (its last four bytes, the size
    /// modulo 2^32). That is only a hint, read before zlib has checked anything, so it is trusted
    /// only so far: a gzip stream's (magic 1F 8B; zlib's own format ends in a checksum), never more
    /// than deflate's largest ratio (1032:1) allows, nor more than `largestHint`; 64 KiB at least.
    /// (Review, 2026-11-29: a body that was no gzip, ending in FF FF FF FF, asked for 4 GiB at once.)
    static func initialCapacity(for data: Data) -> Int {
        let least = 64 * 1024
        guard data.count >= 18, data[data.startIndex] == 0x1F, data[data.startIndex + 1] == 0x8B else { return least }
        let size = data.suffix(4).reversed().reduce(0) { $0 << 8 | Int($1) }
        return max(least, min(size, data.count * 1032, largestHint))
    }

    public static func decompress(_ data: Data) throws -> Data {
        var stream = z_stream()
        var status = inflateInit2_(&stream, 15 + 32, zlibVersion(), Int32(MemoryLayout<z_stream>.size))
        guard status == Z_OK else { throw Failure(code: status) }
        defer { inflateEnd(&stream) }
        // Inflated in place into the result, sized at once (`initialCapacity`); it grows when that was short.
        var result = Data(count: initialCapacity(for: data))
        var produced = 0
        try data.withUnsafeBytes { input in
            stream.next_in = UnsafeMutablePointer(mutating: input.bindMemory(to: Bytef.self).baseAddress)
            stream.avail_in = uInt(input.count)
            repeat {
                if produced == result.count { result.count += result.count }
                produced = result.withUnsafeMutableBytes { out in
                    let room = min(out.count - produced, Int(UInt32.max))
                    stream.next_out = out.bindMemory(to: Bytef.self).baseAddress! + produced
                    stream.avail_out = uInt(room)
                    status = inflate(&stream, Z_NO_FLUSH)
                    return produced + room - Int(stream.avail_out)
                }
                guard status == Z_OK || status == Z_STREAM_END else { throw Failure(code: status) }
            } while status != Z_STREAM_END
        }
        result.count = produced
        return result
    }
}
