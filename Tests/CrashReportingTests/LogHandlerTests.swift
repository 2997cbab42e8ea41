// The swift-log handler in this process: concurrent logging from several threads becomes
// breadcrumbs (levels mapped, metadata kept, as logged: redaction is the upload's) and is forwarded; tools/test also
// runs this suite once under ThreadSanitizer.
import CrashReportModel
import CrashReporting
import CrashReportingLogging
import Foundation
import Logging
import Synchronization
import Testing

/// Counts what reaches it: the handler the records are forwarded to.
struct CountingHandler: LogHandler {
    static let count = Atomic<Int>(0)
    var logLevel: Logger.Level = .trace
    var metadata: Logger.Metadata = [:]
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(event: LogEvent) { Self.count.add(1, ordering: .relaxed) }
}

extension InProcessSession {
    @Suite("swift-log handler")
    struct LogHandlerTests {
        @Test("concurrent logging: breadcrumbs as logged and complete, everything forwarded; the payload made of them is redacted")
        func concurrentLogging() throws {
            try SharedReporter.start()
            let threads = 4, perThread = 300
            let group = DispatchGroup()
            for thread in 0..<threads {
                group.enter()
                Thread.detachNewThread {
                    var logger = Logger(label: "orders") { label in
                        CrashReportingLogHandler(label: label, breadcrumbLevel: .info, forwardingTo: CountingHandler())
                    }
                    logger[metadataKey: "thread"] = "\(thread)"
                    for n in 0..<perThread {
                        logger.info("order \(n) for jane.doe@example.com", metadata: ["n": "\(n)", "auth": "password=hunter2"])
                        logger.debug("debug detail \(n)")   // forwarded, not a breadcrumb
                    }
                    group.leave()
                }
            }
            group.wait()
            #expect(CountingHandler.count.load(ordering: .relaxed) == threads * perThread * 2)

            let snapshot = try #require(CrashReporter.contextSnapshot())
            let crumbs = snapshot.breadcrumbs
            #expect(crumbs.count == 500)
            // Other suites of this process may log too: look at this test's breadcrumbs.
            let ours = crumbs.filter { $0.tag == "orders" }
            #expect(ours.allSatisfy { $0.level == "info" })
            // Kept as logged: no regular expression ran on the logging threads.
            #expect(ours.allSatisfy { $0.message.hasSuffix("for jane.doe@example.com") })
            #expect(ours.allSatisfy { $0.metadata?["auth"] == "password=hunter2" })
            // What leaves the process is redacted: the upload's redaction of a payload made of them.
            var payload = DiagnosticsPayload(
                test_run_id: UUID().uuidString.lowercased(),
                app_metadata: .init(app_name: "a", app_version: "1", build_number: "1", bundle_id: "com.example.a", environment: "test"),
                device_metadata: CrashReporter.hostMetadata() ?? HostMetadata.current(reportsDirectory: NSTemporaryDirectory()),
                timestamp_collected: Timestamp.iso8601(Date()),
                logs: ours.prefix(3).map { .init(timestamp: Timestamp.iso8601($0.timestamp), level: $0.level, tag: $0.tag,
                                                message: $0.message, metadata: ($0.metadata ?? [:]).mapValues(JSONValue.string)) })
            Redactor.seed000.apply(to: &payload)
            #expect(payload.logs.count == 3)
            #expect(payload.logs.allSatisfy { $0.message.hasSuffix("for [EMAIL_REDACTED]") }, "\(payload.logs.map(\.message))")
            #expect(payload.logs.allSatisfy { $0.metadata?["auth"] == .string("password=[REDACTED]") })
            // Per thread, the breadcrumbs kept are in the order that thread logged them.
            for thread in 0..<threads {
                let ns = ours.filter { $0.metadata?["thread"] == "\(thread)" }.compactMap { Int($0.metadata?["n"] ?? "") }
                #expect(ns == ns.sorted(), "thread \(thread) out of order")
            }
            #expect(zip(crumbs, crumbs.dropFirst()).allSatisfy { $0.index < $1.index })
            // Suites run in parallel in this process: a few of the last 500 may be other suites'.
            #expect(crumbs.filter { $0.tag == "orders" }.count >= 480)
        }

        @Test("the direct path (metadata only on the call): every value kept, escaped, levels mapped")
        func directPath() throws {
            try SharedReporter.start()
            let logger = Logger(label: "direct-path") { label in CrashReportingLogHandler(label: label) }
            logger.error("quote \" and newline \n", metadata: [
                "text": "a \"quoted\" \\ value\nwith é and \u{1}", "count": .stringConvertible(42),
                "list": ["a", "b"], "nested": ["k": "v"],
            ])
            logger.notice("no metadata")
            logger.debug("below the breadcrumb level")
            let crumbs = try #require(CrashReporter.contextSnapshot()?.breadcrumbs.filter { $0.tag == "direct-path" })
            try #require(crumbs.count == 2, "\(crumbs)")
            #expect(crumbs[0].level == "error" && crumbs[0].message == "quote \" and newline \n")
            #expect(crumbs[0].metadata == ["text": "a \"quoted\" \\ value\nwith é and \u{1}", "count": "42",
                                           "list": #"["a", "b"]"#, "nested": #"["k": "v"]"#], "\(String(describing: crumbs[0].metadata))")
            #expect(crumbs[1].level == "info" && crumbs[1].message == "no metadata" && (crumbs[1].metadata ?? [:]).isEmpty)
        }

        @Test("a handler given a redactor still redacts on the caller's thread")
        func explicitRedactor() throws {
            try SharedReporter.start()
            let logger = Logger(label: "explicit-redactor") { label in
                CrashReportingLogHandler(label: label, redactor: .seed000)
            }
            logger.warning("mail jane.doe@example.com", metadata: ["auth": "password=hunter2"])
            let crumb = try #require(CrashReporter.contextSnapshot()?.breadcrumbs.last { $0.tag == "explicit-redactor" })
            #expect(crumb.message == "mail [EMAIL_REDACTED]")
            #expect(crumb.metadata?["auth"] == "password=[REDACTED]")
        }

        @Test("seed 000's redaction rules", arguments: [
            ("login password=s3cr3t ok", "login password=[REDACTED] ok"),
            ("Authorization: Bearer abcdEFGH1234.xyz", "Authorization: Bearer [TOKEN:abcd...]"),
            ("mail jane.doe@example.com now", "mail [EMAIL_REDACTED] now"),
            ("call +1-555-123-4567", "call +1-555-***-****"),
            ("from 192.168.1.100", "from 192.168.x.x"),
            ("INV-2024-001234 paid", "INV-2024-[REDACTED] paid"),
            ("token=abcdefghijklmnop", "token=[TOKEN:abcd...]"),
            ("key 0123456789abcdef0123456789abcdef01", "key [TOKEN:0123...]"),
        ])
        func redaction(_ input: String, _ expected: String) {
            #expect(Redactor.seed000.redact(input) == expected)
        }
    }
}
