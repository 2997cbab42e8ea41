// `CrashReporter.start` runs once per process: every in-process suite shares this start.
import CrashReporting
import Foundation

enum SharedReporter {
    static let directory = FileManager.default.temporaryDirectory.appendingPathComponent("in-process-\(getpid())")
    private static let outcome: Result<Void, any Error> = Result {
        try CrashReporter.start(.init(appID: "com.example.in-process-tests", reportsDirectory: directory.path,
                                      appVersion: "3.1.4", buildNumber: "271", environment: "staging"))
    }

    static func start() throws { try outcome.get() }
}
