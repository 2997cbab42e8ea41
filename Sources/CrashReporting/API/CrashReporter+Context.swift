// Context that explains a crash: breadcrumbs (log, screen views, actions), custom keys and the
// user id. All of it goes into the session file, a shared file mapping that the signal handler
// never has to copy and that outlives the process, even under SIGKILL; the next launch attaches it
// to the crash record or turns it into an abnormal-termination report. Calls before `start` are
// ignored.
import CCrashCapture
import CrashReportModel
import Foundation
import Glibc
import Synchronization

extension CrashReporter {
    /// Severity of a breadcrumb (seed 000's LogEntry.level).
    public enum LogLevel: UInt8, Sendable, CaseIterable {
        case debug = 0, info, warning, error, fatal
    }

    /// The most characters a breadcrumb message keeps (seed 000: 1000); longer ones are cut.
    public static let maximumMessageCharacters = 1000
    /// The ring keeps this many breadcrumbs, the most recent (seed 000: 500 logs).
    public static let breadcrumbCapacity = 500
    /// Keys readable at crash time; setting one more evicts the key set least recently.
    public static let customKeyCapacity = 64

    /// Adds a breadcrumb. Lock-free and allocation-free for a message of at most 1000 characters
    /// without tag or metadata; safe to call on every request of a busy server.
    public static func log(_ message: String) {
        // The hot path: one C call on the string's own UTF-8 storage when it has one.
        if message.utf8.count <= maximumMessageCharacters,
           message.utf8.withContiguousStorageIfAvailable({ bytes in
               ccr_breadcrumb_log(bytes.baseAddress, bytes.count)   // info, log, no tag, no metadata
           }) != nil {
            return
        }
        append(level: .info, kind: 0, tag: "", message: message, metadata: nil)
    }

    /// Adds a breadcrumb with a level, a tag (the module or component, ≤64 bytes) and metadata.
    public static func log(_ message: String, level: LogLevel, tag: String = "", metadata: [String: String]? = nil) {
        append(level: level, kind: 0, tag: tag, message: message, metadata: metadata)
    }

    /// For logging integrations (the swift-log handler): a breadcrumb whose metadata is written into
    /// the record's JSON as the pairs are iterated — no dictionary, no sorting, one buffer. Keys
    /// should be distinct (a reader keeps the last of equal keys).
    @inlinable   // specialised in the caller's module: unspecialised, the generic loop cost ~0.7 µs
    public static func log<Pairs: Sequence>(_ message: String, level: LogLevel, tag: String, metadataPairs: Pairs)
    where Pairs.Element == (key: String, value: String) {
        var json: [UInt8] = []
        json.reserveCapacity(128)
        json.append(UInt8(ascii: "{"))
        for (key, value) in metadataPairs {
            if json.count > 1 { json.append(UInt8(ascii: ",")) }
            appendQuoted(key, to: &json)
            json.append(UInt8(ascii: ":"))
            appendQuoted(value, to: &json)
        }
        json.append(UInt8(ascii: "}"))
        appendBreadcrumb(level: level, tag: tag, message: message, metadataJSON: json)
    }

    @usableFromInline
    static func appendBreadcrumb(level: LogLevel, tag: String, message: String, metadataJSON json: [UInt8]) {
        var message = message
        if message.utf8.count > maximumMessageCharacters, message.count > maximumMessageCharacters {
            message = String(message.prefix(maximumMessageCharacters))
        }
        var tag = tag
        let hasMetadata = json.count > 2
        message.withUTF8 { text in
            tag.withUTF8 { tagBytes in
                json.withUnsafeBufferPointer { meta in
                    meta.withMemoryRebound(to: CChar.self) { meta in
                        ccr_breadcrumb_append(level.rawValue, 0, tagBytes.baseAddress, tagBytes.count,
                                              text.baseAddress, text.count, hasMetadata ? meta.baseAddress : nil, hasMetadata ? meta.count : 0)
                    }
                }
            }
        }
    }

