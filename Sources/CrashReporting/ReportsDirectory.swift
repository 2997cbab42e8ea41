// The reports directory and its state folders. States are folders and moves are renames:
// new/ (a live process's record file, opened in advance) → pending/ (complete, waiting).
// Plain system calls rather than FileManager: this runs inside `start`, which has a 1 ms budget,
// and Foundation's first use costs more than that budget's remainder.
import Glibc

struct ReportsDirectory {
    let path: String
    var newFolder: String { path + "/new" }
    var pendingFolder: String { path + "/pending" }
    var sessionsFolder: String { path + "/sessions" }
    var uploadingFolder: String { path + "/uploading" }
    var quarantineFolder: String { path + "/quarantine" }

    /// Creates the folders and proves they are writable, or throws a `StartError`.
    init(path: String) throws {
        guard !path.isEmpty else {
            throw CrashReporter.StartError(kind: .invalidConfiguration, message: "reportsDirectory must not be empty")
        }
        var absolute = path
        if !path.hasPrefix("/") {
            var buffer = [CChar](repeating: 0, count: Int(PATH_MAX))
            guard getcwd(&buffer, buffer.count) != nil else {
                throw CrashReporter.StartError(kind: .reportsDirectoryUnusable, message: "cannot resolve \(path): no current directory")
            }
            absolute = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) + "/" + path
        }
        while absolute.count > 1 && absolute.hasSuffix("/") { absolute.removeLast() }
        self.path = absolute
        for folder in [newFolder, pendingFolder, sessionsFolder] {
            if let failure = Self.makeDirectories(folder) {
                throw CrashReporter.StartError(kind: .reportsDirectoryUnusable, message: failure)
            }
            guard access(folder, W_OK | X_OK) == 0 else {
                throw CrashReporter.StartError(kind: .reportsDirectoryUnusable, message: "\(folder) is not writable: \(Self.errorText())")
            }
        }
    }

    /// mkdir -p with the failing component and errno in the message; nil on success. The usual
    /// case (the folder exists, or only its last component is missing) is one system call.
    private static func makeDirectories(_ path: String) -> String? {
        if mkdir(path, 0o755) == 0 { return nil }
        if errno == EEXIST {
            var status = stat()
            return stat(path, &status) == 0 && (status.st_mode & S_IFMT) == S_IFDIR ? nil : "\(path) is not a directory"
        }
        var prefix = ""
        for component in path.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, 0o755) != 0 && errno != EEXIST {
                return "cannot create \(prefix): \(errorText())"
            }
        }
        var status = stat()
        guard stat(path, &status) == 0, (status.st_mode & S_IFMT) == S_IFDIR else {
            return "\(path) is not a directory"
        }
        return nil
    }

    private static func errorText() -> String { String(cString: strerror(errno)) }

    /// Files left in new/ by processes that are gone: one that is empty or still starts with the
    /// install-time prefill ('\n') is the unused record file of a run that ended without crashing
    /// (killed, say); anything else is a record whose writer died mid-way or whose rename was lost,
    /// kept by moving it to pending/, where the reader marks it partial if it is. A file whose
    /// writer still holds its lock belongs to a live process and is left alone.
    func recoverAbandonedRecords() {
        guard let directory = opendir(newFolder) else { return }
        defer { closedir(directory) }
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard name.hasSuffix(".crash") else { continue }
            let file = newFolder + "/" + name
            let fd = open(file, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { continue }
            defer { close(fd) }
            guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { continue }
            var first: UInt8 = 0
            let count = read(fd, &first, 1)
            if count == 0 || (count == 1 && first == UInt8(ascii: "\n")) {
                unlink(file)
            } else {
                rename(file, pendingFolder + "/" + name)
            }
        }
    }

    /// The record files (`*.crash`) of a folder, by name.
    func records(in folder: String) -> [String] { files(in: folder, suffix: ".crash") }

    /// The names in `folder` that end with `suffix`, in directory order (readdir: no
    /// FileManager, whose first use pages in Foundation code that a quiet launch never needs).
    func files(in folder: String, suffix: String) -> [String] {
        guard let directory = opendir(folder) else { return [] }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name.hasSuffix(suffix) { names.append(name) }
        }
        return names
    }

    /// One record file as the pipeline sorts and bounds them.
    struct RecordEntry {
        var name: String
        /// "timestamp_ns" of the header line (file times are too coarse: many records share
        /// one), else the modification time.
        var time: Int64
        var size: Int
        /// A diagnostics snapshot (says so in its first lines); evicted before anything else.
        var isSnapshot: Bool
    }

    /// The record files of a folder, oldest first; one open, fstat and read of the head each.
    func recordEntries(in folder: String) -> [RecordEntry] {
        records(in: folder).map { name in Self.entry(folder + "/" + name, name: name) }
            .sorted { $0.time != $1.time ? $0.time < $1.time : $0.name < $1.name }
    }

    func recordsOldestFirst(in folder: String) -> [String] {
        recordEntries(in: folder).map(\.name)
    }

    private static func entry(_ path: String, name: String) -> RecordEntry {
        var entry = RecordEntry(name: name, time: 0, size: 0, isSnapshot: false)
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return entry }
        defer { close(fd) }
        var info = stat()
        if fstat(fd, &info) == 0 {
            entry.size = Int(info.st_size)
            entry.time = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
        }
        var buffer = [UInt8](repeating: 0, count: 1024)
        let count = read(fd, &buffer, buffer.count)
        guard count > 0 else { return entry }
        let head = String(decoding: buffer[0..<count], as: UTF8.self)
        if let range = head.range(of: "\"timestamp_ns\":"), let value = Int64(head[range.upperBound...].prefix { $0.isNumber }), value > 0 {
            entry.time = value
        }
        entry.isSnapshot = head.contains(#"{"type":"diagnostics""#)
        return entry
    }
}

