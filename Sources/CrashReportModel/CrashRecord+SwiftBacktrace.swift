// Reading the JSON that Swift's own backtracer writes (SWIFT_BACKTRACE=enable=yes,format=json)
// into a CrashRecord, so it is symbolicated the same way as the project's own records.
import Foundation
#if canImport(Glibc)
import Glibc
#endif

extension CrashRecord {
    /// Reads either format: the project's JSON Lines record, or Swift's backtracer JSON.
    public static func load(contentsOf url: URL) throws -> CrashRecord {
        let data = try readFile(url.path)
        if let first = data.first(where: { !($0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09) }), first == UInt8(ascii: "{"),
           !data.starts(with: Data(#"{"format":"#.utf8)),
           let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
           object["kind"] as? String == "crashReport", object["threads"] is [Any] {
            return try CrashRecord(swiftBacktrace: object, source: url.path)
        }
        return try CrashRecord(data: data, source: url.path)
    }

    /// Converts a parsed Swift backtracer report. Inlined frames are dropped (symbolication
    /// expands them again from DWARF); images become modules, with the load bias taken from the
    /// file's first PT_LOAD segment when the file is here, else from the image's base address.
    public init(swiftBacktrace object: [String: Any], source: String) throws {
        func fail(_ reason: String) -> CrashRecordError { CrashRecordError(source: source, line: 1, reason: reason) }
        guard let threads = object["threads"] as? [[String: Any]], !threads.isEmpty else { throw fail("Swift backtrace has no threads") }
        let crashedIndex = threads.firstIndex { $0["crashed"] as? Bool == true } ?? 0
        let crashed = threads[crashedIndex]

        version = Self.supportedVersion
        id = fileName(of: source).split(separator: ".").first.map(String.init) ?? source
        appID = ""
        appVersion = ""
        processID = 0
        timestamp = (object["timestamp"] as? String).flatMap { ISO8601DateFormatter.withFractionalSeconds.date(from: $0) } ?? Date(timeIntervalSince1970: 0)
        architecture = object["architecture"] as? String ?? ""
        signal = nil
        thread = Thread(id: 0, name: crashed["name"] as? String ?? "", isMain: crashedIndex == 0)
        registers = [:]
        for (name, value) in crashed["registers"] as? [String: String] ?? [:] {
            if let address = Address(hex: value) { registers[name] = address }
        }
        fatalMessage = nil
        frames = []
        for frame in crashed["frames"] as? [[String: Any]] ?? [] where frame["inlined"] as? Bool != true {
            guard let text = frame["address"] as? String, let address = Address(hex: text) else { continue }
            let kind: Frame.Kind
            switch frame["kind"] as? String {
            case "programCounter": kind = .programCounter
            case "returnAddress": kind = .returnAddress
            default: continue   // omitted or truncated markers
            }
            frames.append(Frame(index: frames.count, address: address, kind: kind))
        }
        stack = Stack(unwinder: "swift-backtrace", depth: frames.count, isTruncated: false, depthIsLowerBound: false)
        modules = []
        for image in object["images"] as? [[String: Any]] ?? [] {
            guard let path = image["path"] as? String,
                  let base = (image["baseAddress"] as? String).flatMap(Address.init(hex:)) else { continue }
            let end = (image["endOfText"] as? String).flatMap(Address.init(hex:)) ?? base
            let firstLoad = ELFFile.firstLoadAddress(atPath: path) ?? 0
            modules.append(Module(path: path, start: base, end: end, bias: Address(base.value &- firstLoad),
                                  buildID: BuildID(hex: image["buildId"] as? String ?? "")))
        }
        nestedCrash = nil
        watchdog = nil
        durableNanoseconds = nil
        hasEnd = true
        problems = []
        foreignDescription = object["description"] as? String
    }
}

extension ISO8601DateFormatter {
    fileprivate static var withFractionalSeconds: ISO8601DateFormatter {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter
    }
}

/// The whole file, with open/read: Data(contentsOf:) goes through URL and file-attribute
/// machinery whose first use cost crashtool ~1 % of a short run. Also the runtime's reader of
/// small host files (/etc/machine-id, /etc/os-release).
public func readFile(_ path: String) throws -> Data {
    func failure() -> CrashRecordError {
        CrashRecordError(source: path, line: 0, reason: "cannot read: \(String(cString: strerror(errno)))")
    }
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw failure() }
    defer { close(fd) }
    var info = stat()
    guard fstat(fd, &info) == 0 else { throw failure() }
    guard (info.st_mode & S_IFMT) == S_IFREG else {
        throw CrashRecordError(source: path, line: 0, reason: "cannot read: not a regular file")
    }
    var data = Data(count: max(Int(info.st_size), 0))
    var filled = 0
    while true {
        if filled == data.count { data.count += 64 * 1024 }   // the file grew, or st_size was 0
        let count = data.withUnsafeMutableBytes { read(fd, $0.baseAddress! + filled, $0.count - filled) }
        if count > 0 { filled += count } else if count < 0 && errno == EINTR { continue } else if count == 0 { break } else { throw failure() }
    }
    data.count = filled
    return data
}