    /// Records that a screen (for a server: a route, a job, a command) became current.
    public static func logScreenView(_ screenName: String) {
        append(level: .info, kind: 1, tag: "screen", message: screenName, metadata: nil)
    }

    /// Records a user or system action with optional parameters.
    public static func logAction(_ action: String, parameters: [String: String]? = nil) {
        append(level: .info, kind: 2, tag: "action", message: action, metadata: parameters)
    }

    /// Sets the user id carried by crash reports; nil clears it. Keep it pseudonymous.
    public static func setUserID(_ userID: String?) {
        var id = userID ?? ""
        id.withUTF8 { ccr_set_user_id($0.baseAddress, $0.count) }
    }

    /// The user id set for this session, if any.
    static func currentUserID() -> String? {
        var buffer = [UInt8](repeating: 0, count: 256)
        let length = buffer.withUnsafeMutableBufferPointer { ccr_current_user_id($0.baseAddress!, $0.count) }
        return length == 0 ? nil : String(decoding: buffer[..<length], as: UTF8.self)
    }

    @discardableResult
    public static func setCustomValue(_ value: Bool, forKey key: String) -> String? {
        setKey(key, type: 1, value: value ? "true" : "false")
    }

    @discardableResult
    public static func setCustomValue(_ value: Int, forKey key: String) -> String? {
        setKey(key, type: 2, value: String(value))
    }

    @discardableResult
    public static func setCustomValue(_ value: Double, forKey key: String) -> String? {
        setKey(key, type: value.isFinite ? 3 : 4, value: "\(value)")   // inf and nan as strings: JSON has no number for them
    }

    /// Sets a custom key (≤64 bytes of name, ≤1 KB of value; longer ones are cut). Returns the
    /// key that was evicted to make room, if the table of 64 was full: the one set least recently.
    @discardableResult
    public static func setCustomValue(_ value: String, forKey key: String) -> String? {
        setKey(key, type: 4, value: value)
    }

    /// Sets a Codable value (seed 000's custom_data: feature flags, lists, nested objects). It goes
    /// into the report's custom_data (at most 100 KB of JSON in all, or this throws), and, when its
    /// JSON fits in 1 KB, into the crash-readable key table too. Returns an evicted key, if any.
    @discardableResult
    public static func setCustomValue<T: Encodable>(_ value: T, forKey key: String) throws -> String? {
        guard let context = reportingContext(), let sessionPath = context.sessionPath else { throw ReportingError.notStarted }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let json = String(decoding: try encoder.encode(value), as: UTF8.self)
        let document = try customData.withLock { data -> String in
            var next = data
            next[key] = json
            let document = "{" + next.keys.sorted().map { quoted($0) + ":" + next[$0]! }.joined(separator: ",") + "}"
            guard document.utf8.count <= maximumCustomDataBytes else {
                throw ReportingError.customDataTooLarge(bytes: document.utf8.count)
            }
            data = next
            return document
        }
        try writeAtomically(document, to: sessionPath + ".custom.json")
        return json.utf8.count <= 1024 ? setKey(key, type: 5, value: json) : nil
    }

    /// Seed 000: custom_data is at most 100 KB of serialized JSON.
    public static let maximumCustomDataBytes = 100 * 1024
    private static let customData = Mutex([String: String]())

