// Seed 002's QR code (GET /connect/qr.svg): the SVG read back module by module is a QR symbol of
// the deep link (finder and timing patterns; the very grid `qrencode -l M` draws for the same
// text), the modal shows it, and the same validation as the modal answers 400.
import Foundation
import Testing

@Suite struct ConnectQRTests {
    static let link = "dev-see-com.example.app://connect?server_ip=192.168.1.23&server_port=9090"

    @Test func qrCodeOfTheDeepLinkIsAnSVGOfItsModules() async throws {
        try await TestCollector.with { collector in
            let answer = try await collector.read("/connect/qr.svg?app_id=com.example.app&host=192.168.1.23&port=9090")
            #expect(answer.status == 200)
            #expect(answer.header("Content-Type") == "image/svg+xml")
            #expect(answer.text.hasPrefix("<svg xmlns=\"http://www.w3.org/2000/svg\""))
            #expect(answer.text.contains("<title>\(Self.link.replacingOccurrences(of: "&", with: "&amp;"))</title>"))
            let grid = try #require(QRGrid(svg: answer.text))

            // A QR symbol: 17 + 4·version modules a side, three finder patterns, the timing rows.
            #expect((grid.size - 17) % 4 == 0 && grid.size >= 21)
            for (x, y) in [(0, 0), (grid.size - 7, 0), (0, grid.size - 7)] {
                #expect(grid.hasFinder(x: x, y: y), "no finder pattern at \(x),\(y)")
            }
            for i in 8..<(grid.size - 8) {
                #expect(grid.dark(i, 6) == (i % 2 == 0) && grid.dark(6, i) == (i % 2 == 0), "timing pattern broken at \(i)")
            }
            #expect(grid.darkCount > grid.size * grid.size / 4)

            // Module for module what the qrencode command (the same libqrencode, its own front end)
            // draws for the link at level M.
            if let ascii = try Self.qrencodeASCII(Self.link) {
                #expect(grid.rows == ascii, "the SVG's modules differ from `qrencode -l M -t ASCII`")
            } else {
                Issue.record("qrencode is not installed (apt-get install qrencode): the grid is not compared")
            }

            // Host and port may be left out: the detected ones, as in the modal.
            let detected = try await collector.read("/connect/qr.svg?app_id=com.example.app")
            #expect(detected.status == 200)
            #expect(detected.text.contains("server_ip=127.0.0.1&amp;server_port=\(collector.base.port!)"))
            // Another link, another code.
            let other = try await collector.read("/connect/qr.svg?app_id=com.example.other&host=192.168.1.23&port=9090")
            #expect(try #require(QRGrid(svg: other.text)).rows != grid.rows)
        }
    }

    @Test func invalidLinksAnswer400AndTheImageNeedsTheDashboardPassword() async throws {
        try await TestCollector.with { collector in
            for query in ["", "app_id=", "app_id=com..bad%20id", "app_id=com.example.app%2F..", "app_id=\(String(repeating: "a", count: 156))",
                          "app_id=com.example.app&port=0", "app_id=com.example.app&port=65536", "app_id=com.example.app&port=abc",
                          "app_id=com.example.app&port=-1", "app_id=com.example.app&port=", "app_id=com.example.app&host=",
                          "app_id=com.example.app&host=bad%20host", "app_id=com.example.app&host=-lan", "app_id=com.example.app&host=a..b",
                          "app_id=com.example.app&host=\(String(repeating: "a", count: 64))"] {
                let answer = try await collector.read("/connect/qr.svg?\(query)")
                #expect(answer.status == 400, "\(query) answered \(answer.status)")
                #expect(answer.json["error"] as? String == "validation_failed", "\(query)")
            }
            #expect(try await collector.read("/connect/qr.svg?app_id=com.example.app&host=collector.lan&port=65535").status == 200)
            #expect(try await collector.read("/connect/qr.svg?app_id=com.example.app&port=1").status == 200)
            let anonymous = try await collector.read("/connect/qr.svg?app_id=com.example.app", authorized: false)
            #expect(anonymous.status == 401)
        }
    }

    @Test func modalShowsTheQRImageAndTheLinkNamesIt() async throws {
        try await TestCollector.with { collector in
            let home = try await collector.read("/")
            for expected in ["id=\"qr\"", "id=\"qr-box\"", "id=\"qr-error\"", "/connect/qr.svg?app_id="] {
                #expect(home.text.contains(expected), "modal lacks \(expected)")
            }
            let link = try await collector.read("/api/connect-link?app_id=com.example.app")
            let path = try #require(link.json["qr_svg"] as? String)
            #expect(path == "/connect/qr.svg?app_id=com.example.app&host=127.0.0.1&port=\(collector.base.port!)")
            #expect(try await collector.read(path).status == 200)
            #expect(try await collector.read("/api/connect-link?app_id=bad%20id").json["qr_svg"] == nil)
        }
    }

    /// `qrencode -l M -m 0 -t ASCII text` as rows of booleans ("##" a dark module), nil when the
    /// command is not installed.
    static func qrencodeASCII(_ text: String) throws -> [[Bool]]? {
        guard let path = ["/usr/bin/qrencode", "/usr/local/bin/qrencode", "/opt/homebrew/bin/qrencode"]
            .first(where: FileManager.default.isExecutableFile(atPath:)) else { return nil }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = ["-l", "M", "-m", "0", "-t", "ASCII", text]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { return nil }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map { line in
            let characters = Array(line)
            return stride(from: 0, to: characters.count, by: 2).map { characters[$0] == "#" }
        }
    }
}

/// The module grid of the collector's QR SVG: a viewBox with a 4-module quiet zone, one 1×1 rect
/// per dark module.
struct QRGrid {
    let size: Int
    let rows: [[Bool]]

    init?(svg: String) {
        guard let box = svg.firstMatch(of: #/viewBox="0 0 (\d+) (\d+)"/#), box.1 == box.2, let side = Int(box.1) else { return nil }
        let margin = 4
        size = side - 2 * margin
        guard size >= 21 else { return nil }
        var rows = Array(repeating: Array(repeating: false, count: size), count: size)
        for match in svg.matches(of: #/<rect x="(\d+)" y="(\d+)" width="1" height="1"\/>/#) {
            guard let x = Int(match.1).map({ $0 - margin }), let y = Int(match.2).map({ $0 - margin }),
                  (0..<size).contains(x), (0..<size).contains(y), !rows[y][x] else { return nil }
            rows[y][x] = true
        }
        self.rows = rows
    }

    func dark(_ x: Int, _ y: Int) -> Bool { rows[y][x] }

    var darkCount: Int { rows.joined().filter { $0 }.count }

    /// A 7×7 finder pattern at (x, y): dark ring, light ring, dark 3×3 centre.
    func hasFinder(x: Int, y: Int) -> Bool {
        (0..<7).allSatisfy { dy in
            (0..<7).allSatisfy { dx in
                let ring = min(dx, dy, 6 - dx, 6 - dy)
                return dark(x + dx, y + dy) == (ring != 1)
            }
        }
    }
}
