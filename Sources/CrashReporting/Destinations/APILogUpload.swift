// Seed 003's api_log events, spooled per session in api_logs/<session>.jsonl by logNetworkRequest,
// go to `POST {endpoint}/api/logs` once their session is over (the next launch, or a later pass):
// gzip'd JSON arrays of at most 500 events, URLs and bodies redacted like the diagnostics payload.
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Glibc

extension Uploader {
    static let apiLogBatch = 500

    /// Whether an ended session left api_log events to send.
    func hasAPILogsToSend() -> Bool {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path + "/api_logs")) ?? []
        return names.contains { $0.hasSuffix(".jsonl") && $0 != sessionID + ".jsonl" }
    }

    /// Sends the spool files of ended sessions; false when the collector is down or refuses the
    /// token (the pass stops, the files stay).
    func sendAPILogs(memo: RedactionMemo) -> Bool {
        let folder = directory.path + "/api_logs"
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { return true }
        for name in names.sorted() where name.hasSuffix(".jsonl") && name != sessionID + ".jsonl" {
            let path = folder + "/" + name
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { continue }
            let entries = text.split(separator: "\n").compactMap { line -> (raw: Substring, event: [String: Any])? in
                guard var event = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] else { return nil }
                for key in ["url", "requestBody", "responseBody", "error"] {
                    if let value = event[key] as? String { event[key] = key == "url" ? redactedURL(value, memo) : memo.redact(value) }
                }
                return (line, event)
            }
            var offset = 0
            while offset < entries.count {
                // At most 500 events and about 1 MB of JSON per request.
                var batch: [[String: Any]] = []
                var size = 0
                while offset + batch.count < entries.count && batch.count < Self.apiLogBatch && size < 1 << 20 {
                    let entry = entries[offset + batch.count]
                    batch.append(entry.event)
                    size += entry.raw.utf8.count
                }
                guard let json = try? JSONSerialization.data(withJSONObject: batch),
                      let outcome = postToCollector("api/logs", json: json) else { break }
                switch outcome {
                case .delivered:
                    offset += batch.count
                case .rejected(let status, let message):
                    // Refused for good: kept aside with the reason, as records are.
                    let target = directory.quarantineFolder + "/" + name
                    rename(path, target)
                    try? Data("HTTP \(status): \(message)\n".utf8).write(to: URL(fileURLWithPath: target + ".reason"))
                    offset = -1
                case .tooLarge, .unauthorized, .retryLater, .unreachable:
                    // Keep what was not sent, and only that: a later pass must not send a batch twice.
                    if offset > 0 {
                        let rest = entries[offset...].map { $0.raw + "\n" }.joined()
                        try? Data(rest.utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
                    }
                    return false
                }
                if offset < 0 { break }
            }
            if offset >= entries.count { unlink(path) }
        }
        return true
    }

    /// POSTs gzip'd JSON to the collector's `path` with the upload token; nil if it could not
    /// be compressed. Seed 003's logs and the session beacons go this way.
    func postToCollector(_ path: String, json: Data) -> DeliveryOutcome? {
        guard let body = try? Gzip.compress(json) else { return nil }
        var request = URLRequest(url: resolveEndpoint().url.appendingPathComponent(path))
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("gzip", forHTTPHeaderField: "Content-Encoding")
        if let token = settings.token ?? getenv("CRASH_REPORTING_TOKEN").map({ String(cString: $0) }) {
            request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        }
        request.httpBody = body
        return HTTPTransport.outcome(HTTPExchange.send(request, timeout: settings.requestTimeout, client: settings.httpClient ?? URLSessionHTTPClient()))
    }

    private func redactedURL(_ text: String, _ memo: RedactionMemo) -> String {
        guard let url = URL(string: text) else { return memo.redact(text) }
        return memo.redactor.redactURL(url)
    }
}