    /// A session sidecar, made under the lock a clean end takes (see ccr_session.c): after the end
    /// there is no session to add to, and nothing is written.
    private static func writeAtomically(_ text: String, to path: String) throws {
        guard ccr_session_sidecar_begin() == 1 else { return }
        defer { ccr_session_sidecar_end() }
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw ReportingError.storageFailed("cannot create \(temporary): \(String(cString: strerror(errno)))") }
        let written = writeAll(fd, text)
        close(fd)
        guard written, rename(temporary, path) == 0 else {
            unlink(temporary)
            throw ReportingError.storageFailed("cannot write \(path)")
        }
    }

    /// Ends the session cleanly (for a service: from its graceful-shutdown path, e.g. a
    /// swift-service-lifecycle service's shutdown). A normal `exit` does the same. A process that
    /// ends any other way without a crash record is reported as an abnormal termination.
    public static func endSession() {
        ccr_session_end()
    }

    /// The context a report made now would carry: breadcrumbs (oldest first), custom keys in the
    /// order they were set, and the user id. Reads the session file; nil before `start`.
    public static func contextSnapshot() -> (breadcrumbs: [CrashRecord.Breadcrumb], customKeys: [CrashRecord.CustomKey], userID: String?)? {
        guard let path = reportingContext()?.sessionPath else { return nil }
        let file = tmpfile()
        defer { if let file { fclose(file) } }
        guard let file else { return nil }
        let fd = fileno(file)
        guard writeAll(fd, recordHeader(id: "snapshot") + "\n"), ccr_session_export(path, fd) == 0 else { return nil }
        lseek(fd, 0, SEEK_SET)
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = read(fd, &buffer, buffer.count)
            if n <= 0 { break }
            data.append(contentsOf: buffer[0..<n])
        }
        guard let record = try? CrashRecord(data: data, source: "snapshot") else { return nil }
        return (record.breadcrumbs, record.customKeys, record.userID)
    }

    /// Custom keys currently set (at most 64).
    public static var customKeyCount: Int { Int(ccr_custom_key_count()) }

    // MARK: - Internals

    /// kind: 0 log, 1 screen, 2 action, 3 error, 4 network (see ccr_breadcrumb_append).
    static func append(level: LogLevel, kind: UInt8, tag: String, message: String, metadata: [String: String]?) {
        guard message.utf8.count <= maximumMessageCharacters || message.count <= maximumMessageCharacters else {
            append(level: level, kind: kind, tag: tag, message: String(message.prefix(maximumMessageCharacters)), metadata: metadata)
            return
        }
        // The texts' UTF-8 read in place (`utf8(of:)`): `var` copies for `withUTF8` were a retain and
        // a release of each heap String, on every request's screen view in tools/profile-middleware.
        let json = metadata.map(Self.compactJSON) ?? ""
        utf8(of: message) { text in
            utf8(of: tag) { tagBytes in
                utf8(of: json) { meta in
                    ccr_breadcrumb_append(level.rawValue, kind, tagBytes.baseAddress, tagBytes.count,
                                          text.baseAddress, text.count, meta.baseAddress, meta.count)
                }
            }
        }
    }

    private static func setKey(_ key: String, type: UInt8, value: String) -> String? {
        guard !key.isEmpty else { return nil }
        var key = key, value = value
        var evicted = [CChar](repeating: 0, count: 80)
        let result = key.withUTF8 { name in
            value.withUTF8 { bytes in
                ccr_set_custom_key(name.baseAddress!, name.count, type, bytes.baseAddress, bytes.count, &evicted, evicted.count)
            }
        }
        guard result == 1 else { return nil }
        return String(decoding: evicted.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// A JSON object of strings, keys sorted, without Foundation's encoder on the hot path: built
    /// as UTF-8 bytes (a breadcrumb with metadata from the swift-log handler goes through here).
    static func compactJSON(_ object: [String: String]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(64)
        out.append(UInt8(ascii: "{"))
        for (index, key) in object.keys.sorted().enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            appendQuoted(key, to: &out)
            out.append(UInt8(ascii: ":"))
            appendQuoted(object[key]!, to: &out)
        }
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }

    /// A JSON string literal: quotes, backslashes and control characters escaped (no
    /// String(format:), which a quiet launch's beacon would otherwise be the first to use).
    static func quoted(_ text: String) -> String {
        RecordLine.quoted(text)
    }

    /// RecordLine's (the record's one writer of JSON strings), inlined on the log path.
    @inlinable
    static func appendQuoted(_ text: String, to out: inout [UInt8]) {
        RecordLine.appendQuoted(text, to: &out)
    }
}
