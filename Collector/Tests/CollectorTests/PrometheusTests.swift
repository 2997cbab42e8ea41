// GET /metrics: Prometheus' text format behind the dashboard credentials, uploads counted by
// endpoint and status, timed, refusals by the limit they passed, and the gauges read at the scrape.
// (Symbolication's frame lookups are checked in SymbolicationTests.)
import Foundation
import Testing

/// A scrape as a table: `name{labels}` (as written) to its value.
func scrape(_ collector: TestCollector) async throws -> [String: Double] {
    let answer = try await collector.read("/metrics")
    #expect(answer.status == 200, "\(answer.text)")
    #expect(answer.header("Content-Type")?.hasPrefix("text/plain; version=0.0.4") == true)
    var series: [String: Double] = [:]
    for line in answer.text.split(separator: "\n") where !line.hasPrefix("#") {
        guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else {
            Issue.record("not a sample line: \(line)")
            continue
        }
        series[String(line[..<space])] = value
    }
    return series
}

@Suite struct PrometheusTests {
    static let diagnostics = "endpoint=\"/api/v1/qa/diagnostics\""

    @Test func uploadsAreCountedByStatusAndLimitAndTimed() async throws {
        try await TestCollector.with { collector in
            #expect(try await collector.read("/metrics", authorized: false).status == 401)

            #expect(try await collector.upload(try Fixtures.samplePayloadData()).status == 201)
            #expect(try await collector.upload(try Fixtures.samplePayloadData(), token: "wrong").status == 401)
            let entry = #"{"timestamp":"2026-02-16T14:29:45.123Z","level":"info","tag":"t","message":"m"}"#
            let tooManyLogs = try UploadLimitsTests.sample(with: "logs", json: "[" + Array(repeating: entry, count: 501).joined(separator: ",") + "]")
            #expect(try await collector.upload(tooManyLogs).status == 400)
            let deep = try UploadLimitsTests.sample(with: "custom_data", json: String(repeating: "[", count: 40) + String(repeating: "]", count: 40))
            #expect(try await collector.upload(deep).status == 400)

            let series = try await scrape(collector)
            let d = Self.diagnostics
            #expect(series["collector_uploads_total{\(d),status=\"201\"}"] == 1, "\(series)")
            #expect(series["collector_uploads_total{\(d),status=\"401\"}"] == 1)
            #expect(series["collector_uploads_total{\(d),status=\"400\"}"] == 2)
            #expect(series["collector_uploads_rejected_by_limit_total{\(d),limit=\"logs\"}"] == 1)
            #expect(series["collector_uploads_rejected_by_limit_total{\(d),limit=\"depth\"}"] == 1)
            #expect(series["collector_upload_duration_seconds_count{\(d)}"] == 4)
            // Every upload took more than nothing and less than the last finite bucket's 10 s.
            #expect((series["collector_upload_duration_seconds_sum{\(d)}"] ?? 0) > 0)
            #expect(series["collector_upload_duration_seconds_bucket{\(d),le=\"10.0\"}"] == 4)
            // Series that exist before anything happened to them.
            #expect(series["collector_upload_duration_seconds_count{endpoint=\"/api/logs\"}"] == 0)
            #expect(series["collector_symbolication_frames_total{result=\"resolved\"}"] == 0)
            // The gauges, read at the scrape: nothing in flight now; no symbolication configured.
            #expect(series["collector_uploads_in_flight"] == 0)
            #expect(series["collector_symbolication_queue_depth"] == nil)
            // No series is made of what a request sent (the wrong token is nowhere).
            #expect(!series.keys.contains { $0.contains("wrong") })
        }
    }
}
