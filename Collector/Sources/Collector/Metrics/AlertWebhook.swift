// --alert-webhook URL: every check interval (a minute), the velocity alerts are POSTed there as
// JSON, each issue at most once an hour. A failed POST (no answer, or not 2xx) is tried again at the
// next check. What was sent is remembered in this process: collectors sharing a database each send.
import Foundation
import Logging
import ServiceLifecycle
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

struct AlertWebhook: Service {
    let metrics: IssueMetrics
    let url: URL
    let interval: Duration
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

    func run() async throws {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 10
        let session = URLSession(configuration: configuration)
        defer { session.invalidateAndCancel() }
        var sent: [Int64: Date] = [:]
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            await checkOnce(now: Date(), sent: &sent, session: session)
            let interval = interval
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
        }
    }

    /// Sends the alerts not sent in the last hour; `sent` is when each issue's last one went.
    func checkOnce(now: Date, sent: inout [Int64: Date], session: URLSession) async {
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
            var request = URLRequest(url: url)
            request.httpMethod = "POST"
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.setValue("crash-collector", forHTTPHeaderField: "User-Agent")
            do {
                request.httpBody = try JSONEncoder.api.encode(body)
                let (_, response) = try await session.data(for: request)
                let status = (response as? HTTPURLResponse)?.statusCode ?? 0
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
