// The common destinations in one expression, e.g.
// `Configuration(appID: "…", reportsDirectory: "…", upload: .collector(url, token: token))`.
// Each returns an `Upload` with today's defaults for everything else, so fields can still be set
// on the result.
import Foundation

extension CrashReporter.Upload {
    /// Sends to a swift-crash-reporting collector (or any seed 000 endpoint) with a bearer token.
    /// A nil token falls back to `CRASH_REPORTING_TOKEN`, as `token` does.
    public static func collector(_ endpoint: URL, token: String?) -> Self {
        var upload = Self()
        upload.endpoint = endpoint
        upload.token = token
        return upload
    }

    /// Sends to a Sentry (or Sentry-compatible: GlitchTip, Bugsink) project, by its DSN.
    /// Throws `StartError` (`.invalidConfiguration`) when `dsn` is not a DSN, so a typo is found
    /// at the line that made it rather than at the first crash.
    public static func sentry(dsn: String) throws -> Self {
        guard let transport = SentryTransport(dsn: dsn) else {
            throw CrashReporter.StartError(kind: .invalidConfiguration,
                                           message: "not a Sentry DSN (https://<public key>@<host>/<project id>): \(dsn)")
        }
        return destinations([transport])
    }

    /// Sends to each of these destinations; a record is done when every one has it.
    public static func destinations(_ transports: [any DiagnosticsTransport]) -> Self {
        var upload = Self()
        upload.transports = transports
        return upload
    }
}
