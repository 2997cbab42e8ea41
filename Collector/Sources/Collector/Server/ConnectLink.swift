// Seed 002's "Connect App" deep link, dev-see-<appID>://connect?server_ip=…&server_port=…, and the
// address to put in it: a phone on the LAN cannot reach 127.0.0.1, so when the collector listens on
// every interface the first LAN IPv4 address of this machine is offered instead.
import Foundation
#if canImport(Glibc)
import Glibc
#endif

struct ConnectLinkBody: Codable, Equatable {
    var app_id: String
    var valid: Bool
    var error: String?
    var server_ip: String
    var server_port: Int
    var deep_link: String?
    /// The dashboard path of the link's QR code (SVG), when the link is valid.
    var qr_svg: String?
    /// Set when the collector listens on loopback only: a phone cannot reach it.
    var warning: String?
}

enum ConnectLink {
    /// The same rule the page's JavaScript applies: a bundle id (letters, digits, hyphens, dot
    /// separated), which is also valid in a URL scheme after "dev-see-".
    static func validate(appID: String) -> String? {
        if appID.isEmpty { return "Enter the app's bundle id, e.g. com.example.app" }
        if appID.count > 155 { return "The bundle id is too long" }
        let labels = appID.split(separator: ".", omittingEmptySubsequences: false)
        let valid = labels.allSatisfy { label in
            !label.isEmpty && label.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }
        }
        return valid ? nil : "A bundle id has letters, digits and hyphens, separated by dots (e.g. com.example.app)"
    }

    /// Seed 002 §5.2: `server_ip` is an IPv4 address or a host name (dot-separated labels of
    /// letters, digits and hyphens, 63 characters each, 253 in all).
    static func validate(host: String) -> String? {
        if host.isEmpty { return "The server host is missing" }
        if host.utf8.count > 253 { return "The server host is too long" }
        let labels = host.split(separator: ".", omittingEmptySubsequences: false)
        let valid = labels.allSatisfy { label in
            !label.isEmpty && label.count <= 63 && label.first != "-" && label.last != "-"
                && label.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }
        }
        return valid ? nil : "The server host is an IPv4 address or a host name (e.g. 192.168.1.23)"
    }

    /// Seed 002 §5.2: `server_port` is an integer 1...65535.
    static func port(_ text: String) -> Int? {
        guard !text.isEmpty, text.count <= 5, text.allSatisfy({ $0.isASCII && $0.isNumber }),
              let port = Int(text), (1...65535).contains(port) else { return nil }
        return port
    }

    /// The dashboard path serving the QR code of a link (GET /connect/qr.svg).
    static func qrPath(appID: String, host: String, port: Int) -> String {
        var components = URLComponents()
        components.path = "/connect/qr.svg"
        components.queryItems = [URLQueryItem(name: "app_id", value: appID), URLQueryItem(name: "host", value: host),
                                 URLQueryItem(name: "port", value: String(port))]
        return components.string ?? "/connect/qr.svg"
    }

    static func deepLink(appID: String, host: String, port: Int) -> String {
        var components = URLComponents()
        components.scheme = "dev-see-" + appID
        components.host = "connect"
        components.queryItems = [URLQueryItem(name: "server_ip", value: host), URLQueryItem(name: "server_port", value: String(port))]
        return components.string ?? "dev-see-\(appID)://connect?server_ip=\(host)&server_port=\(port)"
    }

    static func isWildcard(_ host: String) -> Bool { ["0.0.0.0", "::", "[::]", ""].contains(host) }
    static func isLoopback(_ host: String) -> Bool { host == "localhost" || host == "::1" || host.hasPrefix("127.") }

    /// The addresses a phone could use: the bound host itself, or every non-loopback IPv4 address
    /// of the machine when bound to all interfaces (first one first).
    static func candidateHosts(boundHost: String, advertised: String?) -> [String] {
        if let advertised, !advertised.isEmpty { return [advertised] }
        guard isWildcard(boundHost) else { return [boundHost] }
        let addresses = lanAddresses()
        return addresses.isEmpty ? ["127.0.0.1"] : addresses
    }

    static func lanAddresses() -> [String] {
        var result: [String] = []
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return [] }
        defer { freeifaddrs(list) }
        var cursor: UnsafeMutablePointer<ifaddrs>? = first
        while let entry = cursor {
            defer { cursor = entry.pointee.ifa_next }
            guard let address = entry.pointee.ifa_addr, address.pointee.sa_family == sa_family_t(AF_INET),
                  entry.pointee.ifa_flags & UInt32(IFF_UP) != 0, entry.pointee.ifa_flags & UInt32(IFF_LOOPBACK) == 0 else { continue }
            var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
            let ok = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { ipv4 in
                var raw = ipv4.pointee.sin_addr
                return inet_ntop(AF_INET, &raw, &text, socklen_t(text.count)) != nil
            }
            if ok { result.append(String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)) }
        }
        return result
    }
}
