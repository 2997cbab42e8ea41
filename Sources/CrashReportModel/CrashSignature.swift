// The crash signature of a report entry, as one string: the rule is CrashGrouping's (the
// collector's issues), so a Sentry fingerprint and a collector issue mean the same crash.
import Foundation

extension DiagnosticsPayload.CrashReportEntry {
    /// The group key; for a diagnostics snapshot (no issue), its kind and id.
    public var signature: String {
        CrashGrouping.issueKey(for: self)?.signature ?? "\(kind)|\(report_id)"
    }

    /// Whether a frame is the app's own code (not the system's, the runtime's or the reporter's).
    public func isInApp(_ frame: DiagnosticsPayload.Frame) -> Bool {
        CrashGrouping.isInApp(frame, images: images)
    }
}
