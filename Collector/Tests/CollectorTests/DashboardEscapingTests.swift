// The dashboard's templates (decision 0031) keep every upload's text inert: an upload whose every
// string (and member name) is hostile HTML and Mustache is shown on each page, escaped and verbatim.
@testable import Collector
import Foundation
import Testing

@Suite struct DashboardEscapingTests {
    /// A string that would run a script, break out of an attribute, or be taken for a Mustache tag,
    /// named by where it was put (`field`), so the test can tell which fields a page shows.
    static func hostile(_ field: String) -> String {
        #"\#(field)<script>alert(1)</script>"><img src=x onerror=alert(2)>'{{title}}}}{{{connect.script}}}{{>layout}}"#
    }

    /// Pieces of `hostile` that only appear in a page when something was inserted unescaped.
    static let raw = ["<script>alert", "<img src=x", "\"><img", "'{{"]

    /// Every string of the sample upload made hostile, but for the few the collector reads as data
    /// (times, kinds, the symbolicated flag); member names of the free-form objects too; and the
    /// optional parts the sample lacks (requests in flight, an OOM kill's memory) added.
    static func hostilePayload() throws -> Data {
        let sample = try #require(try JSONSerialization.jsonObject(with: Fixtures.samplePayloadData()) as? [String: Any])
        let kept: Set<String> = ["timestamp", "timestamp_collected", "kind", "received_at"]
        func walk(_ value: Any, _ path: String) -> Any {
            switch value {
            case let object as [String: Any]:
                var result: [String: Any] = [:]
                for (key, member) in object {
                    result[key] = kept.contains(key) ? member : walk(member, path.isEmpty ? key : "\(path).\(key)")
                }
                return result
            case let array as [Any]:
                return array.enumerated().map { walk($0.element, "\(path)[\($0.offset)]") }
            case is String:
                return hostile(path)
            default:
                return value
            }
        }
        var payload = try #require(walk(sample, "") as? [String: Any])
        payload["custom_keys"] = [hostile("custom_keys.name"): hostile("custom_keys.value")]
        payload["custom_data"] = [hostile("custom_data.name"): [hostile("custom_data.value")]]
        var reports = try #require(payload["crash_reports"] as? [[String: Any]])
        for index in reports.indices {
            reports[index]["symbolicated"] = true   // no worker moving the issue while the test reads it
            reports[index]["requests_in_flight"] = [
                ["method": hostile("request.method"), "route": hostile("request.route"), "request_id": hostile("request.request_id"),
                 "trace_id": hostile("request.trace_id"), "thread_id": 7, "age_ms": 15, "crashed_thread": true],
            ]
        }
        if let index = reports.firstIndex(where: { $0["kind"] as? String == "abnormal_termination" }) {
            reports[index]["termination"] = [
                "kind": "oom_kill",
                "memory": ["cgroup": hostile("termination.cgroup"), "limit_bytes": 67_108_864, "samples": [
                    ["timestamp": "2026-11-23T20:00:00.000Z", "rss_bytes": 31_457_280],
                ]],
            ]
        }
        payload["crash_reports"] = reports
        var logs = try #require(payload["logs"] as? [[String: Any]])
        logs[0]["metadata"] = [hostile("logs.metadata.name"): hostile("logs.metadata.value")]
        payload["logs"] = logs
        return try JSONSerialization.data(withJSONObject: payload)
    }

    static let hostileAPILog: Data = {
        let event: [String: Any] = [
            "type": "api_log", "appId": hostile("api_log.appId"), "method": hostile("api_log.method"),
            "url": hostile("api_log.url"), "statusCode": 500, "duration": 12, "timestamp": 1_760_000_000_123,
            "requestHeaders": [hostile("api_log.header.name"): hostile("api_log.header.value")],
            "responseBody": hostile("api_log.responseBody") + String(repeating: "x", count: 5000),   // cut on the page
        ]
        return try! JSONSerialization.data(withJSONObject: event)
    }()

