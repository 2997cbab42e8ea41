// Seed 002's QR code: the Connect App deep link encoded with the system's libqrencode and drawn as
// SVG on the server, so the dashboard needs no QR script of its own.
import CQREncode

struct QRCode: Equatable, Sendable {
    /// Modules per side (21 for version 1, four more per version).
    let size: Int
    /// Row-major, `size * size` entries: true for a dark module.
    let modules: [Bool]

    /// The quiet zone the standard asks for around the symbol, in modules.
    static let margin = 4

    /// Encodes `text` the way `qrencode -l M` does (8-bit mode hint, case sensitive, smallest
    /// version that fits). Level M: a phone's camera still reads it off a screen with glare.
    /// Nil when libqrencode fails (text past a version 40 symbol's capacity, or out of memory).
    init?(_ text: String) {
        guard let code = QRcode_encodeString(text, 0, QR_ECLEVEL_M, QR_MODE_8, 1) else { return nil }
        defer { QRcode_free(code) }
        let width = Int(code.pointee.width)
        // Bit 0 of each byte is the module's colour; the other bits describe what it is part of.
        let buffer = UnsafeBufferPointer(start: code.pointee.data, count: width * width)
        size = width
        modules = buffer.map { $0 & 1 == 1 }
    }

    func isDark(x: Int, y: Int) -> Bool { modules[y * size + x] }

    /// An SVG in module units (viewBox with the quiet zone): a white background, then one
    /// 1×1 `<rect>` per dark module, so the image can be read back module by module.
    func svg(title: String) -> String {
        let side = size + 2 * Self.margin
        var out = """
            <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 \(side) \(side)" width="\(side * 6)" height="\(side * 6)" \
            shape-rendering="crispEdges"><title>\(h(title))</title><rect width="\(side)" height="\(side)" fill="#fff"/><g fill="#000">
            """
        out.reserveCapacity(out.utf8.count + modules.count * 20)
        for y in 0..<size {
            for x in 0..<size where isDark(x: x, y: y) {
                out += "<rect x=\"\(x + Self.margin)\" y=\"\(y + Self.margin)\" width=\"1\" height=\"1\"/>"
            }
        }
        out += "</g></svg>\n"
        return out
    }
}
