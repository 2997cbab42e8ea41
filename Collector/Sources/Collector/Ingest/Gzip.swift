// gunzip for request bodies sent with Content-Encoding: gzip, through compress-nio (zlib under
// ByteBuffers). The output is capped: 5 MiB of gzip can inflate to gigabytes, and a collector must
// not be the one to find out. compress-nio's one-call helpers neither cap per window nor tell a
// stream that ended from one cut short, so the loop below drives its decompressor itself.
import CompressNIO
import NIOCore

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

    static let window = 64 * 1024

    /// Output sizes at which `checkpoint` looks at what is inflated so far: doubling, so that the
    /// looks at a document cost less than two looks at the whole.
    static let firstCheckpoint = 64 * 1024

    /// The inflated bytes of one gzip member; throws past `limit` output bytes, for a stream cut
    /// short, and for bytes after the member's end (a second member would otherwise be lost unsaid).
    /// `checkpoint` is shown the output so far each time it passes 64 KiB, 128 KiB, 256 KiB…; what it
    /// throws stops the inflation (a JSON bomb is refused at its first limit, not after 8 MiB).
    static func decompress(_ data: [UInt8], limit: Int, checkpoint: (([UInt8]) throws -> Void)? = nil) throws -> [UInt8] {
        guard !data.isEmpty else { throw Failure.invalid("empty body") }
        let decompressor: ZlibDecompressor
        do {
            decompressor = try ZlibDecompressor(algorithm: .gzip)
        } catch {
            throw Failure.invalid("zlib could not start: \(error)")
        }
        var input = ByteBuffer(bytes: data)
        var window = ByteBufferAllocator().buffer(capacity: Self.window)
        var output: [UInt8] = []
        output.reserveCapacity(min(limit, data.count * 4))
        var nextCheckpoint = Self.firstCheckpoint
        while true {
            window.clear()
            // No error: zlib stopped with room left in the window, so either the stream ended or
            // every input byte was taken.
            var stopped = true
            do {
                try decompressor.inflate(from: &input, to: &window)
            } catch let error as CompressNIOError where error == .bufferOverflow {
                stopped = false   // the window is full; more to come
            } catch let error as CompressNIOError where error == .inputBufferOverflow {
                throw Failure.invalid("truncated stream")
            } catch let error as CompressNIOError where error == .corruptData {
                throw Failure.invalid("corrupt data")
            } catch {
                throw Failure.invalid("\(error)")
            }
            guard output.count + window.readableBytes <= limit else { throw Failure.tooLarge(limit: limit) }
            output.append(contentsOf: window.readableBytesView)
            if let checkpoint, output.count >= nextCheckpoint {
                try checkpoint(output)
                nextCheckpoint = output.count * 2
            }
            guard stopped else { continue }
            if input.readableBytes > 0 { throw Failure.invalid("data after the end of the gzip stream") }
            guard ended(decompressor) else { throw Failure.invalid("truncated stream") }
            return output
        }
    }

    /// Whether the stream has ended, asked once every input byte was taken. zlib answers an ended
    /// stream without reading more, so one probe byte is left unread exactly then; a stream still
    /// open reads it (or calls it corrupt).
    private static func ended(_ decompressor: ZlibDecompressor) -> Bool {
        var probe = ByteBuffer(bytes: [0])
        var room = ByteBufferAllocator().buffer(capacity: 16)
        do {
            try decompressor.inflate(from: &probe, to: &room)
        } catch {
            return false
        }
        return probe.readableBytes == 1 && room.readableBytes == 0
    }
}
