// GET /metrics: what an operator graphs and alerts on, recorded through swift-metrics into a
// Prometheus registry of the collector's own and served in Prometheus' text format (dashboard
// credentials, as the read API). Not the process-wide MetricsSystem: tests run many collectors in
// one process, and an app embedding the collector keeps its own bootstrap.
//
// Every label value comes from the collector's code (endpoints, status codes, limit names,
// lookup results), never from a request: the number of series is fixed.
import CoreMetrics
import Prometheus

public final class CollectorMetrics: Sendable {
    public let registry: PrometheusCollectorRegistry
    private let factory: PrometheusMetricsFactory

    enum Name {
        static let uploads = "collector_uploads_total"
        static let uploadDuration = "collector_upload_duration_seconds"
        static let rejectedByLimit = "collector_uploads_rejected_by_limit_total"
        static let uploadsInFlight = "collector_uploads_in_flight"
        static let symbolicationQueue = "collector_symbolication_queue_depth"
        static let symbolicationFrames = "collector_symbolication_frames_total"
        static let symbolicationLeftRaw = "collector_symbolication_uploads_left_raw_total"
    }

    /// The upload endpoints, by the label they are counted under.
    public enum Endpoint: String, Sendable, CaseIterable {
        case diagnostics = "/api/v1/qa/diagnostics"
        case sessions = "/api/v1/sessions"
        case logs = "/api/logs"
    }

    /// What one raw frame's lookup came to.
    enum FrameLookup: String, CaseIterable {
        /// Function (and file and line) found.
        case resolved
        /// No debug file for its build-id in the symbol folders or debuginfod.
        case noDebugFile = "no_debug_file"
        /// Its build-id was past its token's hourly cap: not looked up.
        case overCap = "over_cap"
    }

    public init() {
        registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        // An upload is answered in milliseconds; the default buckets start at 5 ms.
        factory.durationHistogramBuckets[Name.uploadDuration] = [
            .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25),
            .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500),
            .seconds(5), .seconds(10),
        ]
        self.factory = factory
        // Series that exist from the start (a rate over a series that appears late misses its
        // first increase): each endpoint's duration and the symbolication results.
        for endpoint in Endpoint.allCases {
            _ = Timer(label: Name.uploadDuration, dimensions: [("endpoint", endpoint.rawValue)], factory: factory)
        }
        for result in FrameLookup.allCases {
            _ = Counter(label: Name.symbolicationFrames, dimensions: [("result", result.rawValue)], factory: factory)
        }
        _ = Counter(label: Name.symbolicationLeftRaw, dimensions: [("reason", "queue_full")], factory: factory)
    }

    /// One upload answered: its status (201 stored, 400 invalid, 401, 403, 409, 413, 429, 503…),
    /// the limit it passed if any, and how long it took from the head to the answer.
    func uploadAnswered(_ endpoint: Endpoint, status: Int, limit: String?, duration: Duration) {
        Counter(label: Name.uploads, dimensions: [("endpoint", endpoint.rawValue), ("status", String(status))],
                factory: factory).increment()
        let (seconds, attoseconds) = duration.components
        Timer(label: Name.uploadDuration, dimensions: [("endpoint", endpoint.rawValue)], factory: factory)
            .recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
        if let limit {
            Counter(label: Name.rejectedByLimit, dimensions: [("endpoint", endpoint.rawValue), ("limit", limit)],
                    factory: factory).increment()
        }
    }

    func symbolicated(_ result: FrameLookup, frames: Int) {
        guard frames > 0 else { return }
        Counter(label: Name.symbolicationFrames, dimensions: [("result", result.rawValue)], factory: factory)
            .increment(by: frames)
    }

    /// An upload whose raw reports stay raw because the symbolication queue was full.
    func symbolicationQueueFull() {
        Counter(label: Name.symbolicationLeftRaw, dimensions: [("reason", "queue_full")], factory: factory).increment()
    }

    /// The text a scrape gets, with the gauges read now: uploads in flight (admitted, not yet
    /// answered) and uploads waiting for or in symbolication (nil: no symbolication configured).
    func exposition(uploadsInFlight: Int, symbolicationQueue: Int?) -> [UInt8] {
        Gauge(label: Name.uploadsInFlight, factory: factory).record(uploadsInFlight)
        if let symbolicationQueue {
            Gauge(label: Name.symbolicationQueue, factory: factory).record(symbolicationQueue)
        }
        var text: [UInt8] = []
        registry.emit(into: &text)
        return text
    }
}
