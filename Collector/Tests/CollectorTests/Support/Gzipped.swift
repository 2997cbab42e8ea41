// gzip for test request bodies (the runtime gzips every upload; the collector only inflates).
import CompressNIO
import Foundation
import NIOCore

enum Gzipped {
    static func compress(_ data: Data) throws -> Data {
        var buffer = ByteBuffer(bytes: data)
        let compressed = try buffer.compress(with: .gzip)
        return Data(compressed.readableBytesView)
    }
}
