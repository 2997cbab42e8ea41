// The one-expression destinations: what each sets, and a DSN typo caught where it is written.
import CrashReporting
import Foundation
import Testing

@Suite("Upload destinations in one expression")
struct UploadDestinationsTests {
    @Test("collector(url, token:) sets the endpoint and token and keeps the other defaults")
    func collector() {
        let url = URL(string: "https://crashes.example.com")!
        let upload = CrashReporter.Upload.collector(url, token: "t0ken")
        #expect(upload.endpoint == url)
        #expect(upload.token == "t0ken")
        #expect(upload.transports == nil)
        #expect(upload.isEnabled)
        #expect(upload.maxAttemptsPerLaunch == CrashReporter.Upload().maxAttemptsPerLaunch)
        let configuration = CrashReporter.Configuration(appID: "com.example.app", reportsDirectory: "/tmp/x", upload: .collector(url, token: nil))
        #expect(configuration.upload.endpoint == url && configuration.upload.token == nil)
    }

    @Test("sentry(dsn:) makes one Sentry destination; a string that is not a DSN throws invalidConfiguration")
    func sentry() throws {
        let upload = try CrashReporter.Upload.sentry(dsn: "https://abc123@sentry.example.com/42")
        let transport = try #require(upload.transports?.first as? SentryTransport)
        #expect(upload.transports?.count == 1)
        #expect(transport.dsn.projectID == "42")
        #expect(transport.dsn.publicKey == "abc123")
        #expect(throws: CrashReporter.StartError.self) { try CrashReporter.Upload.sentry(dsn: "sentry.example.com/42") }
        do {
            _ = try CrashReporter.Upload.sentry(dsn: "https://sentry.example.com")
            Issue.record("a DSN without key and project was taken")
        } catch let error as CrashReporter.StartError {
            #expect(error.kind == .invalidConfiguration)
            #expect(error.message.contains("https://sentry.example.com"))
        }
    }
}
