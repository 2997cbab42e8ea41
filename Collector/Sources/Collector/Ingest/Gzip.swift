// gunzip for request bodies sent with Content-Encoding: gzip, through the system's zlib. The output
// is capped: 5 MiB of gzip can inflate to gigabytes, and a collector must not be the one to find out.
import CCollectorZlib

enum Gzip {
    enum Failure: Error, CustomStringConvertible {
        case invalid(String)
        case tooLarge(limit: Int)

        var description: String {
            switch self {
            case .invalid(let reason): return "invalid gzip body: \(reason)"
            case .tooLarge(let limit): return "the body inflates past \(limit) bytes"
            }
        }
    }

    /// The inflated bytes of a gzip (or zlib) stream; throws past `limit` output bytes.
    static func decompress(_ data: [UInt8], limit: Int) throws -> [UInt8] {
        guard !data.isEmpty else { throw Failure.invalid("empty body") }
        var stream = z_stream()
        // windowBits 15 + 32: detect a gzip or a zlib header.
        var status = inflateInit2_(&stream, 15 + 32, zlibVersion(), Int32(MemoryLayout<z_stream>.size))
        guard status == Z_OK else { throw Failure.invalid("zlib init \(status)") }
        defer { inflateEnd(&stream) }
        var result: [UInt8] = []
        result.reserveCapacity(min(limit, data.count * 4))
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        try data.withUnsafeBufferPointer { input in
            stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress)
            stream.avail_in = uInt(input.count)
            repeat {
                let produced: Int = chunk.withUnsafeMutableBufferPointer { out in
                    stream.next_out = out.baseAddress
                    stream.avail_out = uInt(out.count)
                    status = inflate(&stream, Z_NO_FLUSH)
                    return out.count - Int(stream.avail_out)
                }
                guard status == Z_OK || status == Z_STREAM_END else {
                    // Z_BUF_ERROR: no progress possible, i.e. the input ended before the stream did.
                    let message = status == Z_BUF_ERROR ? "truncated stream" : stream.msg.map { String(cString: $0) } ?? "zlib status \(status)"
                    throw Failure.invalid(message)
                }
                guard result.count + produced <= limit else { throw Failure.tooLarge(limit: limit) }
                result.append(contentsOf: chunk[0..<produced])
            } while status != Z_STREAM_END
        }
        return result
    }
}
