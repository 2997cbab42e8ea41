// What start() writes for the crash-sender (delivery at crash time): everything that can travel
// comes back the same; what cannot makes start() refuse rather than send differently at a crash.
@testable import CrashReporting
import CrashReportModel
import Foundation
import Glibc
import Testing

@Suite("Delivery at crash time: the sender's configuration")
struct SenderConfigurationTests {
    struct OwnTransport: DiagnosticsTransport {
        var name: String { "own" }
        func deliver(_ upload: DiagnosticsUpload) -> DeliveryOutcome { .delivered(receipt: nil) }
    }

    func configuration(_ upload: CrashReporter.Upload) -> CrashReporter.Configuration {
        CrashReporter.Configuration(appID: "com.example.sender", reportsDirectory: "/tmp/unused", appVersion: "2.1",
                                    appName: "Sender", buildNumber: "7", environment: "staging", upload: upload)
    }

    let delivery = CrashReporter.DeliveryAtCrash(senderPath: "/usr/bin/true", wait: .seconds(3))

    @Test("collector, Sentry, Logz.io, seed 000's rules plus a template rule and known names: the same after the round trip")
    func roundTrip() throws {
        var upload = CrashReporter.Upload()
        upload.transports = [
            HTTPTransport(endpoint: URL(string: "https://crashes.example.com")!, token: "t0k"),
            try #require(SentryTransport(dsn: "https://abc123@sentry.example.com:8443/prefix/42")),
            LogzioTransport(token: "logz", type: "swift"),
        ]
        upload.redactor = Redactor.seed000.adding([Redactor.Rule(name: "order", pattern: #"ORD-\d+"#, template: "[ORDER]")])
            .addingKnownNames(["Tommy Smith"])
        upload.verifier = RedactionVerifier(knownNames: ["Tommy Smith"])
        upload.requestTimeout = .seconds(15)
        let made = try SenderConfiguration.make(configuration(upload), reportsDirectory: "/tmp/r", delivery: delivery, collector: nil)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("sender-\(UUID().uuidString.prefix(8)).json").path
        defer { unlink(path) }
        try made.write(to: path)
        var info = stat()
        #expect(stat(path, &info) == 0 && info.st_mode & 0o777 == 0o600, "the file holds tokens: 0600")
        let read = try SenderConfiguration.read(from: path)
        #expect(read == made)
        #expect(read.requestTimeoutMilliseconds == 3000, "a request never outlasts the crashed process's wait")
        #expect(read.app.bundle_id == "com.example.sender" && read.app.build_number == "7" && read.app.environment == "staging")

        let rebuilt = try read.upload()
        #expect(rebuilt.transports?.map(\.name) == upload.transports?.map(\.name))
        let sentry = try #require(rebuilt.transports?[1] as? SentryTransport)
        #expect(sentry.dsn == (upload.transports?[1] as? SentryTransport)?.dsn)
        #expect(rebuilt.redactor?.rules.map(\.name) == upload.redactor?.rules.map(\.name))
        #expect(rebuilt.redactor?.knownNames == ["Tommy Smith"])
        #expect(rebuilt.verifier?.knownNames == ["Tommy Smith"])
        #expect(rebuilt.maxAttemptsPerLaunch == 1)
        // The rebuilt redactor redacts as the app's does.
        let text = "order ORD-123 for Tommy Smith, mail tommy@example.com"
        #expect(rebuilt.redactor?.redact(text) == upload.redactor?.redact(text))
    }

    @Test("the collector resolved at start travels when no transports are set")
    func collector() throws {
        let made = try SenderConfiguration.make(configuration(CrashReporter.Upload()), reportsDirectory: "/tmp/r", delivery: delivery,
                                                collector: (URL(string: "http://127.0.0.1:9090")!, "tok"))
        #expect(made.destinations == [.collector(endpoint: "http://127.0.0.1:9090", token: "tok")])
        #expect(made.verifierKnownNames == [], "the default verifier")
        let upload = try made.upload()
        #expect(upload.transports == nil && upload.endpoint?.absoluteString == "http://127.0.0.1:9090" && upload.token == "tok",
                "the collector alone travels as the collector, so session beacons go with the record")
    }

    @Test("a transform rule or a transport of the app's own cannot travel: start refuses, naming it")
    func notCarriable() {
        var upload = CrashReporter.Upload()
        upload.redactor = Redactor(rules: [Redactor.Rule(name: "custom-hash", pattern: "x+", transform: { _ in "y" })])
        #expect(throws: SenderConfiguration.NotCarriable.self) {
            try SenderConfiguration.make(configuration(upload), reportsDirectory: "/tmp/r", delivery: delivery, collector: nil)
        }
        do {
            _ = try SenderConfiguration.make(configuration(upload), reportsDirectory: "/tmp/r", delivery: delivery, collector: nil)
        } catch {
            #expect("\(error)".contains("custom-hash"))
        }
        var own = CrashReporter.Upload()
        own.transports = [OwnTransport()]
        #expect(throws: SenderConfiguration.NotCarriable.self) {
            try SenderConfiguration.make(configuration(own), reportsDirectory: "/tmp/r", delivery: delivery, collector: nil)
        }
    }
}
