// Crash reporting's own health as swift-metrics, for the server's dashboards and alerts (a
// destination that has been down for an hour is a page, not a surprise): a Service that publishes,
// every `interval` and once more at shutdown, counters of reports delivered, quarantined and
// dropped by this process, and gauges of reports waiting and requests in flight.
import CrashReporting
import Metrics
import ServiceLifecycle
import Synchronization

public struct CrashReportingMetricsService: Service {
    public var interval: Duration
    private let publisher: Publisher

    /// Metric names start with `prefix`: `<prefix>_reports_delivered_total`,
    /// `_reports_quarantined_total`, `_reports_dropped_total` (counters), `_reports_pending`,
    /// `_requests_in_flight` (gauges).
    public init(interval: Duration = .seconds(10), prefix: String = "crash_reporting") {
        self.interval = interval
        self.publisher = Publisher(prefix: prefix)
    }

    public func run() async throws {
        publisher.publish()
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            do {
                try await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
            } catch {
                break
            }
            publisher.publish()
        }
        publisher.publish()
    }

    /// Publishes once now (what `run` does every `interval`).
    public func publish() { publisher.publish() }
}

/// Turns the reporter's running totals into counter increments. Thread-safe: one lock.
final class Publisher: Sendable {
    private let delivered, quarantined, dropped: Counter
    private let pending, inFlight: Gauge
    private struct Totals { var delivered = 0, quarantined = 0, dropped = 0 }
    private let published = Mutex(Totals())

    init(prefix: String) {
        delivered = Counter(label: "\(prefix)_reports_delivered_total")
        quarantined = Counter(label: "\(prefix)_reports_quarantined_total")
        dropped = Counter(label: "\(prefix)_reports_dropped_total")
        pending = Gauge(label: "\(prefix)_reports_pending")
        inFlight = Gauge(label: "\(prefix)_requests_in_flight")
    }

    func publish() {
        let status = CrashReporter.uploadStatus
        published.withLock { last in
            if status.delivered > last.delivered { delivered.increment(by: status.delivered - last.delivered) }
            if status.quarantined > last.quarantined { quarantined.increment(by: status.quarantined - last.quarantined) }
            if status.dropped > last.dropped { dropped.increment(by: status.dropped - last.dropped) }
            last = Totals(delivered: status.delivered, quarantined: status.quarantined, dropped: status.dropped)
        }
        pending.record(CrashReporter.checkForUnsentReports())
        inFlight.record(CrashReporter.requestsInFlight)
    }
}
