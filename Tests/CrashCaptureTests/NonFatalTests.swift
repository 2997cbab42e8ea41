// Non-fatal errors: ReportableError with nested userInfo round-trips, NSError with its chain of
// underlying errors, parts and payloads, reserved keys refused, non-reportable errors skipped;
// each report carries the stack and the session's context.
import CrashReportModel
import CrashTestSupport
import Foundation
import Testing

/// JSON text → a Foundation object for order-insensitive comparison.
func jsonObject(_ text: String) throws -> NSObject {
    try #require(try JSONSerialization.jsonObject(with: Data(text.utf8), options: .fragmentsAllowed) as? NSObject)
}

@Suite("Non-fatal errors")
struct NonFatalTests {
    @Test("every kind of report is stored with its fields, stack and context")
    func reports() throws {
        let run = try FixtureRun.run("non-fatal-errors", .debug)
        #expect(run.exitStatus == 0)
        var lines = run.standardOutput.split(separator: "\n").map(String.init)
        try #require(lines.count == 8, "\(run.standardOutput)")
        #expect(lines[0] == "custom data set")
        #expect(lines[1].hasPrefix("refused custom data would be ") && lines[1].hasSuffix("bytes of JSON; at most 102400 are kept"))
        lines.removeFirst(2)
        #expect(lines[0...3].allSatisfy { $0.hasPrefix("receipt ") })
        #expect(lines[4] == #"refused userInfo key "domain" is reserved by the report format"#)
        #expect(lines[5] == "none", "a non-reportable error leaves only a breadcrumb")
        let ids = lines[0...3].map { String($0.dropFirst("receipt ".count)) }
        #expect(Set(run.pendingRecords.map { $0.deletingPathExtension().lastPathComponent }) == Set(ids))
        let records = try ids.map { try validatedRecord(at: run.reportsDirectory.appendingPathComponent("pending/\($0).crash")) }

        // ReportableError: nested arrays, dictionaries and an encoded struct; additional info overrides.
        let payment = try #require(records[0].nonFatalError)
        #expect(payment.domain == "com.example.crash-fixture.payments")
        #expect(payment.code == 402)
        #expect(payment.message == "card declined by issuer")
        #expect(try jsonObject(payment.userInfoJSON) == jsonObject("""
            {"attempts":[1,2,3,4],"gateway":{"name":"acme","region":"eu-west"},
             "order":{"orderID":7,"lines":["tea","cake"],"totals":{"net":9.5,"vat":1.9}},"retryable":false}
            """))

        // NSError: its domain, code, description, userInfo, and the underlying chain in order.
        let ns = try #require(records[1].nonFatalError)
        #expect(ns.domain == "com.example.orders" && ns.code == 17)
        #expect(try jsonObject(ns.userInfoJSON) == jsonObject(#"{"order_id":7,"urls":["https://api.example.com/orders/7"]}"#))
        #expect(ns.underlying.map { $0["domain"] ?? "" } == ["com.example.http", "NSPOSIXErrorDomain"])
        #expect(ns.underlying.map { $0["code"] ?? "" } == ["503", "111"])
        #expect(ns.underlying.last?["message"] == "connection refused")

        let timeout = try #require(records[2].nonFatalError)
        #expect(timeout.domain == "com.example.crash-fixture.network" && timeout.code == 1001)
        let event = try #require(records[3].nonFatalError)
        #expect(event.domain == "com.example.crash-fixture.event" && event.message == "migration finished")
        #expect(try jsonObject(event.userInfoJSON) == jsonObject(#"{"migration":"v42","rows":1200}"#))

        for record in records {
            #expect(record.isNonFatal && record.hasEnd && !record.isPartial, "\(record.problems)")
            #expect(record.userID == "user-7")
            #expect(record.breadcrumbs.first?.message == "before errors")
            #expect(try jsonObject(record.customDataJSON ?? "null") == jsonObject(
                #"{"feature_flags":{"beta_messaging":false,"new_feed_design":true},"screens_visited":["login","daily_feed","photos"]}"#))
            #expect(record.customKeys.contains { $0.key == "feature_flags" && $0.jsonValue == #"{"beta_messaging":false,"new_feed_design":true}"# },
                    "a small Codable value is also a crash-readable key")
            #expect(record.thread?.isMain == true)
            let frames = try LLVMSymbolizer.symbolize(record)
            #expect(frames.prefix(4).contains { $0.mentions("reportNonFatalErrors") }, "stack:\n\(frames.map { $0.locations.first?.function ?? "?" })")
        }
        // Each recorded error is also a breadcrumb, so the reports that follow show it.
        #expect(records[3].breadcrumbs.map(\.message).contains("com.example.crash-fixture.network 1001: orders API timed out"))
    }
}
