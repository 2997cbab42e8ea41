// Writing records outside the signal handler (non-fatal reports, next-launch rewrites, snapshots):
// the header line and a write that does not give up on short writes, in one place.
import CCrashCapture
import CrashReportModel
import Foundation
import Glibc

extension CrashReporter {
    /// Wall-clock nanoseconds since 1970.
    static func wallClockNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    /// The first line of a record (the format the handler writes), without a trailing newline.
    static func recordHeader(version: Int = 1, id: String, appID: String = "", appVersion: String = "", pid: Int32 = 0,
                             timestampNanoseconds: UInt64 = 0) -> String {
        RecordLine.header(version: version, id: id, appID: appID, appVersion: appVersion, pid: pid,
                          timestampNanoseconds: timestampNanoseconds, architecture: architecture).text
    }

    /// A record written by the app rather than the handler (a non-fatal error, a diagnostics
    /// snapshot): header, `lines`, optionally the calling thread's stack, then the session's
    /// breadcrumbs, keys, user and custom data. Written in new/ and renamed into pending/ whole.
    @inline(never)   // the stack skip count below assumes this frame exists
    static func writeContextRecord(_ context: ReportingContext, lines: [String], includeStack: Bool) throws -> (id: String, path: String) {
        var id = [CChar](repeating: 0, count: 37)
        ccr_make_record_id(&id)
        let recordID = String(decoding: id.prefix(36).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let header = recordHeader(id: recordID, appID: context.appID, appVersion: context.appVersion, pid: getpid(),
                                  timestampNanoseconds: wallClockNanoseconds())
        let temporary = context.newFolder + "/" + recordID + ".writing"
        let final = context.pendingFolder + "/" + recordID + ".crash"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw ReportingError.storageFailed("cannot create \(temporary): \(String(cString: strerror(errno)))") }
        let session = RecordLine(.session).string("id", context.sessionID).text
        var ok = writeAll(fd, ([header, session] + lines).joined(separator: "\n") + "\n")
        if includeStack { ok = ok && ccr_write_current_stack(fd, 3) == 0 }
        if ok, let session = context.sessionPath {
            ok = ccr_session_export(session, fd) == 0
            if ok, let data = try? String(contentsOfFile: session + ".custom.json", encoding: .utf8) {
                ok = writeAll(fd, RecordLine(.custom_data).json("data", data).textLine)
            }
        }
        ok = ok && writeAll(fd, RecordLine(.end).textLine)
        close(fd)
        guard ok, rename(temporary, final) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw ReportingError.storageFailed("cannot write \(final): \(reason)")
        }
        return (recordID, final)
    }

    /// Writes all of `text`, retrying short writes and EINTR. False on any other failure.
    static func writeAll(_ fd: Int32, _ text: String) -> Bool {
        var text = text
        return text.withUTF8 { writeAll(fd, UnsafeRawBufferPointer($0)) }
    }

    /// The bytes exactly as they are (a record cut mid-character stays as it was).
    static func writeAll(_ fd: Int32, _ data: Data) -> Bool {
        data.withUnsafeBytes { writeAll(fd, $0) }
    }

    private static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if n > 0 { offset += n } else if n < 0 && errno == EINTR { continue } else { return false }
        }
        return true
    }
}
