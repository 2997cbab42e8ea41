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
            do {
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            } catch {
                throw CrashReporter.StartError(
                    kind: .reportsDirectoryUnusable,
                    message: "cannot create \(folder.path): \(Self.reason(error))")
            }
            guard access(folder.path, W_OK | X_OK) == 0 else {
                throw CrashReporter.StartError(
                    kind: .reportsDirectoryUnusable,
                    message: "\(folder.path) is not writable: \(String(cString: strerror(errno)))")
            }
        }
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

    private static func reason(_ error: any Error) -> String {
        let nsError = error as NSError
        if let underlying = nsError.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain {
            return String(cString: strerror(Int32(underlying.code)))
        }
        return nsError.localizedDescription
    }
}
