// App and host metadata with seed 000's wire names. The seed was written for iOS; on Linux:
//
// | seed 000 field        | here                                                                   |
// |-----------------------|------------------------------------------------------------------------|
// | app_name              | Configuration.appName (default: the executable's name)                 |
// | app_version           | Configuration.appVersion                                               |
// | build_number          | Configuration.buildNumber                                              |
// | bundle_id             | Configuration.appID                                                    |
// | environment           | Configuration.environment ("development" / "staging" / "production")   |
// | device_model          | DMI vendor + product (/sys/devices/virtual/dmi/id), else the machine   |
// | device_identifier     | SHA-256 of /etc/machine-id, first 8 hex digits (seed: hashed UDID)     |
// | ios_version           | the OS: /etc/os-release PRETTY_NAME + "; kernel " + uname -r           |
// | locale, timezone      | LC_ALL / LANG; TZ, /etc/timezone or the /etc/localtime link            |
// | is_simulator          | true when virtualised or in a container (see `virtualization`)         |
// | available_storage_mb  | free space of the file system holding the reports directory            |
// | total_memory_mb       | MemTotal of /proc/meminfo                                              |
// | battery_level / state | /sys/class/power_supply/BAT*: only when the host has a battery         |
// Extra fields: cpu_model, cpu_count, hostname_hash (SHA-256 of the hostname, 8 hex), virtualization.
import CrashReportModel
import Foundation
import Glibc

extension HostMetadata {
    /// Reads the host now. `reportsDirectory` is the folder whose free space is reported.
    public static func current(reportsDirectory: String) -> HostMetadata {
        let vendor = read("/sys/devices/virtual/dmi/id/sys_vendor"), product = read("/sys/devices/virtual/dmi/id/product_name")
        var name = utsname()
        uname(&name)
        let machine = withUnsafeBytes(of: name.machine) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let release = withUnsafeBytes(of: name.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let host = withUnsafeBytes(of: name.nodename) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let model = [vendor, product].compactMap { $0 }.joined(separator: " ")
        let pretty = osRelease()["PRETTY_NAME"] ?? "Linux"
        let virtualization = detectVirtualization(vendor: vendor, product: product)
        var storage = statvfs()
        let readable = statvfs(reportsDirectory, &storage) == 0
        // Saturating: some FUSE file systems report block counts near 2^64.
        let bytes = UInt64(storage.f_bavail).multipliedReportingOverflow(by: UInt64(storage.f_frsize))
        let free = readable ? Int(clamping: (bytes.overflow ? UInt64.max : bytes.partialValue) / 1_048_576) : 0
        let battery = batteryStatus()
        return HostMetadata(
            device_model: model.isEmpty ? machine : model,
            device_identifier: deviceIdentifier(hostname: host),
            ios_version: "\(pretty); kernel \(release)",
            locale: ProcessInfo.processInfo.environment["LC_ALL"] ?? ProcessInfo.processInfo.environment["LANG"] ?? "C",
            timezone: timezone(),
            is_simulator: virtualization != "none",
            available_storage_mb: free,
            total_memory_mb: (meminfo()["MemTotal"] ?? 0) / 1024,
            battery_level: battery?.level, battery_state: battery?.state,
            cpu_model: cpuModel(), cpu_count: max(0, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))),
            hostname_hash: String(SHA256.hex(Array(host.utf8)).prefix(8)),
            virtualization: virtualization)
    }

    /// SHA-256 of /etc/machine-id (else of the host name), first 8 hex digits.
    static func deviceIdentifier(hostname: String? = nil) -> String {
        let host = hostname ?? {
            var name = utsname()
            uname(&name)
            return withUnsafeBytes(of: name.nodename) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        }()
        return String(SHA256.hex(Array((read("/etc/machine-id") ?? host).utf8)).prefix(8))
    }

    /// The file's text without leading and trailing white space; nil if unreadable or blank.
    /// With open/read (CrashReportModel's readFile): the first pass of a quiet launch reads
    /// /etc/machine-id here, and String(contentsOfFile:) with trimmingCharacters would be its
    /// first use of that Foundation code.
    /// The trim is of ASCII white space, byte by byte: `Character.isWhitespace` over a reversed
    /// view cost ~1.5 ms of CPU at a launch's first use (runtime conformance look-ups in a large
    /// binary; perf of 15 launches of the release Hummingbird example). These files hold ASCII.
    static func read(_ path: String) -> String? {
        guard let data = try? readFile(path), let kept = asciiTrimmed(data) else { return nil }
        return String(decoding: data[kept], as: UTF8.self)
    }

    /// Where `bytes` holds something besides ASCII white space (space, tab, newline, vertical
    /// tab, form feed, carriage return); nil when blank.
    static func asciiTrimmed<Bytes: BidirectionalCollection<UInt8>>(_ bytes: Bytes) -> ClosedRange<Bytes.Index>? {
        let isSpace = { (byte: UInt8) in byte == 32 || (9...13).contains(byte) }
        guard let first = bytes.firstIndex(where: { !isSpace($0) }), let last = bytes.lastIndex(where: { !isSpace($0) }) else { return nil }
        return first...last
    }

    private static func osRelease() -> [String: String] {
        var fields: [String: String] = [:]
        for line in (read("/etc/os-release") ?? "").split(separator: "\n") {
            let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
            if parts.count == 2 { fields[parts[0]] = parts[1].trimmingCharacters(in: CharacterSet(charactersIn: "\"")) }
        }
        return fields
    }

    private static func meminfo() -> [String: Int] {
        var fields: [String: Int] = [:]
        for line in (read("/proc/meminfo") ?? "").split(separator: "\n") {
            let parts = line.split(separator: " ", omittingEmptySubsequences: true)
            if parts.count >= 2, let value = Int(parts[1]) { fields[String(parts[0].dropLast())] = value }
        }
        return fields
    }

    private static func cpuModel() -> String {
        for line in (read("/proc/cpuinfo") ?? "").split(separator: "\n") where line.hasPrefix("model name") {
            return line.split(separator: ":", maxSplits: 1).last.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        }
        return ""
    }

    private static func timezone() -> String {
        if let tz = ProcessInfo.processInfo.environment["TZ"], !tz.isEmpty { return tz }
        if let tz = read("/etc/timezone") { return tz }
        if let link = try? FileManager.default.destinationOfSymbolicLink(atPath: "/etc/localtime"), let range = link.range(of: "zoneinfo/") {
            return String(link[range.upperBound...])
        }
        return "UTC"
    }

    private static func detectVirtualization(vendor: String?, product: String?) -> String {
        if FileManager.default.fileExists(atPath: "/.dockerenv") || FileManager.default.fileExists(atPath: "/run/.containerenv") {
            return "container"
        }
        if let cgroup = read("/proc/1/cgroup"), ["docker", "kubepods", "lxc", "containerd"].contains(where: cgroup.contains) {
            return "container"
        }
        let dmi = ((vendor ?? "") + " " + (product ?? "")).lowercased()
        for (needle, name) in [("kvm", "kvm"), ("qemu", "qemu"), ("vmware", "vmware"), ("virtualbox", "virtualbox"),
                               ("microsoft", "hyperv"), ("xen", "xen"), ("amazon ec2", "kvm"), ("google", "kvm")] where dmi.contains(needle) {
            return name
        }
        if let type = read("/sys/hypervisor/type") { return type }
        if (read("/proc/cpuinfo") ?? "").contains(" hypervisor") { return "hypervisor" }
        return "none"
    }

    private static func batteryStatus() -> (level: Double, state: String)? {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: "/sys/class/power_supply") else { return nil }
        for name in names.sorted() where name.hasPrefix("BAT") {
            let base = "/sys/class/power_supply/" + name
            guard let capacity = read(base + "/capacity").flatMap(Double.init) else { continue }
            let status = (read(base + "/status") ?? "").lowercased()
            let state = status == "charging" ? "charging" : status == "full" ? "full" : "unplugged"
            return (min(max(capacity / 100, 0), 1), state)
        }
        return nil
    }
}