    @Test func everyPageShowsHostileUploadsEscaped() async throws {
        try await TestCollector.with { collector in
            let upload = try await collector.upload(try Self.hostilePayload())
            #expect(upload.status == 201, "\(upload.text)")
            let logged = try await collector.request("POST", "/api/logs", headers: ["Authorization": "Bearer \(TestCollector.token)",
                                                                                  "Content-Type": "application/json"],
                                                     body: Self.hostileAPILog)
            #expect(logged.status == 201, "\(logged.text)")

            var paths = ["/", "/logs"]
            let issues = try await collector.store.issues(.init())
            #expect(issues.count >= 3, "one issue per report kind")
            for issue in issues {
                paths.append("/issues/\(issue.id)")
                let events = try #require(try await collector.read("/api/issues/\(issue.id)").json["events"] as? [[String: Any]])
                if let event = events.first?["id"] as? Int { paths.append("/issues/\(issue.id)?event=\(event)") }
            }
            var shown: Set<String> = []
            for path in paths {
                let page = try await collector.read(path)
                #expect(page.status == 200, "\(path)")
                for piece in Self.raw {
                    #expect(!page.text.contains(piece), "\(path) holds \(piece) unescaped")
                }
                // Data is never read as a template: each Mustache tag of the hostile text is there as it was
                // sent (up to the "…" of a title or subtitle the collector cut short).
                let rest = "&lt;img src=x onerror=alert(2)&gt;&#39;{{title}}}}{{{connect.script}}}{{&gt;layout}}"
                for shown in page.text.components(separatedBy: "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&gt;").dropFirst() {
                    let beforeCut = shown.prefix { $0 != "…" }
                    #expect(shown.hasPrefix(rest) || (beforeCut.count < shown.count && rest.hasPrefix(beforeCut)),
                            "\(path): \(shown.prefix(120))")
                }
                shown.formUnion(Self.fields.filter { page.text.contains(h(Self.hostile($0))) })
            }
            #expect(shown == Set(Self.fields), "fields shown nowhere: \(Set(Self.fields).subtracting(shown).sorted())")
        }
    }

    /// The upload's fields that some page shows whole (others are shown transformed: a frame's
    /// function by its short name, a file with its line, a title made of several).
    static let fields = [
        "app_metadata.app_name", "app_metadata.app_version", "app_metadata.build_number", "app_metadata.bundle_id",
        "app_metadata.environment", "device_metadata.device_model", "device_metadata.device_identifier",
        "device_metadata.ios_version", "device_metadata.locale", "device_metadata.timezone", "device_metadata.virtualization",
        "logs[0].level", "logs[0].tag", "logs[0].message", "logs[1].message",
        "network_errors[0].request_url", "network_errors[0].request_method", "network_errors[0].error_type",
        "network_errors[0].error_message", "crash_reports[0].thread_info[0].name",
        "crash_reports[0].thread_info[0].frames[0].module", "crash_reports[0].thread_info[0].frames[0].function",
        "crash_reports[0].images[0].path", "crash_reports[0].images[0].build_id", "crash_reports[0].images[0].start",
        "crash_reports[0].images[0].end", "crash_reports[1].error.domain", "user_id", "test_run_id",
        "reporter.name", "custom_keys.name", "custom_keys.value",
        "request.method", "request.route", "request.request_id", "request.trace_id", "termination.cgroup",
        "api_log.appId", "api_log.method", "api_log.url",
    ]
}

@Suite struct DashboardTemplateTests {
    @Test func theTemplatesParseAndThePagesOutsideTheLayoutEscape() {
        #expect(DashboardTemplates.shared.names == ["alert-banner", "connect-modal", "error", "event", "issue", "issues", "layout",
                                                    "logs", "not-found", "pages", "unauthorized"])
        #expect(Dashboard.errorPage("<b>{{title}}</b>").contains("Something failed: &lt;b&gt;{{title}}&lt;/b&gt;</p>"))
        #expect(Dashboard.notFound().hasPrefix("<!doctype html>"))
    }
}
