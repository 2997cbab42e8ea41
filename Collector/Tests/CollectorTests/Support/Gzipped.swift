// gzip for test request bodies (the runtime gzips every upload; the collector only inflates).
import CCollectorZlib
import Foundation

enum Gzipped {
    struct Failure: Error { var code: Int32 }

    static func compress(_ data: Data) throws -> Data {
        var stream = z_stream()
        // windowBits 15 + 16: a gzip header and trailer, as Content-Encoding: gzip means.
        var status = deflateInit2_(&stream, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY, zlibVersion(),
                                   Int32(MemoryLayout<z_stream>.size))
        guard status == Z_OK else { throw Failure(code: status) }
        defer { deflateEnd(&stream) }
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, uLong(data.count))) + 64)
        var input = [UInt8](data)
        let written: Int = input.withUnsafeMutableBufferPointer { source in
            output.withUnsafeMutableBufferPointer { target in
                stream.next_in = source.baseAddress
                stream.avail_in = uInt(source.count)
                stream.next_out = target.baseAddress
                stream.avail_out = uInt(target.count)
                status = deflate(&stream, Z_FINISH)
                return target.count - Int(stream.avail_out)
            }
        }
        guard status == Z_STREAM_END else { throw Failure(code: status) }
        return Data(output[0..<written])
    }
}
