// The reports directory and its state folders. States are folders and moves are renames:
// new/ (a live process's record file, opened in advance) → pending/ (complete, waiting).
// Plain system calls rather than FileManager: this runs inside `start`, which has a 1 ms budget,
// and Foundation's first use costs more than that budget's remainder.
//
// Trust: the directory holds reports (personal data until redacted), the upload endpoint and
// records that will be sent under the app's token. So it is created 0700 (files 0600), `start`
// refuses one owned by another user or writable by group or others, state files are opened with
// O_NOFOLLOW and must be ours, and records owned by another user are never sent.
import CrashReportModel
import Glibc

struct ReportsDirectory {
    let path: String
    var newFolder: String { path + "/new" }
    var pendingFolder: String { path + "/pending" }
    var sessionsFolder: String { path + "/sessions" }
    var uploadingFolder: String { path + "/uploading" }
    var quarantineFolder: String { path + "/quarantine" }

    /// Creates the folders (0700) and proves they are ours and writable, or throws a `StartError`.
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
        // Every launch after the first finds the folders: one lstat each tells that they exist and
        // whose they are (start() pays ~7 us a system call); only a missing one is made.
        let stateFolders = [newFolder, pendingFolder, sessionsFolder]
        var found: [stat?] = [nil]   // the top folder's is not known
        for folder in stateFolders {
            var info = stat()
            if lstat(folder, &info) == 0 {
                found.append(info)
                continue
            }
            found.append(nil)
            if let failure = Self.makeDirectories(folder) {
                throw CrashReporter.StartError(kind: .reportsDirectoryUnusable, message: failure)
            }
        }
        // The top folder may be a link the administrator chose (followed); the state folders
        // inside it are never links.
        let user = geteuid()
        for (index, folder) in ([absolute] + stateFolders).enumerated() {
            if let failure = Self.checkOwnership(folder, followLink: index == 0, status: found[index], user: user) {
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
        if mkdir(path, 0o700) == 0 { return nil }
        if errno == EEXIST {
            var status = stat()
            return stat(path, &status) == 0 && (status.st_mode & S_IFMT) == S_IFDIR ? nil : "\(path) is not a directory"
        }
        var prefix = ""
        for component in path.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, 0o700) != 0 && errno != EEXIST {
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

    /// nil when `folder` is a directory owned by this process's user and writable by nobody
    /// else; one that others may read (0755, made by an older version) is narrowed to 0700.
    /// `status`: its lstat already made, if any; `user`: geteuid().
    static func checkOwnership(_ folder: String, followLink: Bool, status: stat? = nil, user: uid_t = geteuid()) -> String? {
        var info = status ?? stat()
        guard status != nil || (followLink ? stat(folder, &info) : lstat(folder, &info)) == 0 else {
            return "cannot inspect \(folder): \(errorText())"
        }
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            return (info.st_mode & S_IFMT) == S_IFLNK ? "\(folder) is a symbolic link; refused" : "\(folder) is not a directory"
        }
        guard info.st_uid == user else {
            return "\(folder) is owned by uid \(info.st_uid), not by this process's user (uid \(user)): refused, its records "
                + "and settings could have been planted; use a directory of your own (created 0700)"
        }
        guard info.st_mode & (S_IWGRP | S_IWOTH) == 0 else {
            return "\(folder) is writable by group or others (mode \(String(info.st_mode & 0o7777, radix: 8))): refused, anyone "
                + "could plant records or settings in it; chmod 700 it"
        }
        if info.st_mode & 0o077 != 0 { chmod(folder, 0o700) }
        return nil
    }

    /// Creates a state folder made after `start` (uploading/, quarantine/, beacons/…), 0700.
    static func makeFolder(_ folder: String) {
        mkdir(folder, 0o700)
    }

    /// Reads a small state file (at most 64 KiB) that is a regular file owned by this process's
    /// user, never through a symbolic link; nil otherwise. A link or a stranger's file is
    /// refused and reported on stderr.
    static func readSmallFile(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else {
            if errno == ELOOP { CrashReporter.warn("refusing \(path): a symbolic link (state files are never followed)") }
            return nil
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        guard info.st_uid == geteuid() else {
            CrashReporter.warn("refusing \(path): owned by uid \(info.st_uid), not by this process's user")
            return nil
        }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var count = 0
        while count < buffer.count {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + count, $0.count - count) }
            if n > 0 { count += n } else if n < 0 && errno == EINTR { continue } else { break }
        }
        return String(decoding: buffer[0..<count], as: UTF8.self)
    }

