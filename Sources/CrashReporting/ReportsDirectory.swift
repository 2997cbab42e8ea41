// The reports directory and its state folders. States are folders and moves are renames:
// new/ (a live process's record file, opened in advance) → pending/ (complete, waiting).
import Foundation
import Glibc

struct ReportsDirectory {
    let url: URL
    var newFolder: URL { url.appendingPathComponent("new", isDirectory: true) }
    var pendingFolder: URL { url.appendingPathComponent("pending", isDirectory: true) }

    /// Creates the folders and proves the directory is writable, or throws a `StartError`.
    init(path: String) throws {
        guard !path.isEmpty else {
            throw CrashReporter.StartError(kind: .invalidConfiguration, message: "reportsDirectory must not be empty")
        }
        url = URL(fileURLWithPath: path, isDirectory: true).standardizedFileURL
        for folder in [newFolder, pendingFolder] {
            if let failure = Self.makeDirectories(folder.path) {
                throw CrashReporter.StartError(kind: .reportsDirectoryUnusable, message: failure)
            }
            guard access(folder.path, W_OK | X_OK) == 0 else {
                throw CrashReporter.StartError(
                    kind: .reportsDirectoryUnusable,
                    message: "\(folder.path) is not writable: \(String(cString: strerror(errno)))")
            }
        }
    }

    /// mkdir -p with the failing component and errno in the message; nil on success.
    private static func makeDirectories(_ path: String) -> String? {
        var prefix = ""
        for component in path.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, 0o755) != 0 && errno != EEXIST {
                return "cannot create \(prefix): \(String(cString: strerror(errno)))"
            }
        }
        var status = stat()
        guard stat(path, &status) == 0, (status.st_mode & S_IFMT) == S_IFDIR else {
            return "\(path) is not a directory"
        }
        return nil
    }

    /// Files left in new/ by processes that are gone: an empty one is the unused record file of a
    /// run that ended without crashing (killed, say); a non-empty one is a record whose writer died
    /// mid-way, kept by moving it to pending/ where the reader marks it partial. A file whose
    /// writer still holds its lock belongs to a live process and is left alone.
    func recoverAbandonedRecords() {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: newFolder.path) else { return }
        for name in names where name.hasSuffix(".crash") {
            let path = newFolder.appendingPathComponent(name).path
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else { continue }
            defer { close(fd) }
            guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { continue }
            var status = stat()
            guard fstat(fd, &status) == 0 else { continue }
            if status.st_size == 0 {
                unlink(path)
            } else {
                rename(path, pendingFolder.appendingPathComponent(name).path)
            }
        }
    }
}
