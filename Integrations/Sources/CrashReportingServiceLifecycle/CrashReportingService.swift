// Crash reporting as a swift-service-lifecycle Service. Put it first in the ServiceGroup's list:
// the group shuts services down in reverse order, so the servers finish their requests (and their
// non-fatal reports) before this one flushes. On graceful shutdown (SIGTERM from systemd or
// Kubernetes) it sends what is pending — reports, non-fatal errors, session beacons — within
// `shutdownTimeout`, and ends the session cleanly, so a restart is not mistaken for a crash.
// Delivery needs no start from here: the launch's pass runs by itself once the app's start-up has
// had `upload.firstPassDelay` (a crashed last launch's at once).
import CrashReporting
import Foundation
import ServiceLifecycle

public struct CrashReportingService: Service {
    /// How long graceful shutdown may spend sending what is pending.
    public var shutdownTimeout: Duration

    /// `CrashReporter.start` must have been called (first thing in `main`, before the group runs):
    /// crashes during the group's start are then recorded too.
    public init(shutdownTimeout: Duration = .seconds(5)) {
        self.shutdownTimeout = shutdownTimeout
    }

    public func run() async throws {
        // No `sendUnsentReports()` here: the group runs this while the servers start, and a pass
        // woken now (recovery, payloads, the redactor, the HTTP client) competed with their
        // start-up on the same cores (tools/bench-start: a pass ran before every first 200).
        // Returns at graceful shutdown; throws CancellationError when the group is cancelled
        // instead. Either way the process is about to end: flush, bounded.
        try? await gracefulShutdown()
        let timeout = shutdownTimeout
        // shutdown(timeout:) blocks while it waits for the upload pass: not on the cooperative pool.
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                CrashReporter.shutdown(timeout: timeout)
                done.resume()
            }
        }
    }
}