    /// Replaces a small state file (0600), never through a symbolic link. False on failure.
    @discardableResult
    static func writeSmallFile(_ path: String, _ text: String) -> Bool {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else {
            if errno == ELOOP { CrashReporter.warn("refusing \(path): a symbolic link (state files are never followed)") }
            return false
        }
        defer { close(fd) }
        fchmod(fd, 0o600)   // one made by an older version may be 0644
        return CrashReporter.writeAll(fd, text)
    }

    /// True when the record file at `fd` may be sent: a regular file owned by this process's user.
    static func isOurs(_ fd: Int32) -> Bool {
        var info = stat()
        return fstat(fd, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG && info.st_uid == geteuid()
    }

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
            let fd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
            guard fd >= 0 else { continue }
            defer { close(fd) }
            guard Self.isOurs(fd) else { continue }   // never moved towards an upload: not our record
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
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
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
        entry.isSnapshot = head.contains(RecordLineType.diagnostics.linePrefixText)
        return entry
    }
}

/// `last-launch` holds "<session id> <0|1>": the last process to start here, and whether it
/// outlived the crash-on-launch window. Read and rewritten by `start` (one descriptor),
/// marked stable by the pipeline. `dropped-count` counts records the store bounds deleted.
enum LaunchFile {
    struct Previous {
        var sessionID: String?
        var didCrash = false
        var crashedOnLaunch = false
    }

    /// Reads what the previous launch left and records this one, through one descriptor (start()
    /// pays ~7 us a system call: 5 here, not 10).
    static func begin(_ directory: ReportsDirectory, sessionID: String) -> Previous {
        var previous = Previous()
        guard let fd = openOurs(directory.path + "/last-launch", O_RDWR | O_CREAT) else { return previous }
        defer { close(fd) }
        if let text = read(fd) {
            // Strings made first, then joined: `String + Substring` is a generic append whose first
            // use in a process looks its conformances up at run time, a sixth of `start` (perf).
            let parts = text.split(separator: " ").map(String.init)
            if parts.count == 2 {
                let id = parts[0]
                previous.sessionID = id
                // Its record waits in pending/, or the crash-sender delivered it at the crash.
                previous.didCrash = access(directory.pendingFolder + "/" + id + ".crash", F_OK) == 0
                    || read(directory.path + "/delivered-at-crash")?.hasPrefix(id) == true
                previous.crashedOnLaunch = previous.didCrash && parts[1].hasPrefix("0")
            }
        }
        var line = sessionID + " 0\n"
        _ = line.withUTF8 { pwrite(fd, $0.baseAddress, $0.count, 0) }
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

    /// A state file opened with `flags` (never through a symbolic link; created 0600 with
    /// O_CREAT), if it is a regular file owned by this process's user; a link or a stranger's file
    /// is refused and reported on stderr.
    /// Opened for reading and writing but refused that (ours made read-only, a folder in its
    /// place), it is opened for reading: what it says is still read, and a write to it fails.
    private static func openOurs(_ path: String, _ flags: Int32) -> Int32? {
        var fd = open(path, flags | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0o600)
        if fd < 0 && flags & O_ACCMODE == O_RDWR && (errno == EACCES || errno == EISDIR) {
            fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        }
        guard fd >= 0 else {
            if errno == ELOOP { CrashReporter.warn("refusing \(path): a symbolic link (state files are never followed)") }
            return nil
        }
        guard ReportsDirectory.isOurs(fd) else {
            close(fd)
            CrashReporter.warn("refusing \(path): not a regular file owned by this process's user")
            return nil
        }
        return fd
    }

    private static func read(_ path: String) -> String? {
        guard let fd = openOurs(path, O_RDONLY) else { return nil }
        defer { close(fd) }
        return read(fd)
    }

    /// The first 128 bytes of an open state file, nil when empty.
    private static func read(_ fd: Int32) -> String? {
        var buffer = [UInt8](repeating: 0, count: 128)
        let count = pread(fd, &buffer, buffer.count, 0)
        return count > 0 ? String(decoding: buffer[0..<count], as: UTF8.self) : nil
    }

    /// Overwrites in place, without O_TRUNC: ext4 flushes a truncated-then-rewritten file on close
    /// (auto_da_alloc), which cost `start` ~400 µs. The lines written here have a fixed length
    /// or only grow, so nothing of an older content can remain past the new one's end.
    private static func write(_ path: String, _ text: String) {
        guard let fd = openOurs(path, O_WRONLY | O_CREAT) else { return }
        var text = text
        _ = text.withUTF8 { pwrite(fd, $0.baseAddress, $0.count, 0) }
        close(fd)
    }
}
