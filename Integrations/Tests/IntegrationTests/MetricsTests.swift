// CrashReportingMetricsService's metrics, read back through swift-metrics' TestMetrics.
import CrashReporting
@testable import CrashReportingMetrics
import Foundation
import Metrics
import MetricsTestKit
import Testing

@Test("pending reports and requests in flight as gauges; delivered, quarantined, dropped as counters of this process")
func metricsArePublished() throws {
    let metrics = TestMetrics()
    MetricsSystem.bootstrap(metrics)   // once per process: this is the only test that does it
    let folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("metrics-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: folder) }
    try CrashReporter.start(.init(appID: "com.example.metrics", reportsDirectory: folder.path, upload: .disabled))
    let requests = (0..<3).map { CrashReporter.beginRequest(method: "GET", route: "/r/\($0)") }

    let service = CrashReportingMetricsService(prefix: "test")
    service.publish()
    #expect(try metrics.expectGauge("test_requests_in_flight").lastValue == 3)
    #expect(try metrics.expectGauge("test_reports_pending").lastValue == Double(CrashReporter.checkForUnsentReports()))
    #expect(try metrics.expectCounter("test_reports_delivered_total").totalValue == 0)

    requests.forEach(CrashReporter.endRequest)
    service.publish()
    #expect(try metrics.expectGauge("test_requests_in_flight").lastValue == 0)
}