/// `last-launch` holds "<session id> <0|1>": the last process to start here, and whether it
/// outlived the crash-on-launch window. Read and rewritten by `start` (two small system calls),
/// marked stable by the pipeline. `dropped-count` counts records the store bounds deleted.
enum LaunchFile {
    struct Previous {
        var sessionID: String?
        var didCrash = false
        var crashedOnLaunch = false
    }

    /// Reads what the previous launch left and records this one.
    static func begin(_ directory: ReportsDirectory, sessionID: String) -> Previous {
        let path = directory.path + "/last-launch"
        var previous = Previous()
        if let text = read(path) {
            let parts = text.split(separator: " ")
            if parts.count == 2 {
                previous.sessionID = String(parts[0])
                previous.didCrash = access(directory.pendingFolder + "/" + parts[0] + ".crash", F_OK) == 0
                previous.crashedOnLaunch = previous.didCrash && parts[1].hasPrefix("0")
            }
        }
        write(path, sessionID + " 0\n")
        return previous
    }

    static func markStable(_ directory: ReportsDirectory, sessionID: String) {
        let path = directory.path + "/last-launch"
        guard read(path)?.hasPrefix(sessionID) == true else { return }   // a later process started since
        write(path, sessionID + " 1\n")
    }

    static func droppedCount(_ directory: ReportsDirectory) -> Int {
        read(directory.path + "/dropped-count").flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? 0
    }

    static func addDropped(_ directory: ReportsDirectory, _ count: Int) -> Int {
        let total = droppedCount(directory) + count
        write(directory.path + "/dropped-count", "\(total)\n")
        return total
    }

    private static func read(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 128)
        let count = Glibc.read(fd, &buffer, buffer.count)
        return count > 0 ? String(decoding: buffer[0..<count], as: UTF8.self) : nil
    }

    /// Overwrites in place, without O_TRUNC: ext4 flushes a truncated-then-rewritten file on close
    /// (auto_da_alloc), which cost `start` ~400 µs. The lines written here have a fixed length
    /// or only grow, so nothing of an older content can remain past the new one's end.
    private static func write(_ path: String, _ text: String) {
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { return }
        var text = text
        _ = text.withUTF8 { pwrite(fd, $0.baseAddress, $0.count, 0) }
        close(fd)
    }
}
