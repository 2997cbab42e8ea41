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
}
