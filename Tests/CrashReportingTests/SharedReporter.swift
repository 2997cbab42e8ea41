// `CrashReporter.start` runs once per process: every in-process suite shares this start.
import CrashReporting
import Foundation
import Testing

enum SharedReporter {
    /// A folder of this process's own: named by the pid alone, a later run whose test process got
    /// a pid an earlier run had used found that run's files (its api_logs spool: two files where
    /// the network logging test expects its session's one).
    static let directory = FileManager.default.temporaryDirectory.appendingPathComponent("in-process-\(getpid())-\(UUID().uuidString)")
    private static let outcome: Result<Void, any Error> = Result {
        try CrashReporter.start(.init(appID: "com.example.in-process-tests", reportsDirectory: directory.path,
                                      appVersion: "3.1.4", buildNumber: "271", environment: "staging"))
    }

    static func start() throws { try outcome.get() }
}

/// The suites that log into the shared session and read its breadcrumbs back (the swift-log
/// handler's, network logging's), one test at a time: the session keeps the newest 500
/// breadcrumbs of the whole process, and the handler's test logs 1200 from four threads, which
/// could push another test's breadcrumbs out between its logging and its reading.
@Suite("In-process session: logging and reading breadcrumbs back", .serialized)
enum InProcessSession {}