extension String {
    fileprivate var nilIfEmpty: String? { isEmpty ? nil : self }
}

/// FIPS 180-4 SHA-256, for hashing identifiers (no crypto dependency in the runtime library).
enum SHA256 {
    private static let k: [UInt32] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
    ]

    static func hex(_ message: [UInt8]) -> String {
        var h: [UInt32] = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]
        var data = message
        data.append(0x80)
        while data.count % 64 != 56 { data.append(0) }
        let bits = UInt64(message.count) * 8
        for shift in stride(from: 56, through: 0, by: -8) { data.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift))) }
        func rotr(_ x: UInt32, _ n: UInt32) -> UInt32 { (x >> n) | (x << (32 - n)) }
        var w = [UInt32](repeating: 0, count: 64)
        for chunk in stride(from: 0, to: data.count, by: 64) {
            for i in 0..<16 {
                w[i] = data[chunk + 4 * i ..< chunk + 4 * i + 4].reduce(0) { $0 << 8 | UInt32($1) }
            }
            for i in 16..<64 {
                let s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3)
                let s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10)
                w[i] = w[i - 16] &+ s0 &+ w[i - 7] &+ s1
            }
            var (a, b, c, d, e, f, g, hh) = (h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7])
            for i in 0..<64 {
                let t1 = hh &+ (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) &+ ((e & f) ^ (~e & g)) &+ k[i] &+ w[i]
                let t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) &+ ((a & b) ^ (a & c) ^ (b & c))
                (hh, g, f, e, d, c, b, a) = (g, f, e, d &+ t1, c, b, a, t1 &+ t2)
            }
            for (index, value) in [a, b, c, d, e, f, g, hh].enumerated() { h[index] = h[index] &+ value }
        }
        // Digits from a table: String(format:) was ~0.7 ms at a launch's first beacon.
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(64)
        for word in h {
            for shift in stride(from: 28, through: 0, by: -4) { out.append(digits[Int((word >> UInt32(shift)) & 0xF)]) }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
