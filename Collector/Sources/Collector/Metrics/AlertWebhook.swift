// --alert-webhook URL: every check interval (a minute), the velocity alerts are POSTed there as
// JSON, each issue at most once an hour. A failed POST (no answer, or not 2xx) is tried again at the
// next check. What was sent is remembered in this process: collectors sharing a database each send.
// The POSTs go through async-http-client on NIO's event loops (no redirects followed: the operator
// names the URL that receives the alerts).
import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import ServiceLifecycle

struct AlertWebhook: Service {
    let metrics: IssueMetrics
    let url: URL
    let interval: Duration
    var clock: @Sendable () -> Date = { Date() }
    let logger: Logger
    static let quietPeriod: TimeInterval = 3600

    /// The body POSTed for one alert.
    struct Body: Codable {
        var type = "velocity_alert"
        var generated_at: String
        var rule: AlertsJSON.Rule
        var issue: IssueJSON
        var last_hour: Int
        var baseline_per_hour: Double
        /// The issue's dashboard page, relative to the collector's URL.
        var issue_path: String
    }

    /// One POST's bound, connection included.
    static let requestTimeout: TimeAmount = .seconds(10)

    func run() async throws {
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(
            redirectConfiguration: .disallow, timeout: .init(connect: .seconds(5), read: Self.requestTimeout)))
        var sent: [Int64: Date] = [:]
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            await checkOnce(now: clock(), sent: &sent, client: client)
            let interval = interval
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
        }
        try await client.shutdown()
    }

    /// Sends the alerts not sent in the last hour; `sent` is when each issue's last one went.
    func checkOnce(now: Date, sent: inout [Int64: Date], client: HTTPClient) async {
        sent = sent.filter { now.timeIntervalSince($0.value) < Self.quietPeriod }
        let answer: AlertsJSON
        do {
            answer = try await ReadAPI(store: metrics.store, rule: metrics.rule).alerts(now: now)
        } catch {
            logger.error("alert check failed: \(error)")
            return
        }
        for alert in answer.alerts where sent[alert.issue.id] == nil {
            let body = Body(generated_at: answer.generated_at, rule: answer.rule, issue: alert.issue, last_hour: alert.last_hour,
                            baseline_per_hour: alert.baseline_per_hour, issue_path: "/issues/\(alert.issue.id)")
            var request = HTTPClientRequest(url: url.absoluteString)
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/json")
            request.headers.add(name: "User-Agent", value: "crash-collector")
            do {
                request.body = .bytes(ByteBuffer(bytes: try JSONEncoder.api.encode(body)))
                let response = try await client.execute(request, timeout: Self.requestTimeout)
                // Read (a little of) the answer so that the connection can serve the next POST.
                _ = try? await response.body.collect(upTo: 64 * 1024)
                let status = Int(response.status.code)
                guard (200..<300).contains(status) else {
                    logger.warning("alert webhook answered \(status) for issue \(alert.issue.id); trying again at the next check")
                    continue
                }
                sent[alert.issue.id] = now
                logger.info("alert webhook: issue \(alert.issue.id) \(alert.last_hour) events in the last hour")
            } catch {
                logger.warning("alert webhook failed for issue \(alert.issue.id): \(error); trying again at the next check")
            }
        }
    }
}
