// Writing records outside the signal handler (non-fatal reports, next-launch rewrites, snapshots):
// the header line and a write that does not give up on short writes, in one place.
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
    static func recordHeader(id: String, appID: String = "", appVersion: String = "", pid: Int32 = 0,
                             timestampNanoseconds: UInt64 = 0) -> String {
        #"{"format":"swift-crash-reporting.crash-record","version":1,"id":\#(quoted(id)),"app_id":\#(quoted(appID)),"app_version":\#(quoted(appVersion)),"pid":\#(pid),"timestamp_ns":\#(timestampNanoseconds),"arch":"\#(architecture)"}"#
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
