// App and host metadata (seed 000 names, Linux meanings) and the SHA-256 behind the identifiers.
@testable import CrashReporting
import CrashReportModel
import Foundation
import Testing

@Suite("Metadata")
struct MetadataTests {
    @Test("SHA-256 known answers", arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
    ])
    func sha256(_ input: String, _ digest: String) {
        #expect(SHA256.hex(Array(input.utf8)) == digest)
    }

    @Test("a file's text is read without surrounding white space; blank and missing files are nil")
    func readTrimmed() throws {
        let path = NSTemporaryDirectory() + "/metadata-read-\(getpid())"
        defer { unlink(path) }
        let long = String(repeating: "x", count: 9000)   // more than one 4 KiB read
        for (content, expected) in [("  abc\n", "abc"), ("\t\n", nil), ("a b\r\n\n", "a b"), ("é ü\n", "é ü"), (long + "\n", long)] as [(String, String?)] {
            try content.write(toFile: path, atomically: true, encoding: .utf8)
            #expect(HostMetadata.read(path) == expected)
        }
        #expect(HostMetadata.read(path + ".missing") == nil)
    }

    @Test("a beacon's JSON strings read back as written", arguments: ["plain", "quote \" and \\ backslash", "tab\tnew\nline\r", "\u{1}\u{1f} controls", "é ü 🚀", ""])
    func beaconJSONStrings(_ text: String) throws {
        let json = CrashReporter.compactJSON(["k": text])
        let object = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: String]
        #expect(object == ["k": text], "\(json)")
    }

    @Test("app metadata comes from the configuration")
    func appMetadata() throws {
        try SharedReporter.start()
        let app = try #require(CrashReporter.appMetadata)
        #expect(app == AppMetadata(app_name: app.app_name, app_version: "3.1.4", build_number: "271",
                                   bundle_id: "com.example.in-process-tests", environment: "staging"))
        #expect(!app.app_name.isEmpty)
    }

    @Test("host metadata matches what the system says")
    func hostMetadata() throws {
        try SharedReporter.start()
        let host = try #require(CrashReporter.hostMetadata())
        if let machineID = try? String(contentsOfFile: "/etc/machine-id", encoding: .utf8) {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
            let input = Pipe(), output = Pipe()
            process.standardInput = input
            process.standardOutput = output
            try process.run()
            input.fileHandleForWriting.write(Data(machineID.trimmingCharacters(in: .whitespacesAndNewlines).utf8))
            try input.fileHandleForWriting.close()
            process.waitUntilExit()
            let digest = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(host.device_identifier == String(digest.prefix(8)))
        }
        #expect(host.device_identifier.count == 8)
        let meminfo = try String(contentsOfFile: "/proc/meminfo", encoding: .utf8)
        let total = meminfo.split(separator: "\n").first { $0.hasPrefix("MemTotal:") }!.split(separator: " ")[1]
        #expect(host.total_memory_mb == Int(total)! / 1024)
        #expect(host.available_storage_mb > 0)
        #expect(host.ios_version.contains("; kernel "))
        #expect(host.is_simulator == (host.virtualization != "none"))
        #expect(host.cpu_count > 0)
        let battery = (try? FileManager.default.contentsOfDirectory(atPath: "/sys/class/power_supply"))?.contains { $0.hasPrefix("BAT") } ?? false
        #expect((host.battery_level != nil) == battery)
        let json = String(decoding: try JSONEncoder().encode(host), as: UTF8.self)
        #expect(json.contains(#""device_identifier""#) && json.contains(#""total_memory_mb""#))
    }

    @Test("cgroup files: a number with white space around it, and where the memory hierarchies are mounted")
    func cgroupParsing() {
        #expect(MemoryCgroup.number("268435456\n") == 268_435_456)
        #expect(MemoryCgroup.number(" 42 \t") == 42)
        #expect(MemoryCgroup.number("max\n") == nil)
        #expect(MemoryCgroup.number("\n") == nil && MemoryCgroup.number("") == nil)
        let hybrid = """
        25 30 0:22 / /sys rw,nosuid shared:7 - sysfs sysfs rw
        31 25 0:26 / /sys/fs/cgroup/unified rw,nosuid shared:10 - cgroup2 cgroup2 rw,nsdelegate
        35 25 0:30 / /sys/fs/cgroup/memory rw,nosuid shared:15 master:3 - cgroup cgroup rw,memory
        36 25 0:31 / /sys/fs/cgroup/cpu\\040x rw shared:16 - cgroup cgroup rw,cpu,cpuacct
        40 25 0:35 / - rw - tmpfs tmpfs rw
        """
        let found = MemoryCgroup.memoryMounts(mountinfo: hybrid)
        #expect(found.v1 == "/sys/fs/cgroup/memory" && found.v2 == "/sys/fs/cgroup/unified")
        let unified = MemoryCgroup.memoryMounts(mountinfo: "28 22 0:25 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n")
        #expect(unified.v1 == nil && unified.v2 == "/sys/fs/cgroup")
        #expect(MemoryCgroup.memoryMounts(mountinfo: "garbage\n1 2 3\n").v2 == nil)
    }
}
