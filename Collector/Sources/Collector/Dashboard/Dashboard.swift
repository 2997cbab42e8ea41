// Server-rendered dashboard pages: issues (with seed 001's crash-free rates), one issue's latest
// event, the API logs of seed 003, and seed 002's Connect App modal. Plain HTML with every value
// escaped; the only script is the modal's (validation, deep link, QR image, copy).
import CrashReportModel
import Crypto
import Foundation

struct Dashboard: Sendable {
    let store: any Store
    let address: ListeningAddress
    let advertisedHost: String?
    var rule = AlertRule()

    // MARK: Pages

    func issuesPage(now: Date = Date()) async throws -> String {
        let metrics = IssueMetrics(store: store, rule: rule)
        let issues = try await store.issues(IssueQuery(limit: 500))
        let allRates = try await store.crashFree(days: IssueMetrics.trendDays, now: now)
        let rates = allRates.filter { $0.day >= utcDay(now.addingTimeInterval(-6 * 86_400)) }.prefix(30)
        let trends = try await metrics.trends(now: now)
        let alerts = try await metrics.alerts(now: now)
        let alerting = Set(alerts.map(\.issue.id))
        let empty = IssueMetrics.emptyTrend(now: now)
        var body = "<h1>Issues</h1>"
        if !alerts.isEmpty { body += alertBanner(alerts) }
        body += """
            <h2>Crash-free, last 7 days</h2>
            <p class="muted">Targets (seed 001): crash-free users &gt; 99.5%, crash-free sessions &gt; 99.9%.
            A session is one run's session id (test_run_id), counted on the UTC day it started: from its session
            beacon, or from its uploads when it sent no beacon.</p>
            """
        if rates.isEmpty {
            body += "<p class=\"empty\">No sessions in the last 7 days.</p>"
        } else {
            let days = IssueMetrics.trendDays(endingAt: now)
            body += "<div class=\"charts\" id=\"crash-free-charts\">"
            body += CrashFreeChart(rows: allRates, days: days, metric: .sessions).svg()
            body += CrashFreeChart(rows: allRates, days: days, metric: .users).svg()
            body += "</div>"
            body += """
                <table id="crash-free-table"><caption>Crash-free rates per day and version (the charts' data, last 7 days)</caption>
                <tr><th>Day</th><th>App</th><th>Version</th><th>Crash-free users</th><th>Crash-free sessions</th>
                <th>Sessions</th></tr>
                """
            for row in rates {
                let rate = CrashFreeJSON(row)
                body += "<tr><td>\(h(row.day))</td><td>\(h(row.bundleID))</td><td>\(h(row.appVersion))</td>"
                    + "<td class=\"\(rate.crash_free_users > CrashFreeChart.Metric.users.target ? "ok" : "bad")\">\(percent(rate.crash_free_users))</td>"
                    + "<td class=\"\(rate.crash_free_sessions > CrashFreeChart.Metric.sessions.target ? "ok" : "bad")\">\(percent(rate.crash_free_sessions))</td>"
                    + "<td>\(row.sessions)</td></tr>"
            }
            body += "</table>"
        }
        body += try await topCrashesSection(metrics: metrics, trends: trends, now: now)
        body += "<h2>All issues</h2>"
        if issues.isEmpty {
            body += "<p class=\"empty\">No issues yet. Point an app's upload endpoint at this collector (Connect App, top right).</p>"
        } else {
            body += """
                <table class="issues"><tr><th>Issue</th><th>Kind</th><th>App</th><th>Events</th><th>Last 14 days</th><th>Users</th>
                <th>Versions</th><th>First seen</th><th>Last seen</th></tr>
                """
            for issue in issues {
                let badge = alerting.contains(issue.id) ? " <span class=\"badge spike\" title=\"velocity alert\">spike</span>" : ""
                body += """
                    <tr><td><a href="/issues/\(issue.id)">\(h(issue.title))</a>\(badge)<div class="muted">\(h(issue.subtitle))</div></td>
                    <td><span class="kind \(h(issue.kind))">\(h(issue.kind))</span></td><td>\(h(issue.bundleID))</td>
                    <td>\(issue.eventCount)</td><td>\(sparkline(trends[issue.id] ?? empty))</td><td>\(issue.userCount)</td>
                    <td>\(h(issue.versions.joined(separator: ", ")))</td>
                    <td>\(h(Timestamp.format(issue.firstSeen)))</td><td>\(h(Timestamp.format(issue.lastSeen)))</td></tr>
                    """
            }
            body += "</table>"
        }
        return layout(title: "Issues", body: body)
    }

    private func alertBanner(_ alerts: [VelocityAlert]) -> String {
        var body = """
            <div class="alert" role="alert" id="velocity-alerts"><strong>Velocity alert</strong>
            (at least \(rule.minimum) events in the last hour and \(formatNumber(rule.factor))× the issue's hourly average over the
            7 days before)<ul>
            """
        for alert in alerts {
            body += "<li><a href=\"/issues/\(alert.issue.id)\">\(h(alert.issue.title))</a> (\(h(alert.issue.bundleID))): "
                + "\(alert.lastHour) events in the last hour, \(formatNumber(alert.baselinePerHour)) per hour before</li>"
        }
        return body + "</ul></div>"
    }

    private func topCrashesSection(metrics: IssueMetrics, trends: [Int64: [TrendDay]], now: Date) async throws -> String {
        var body = "<section id=\"top-crashes\"><h2>Top crashes</h2><div class=\"columns\">"
        for (window, label) in [(86_400.0, "last 24 hours"), (7 * 86_400.0, "last 7 days")] {
            let ranked = try await metrics.top(window: window, now: now, limit: 10)
            body += "<div><h3>By events, \(label)</h3>"
            if ranked.isEmpty {
                body += "<p class=\"muted\">No events in the \(label).</p></div>"
                continue
            }
            body += "<table class=\"top\"><tr><th>#</th><th>Issue</th><th>Events</th><th>Last 14 days</th></tr>"
            for (rank, entry) in ranked.enumerated() {
                body += "<tr><td>\(rank + 1)</td><td><a href=\"/issues/\(entry.issue.id)\">\(h(entry.issue.title))</a>"
                    + " <span class=\"kind \(h(entry.issue.kind))\">\(h(entry.issue.kind))</span>"
                    + "<div class=\"muted\">\(h(entry.issue.bundleID))</div></td><td>\(entry.events)</td>"
                    + "<td>\(sparkline(trends[entry.issue.id] ?? IssueMetrics.emptyTrend(now: now)))</td></tr>"
            }
            body += "</table></div>"
        }
        return body + "</div></section>"
    }

    /// The issue, one event whole (the latest, or `event` when it is one of the recent ones), and
    /// the list of recent events, each opening its own report.
    func issuePage(id: Int64, event selected: Int64? = nil, eventsBefore: Int64? = nil, now: Date = Date()) async throws -> String? {
        guard let detail = try await ReadAPI(store: store, rule: rule).issueDetail(id: id, before: eventsBefore, event: selected, now: now)
        else { return nil }
        let issue = detail.issue
        let alert = try await IssueMetrics(store: store, rule: rule).alerts(now: now).first { $0.issue.id == id }
        var body = """
            <p><a href="/">← Issues</a></p>
            <h1>\(h(issue.title))\(alert == nil ? "" : " <span class=\"badge spike\" title=\"velocity alert\">spike</span>")</h1>
            <p class="subtitle">\(h(issue.subtitle))</p>
            <dl class="stats">
            <div><dt>Events</dt><dd>\(issue.event_count)</dd></div><div><dt>Users</dt><dd>\(issue.user_count)</dd></div>
            <div><dt>First seen</dt><dd>\(h(issue.first_seen))</dd></div><div><dt>Last seen</dt><dd>\(h(issue.last_seen))</dd></div>
            <div><dt>Versions</dt><dd>\(h(issue.versions.joined(separator: ", ")))</dd></div>
            <div><dt>App</dt><dd>\(h(issue.bundle_id))</dd></div><div><dt>Kind</dt><dd>\(h(issue.kind))</dd></div>
            </dl>
            <p class="muted">Signature: <code>\(h(issue.signature))</code></p>
            """
        if let alert { body += alertBanner([alert]) }
        body += "<h2>Events per day, last 14 days</h2><div id=\"issue-trend\">"
            + sparkline(issue.trend ?? IssueMetrics.emptyTrend(now: now), width: 336, height: 60) + "</div>"
        let shown = detail.event ?? detail.latest_event
        if let event = shown { body += eventSection(event, heading: detail.event == nil ? "Latest event" : "Event \(event.id)") }
        body += "<h2>\(eventsBefore == nil ? "Recent events" : "Older events") (\(detail.events.count))</h2>"
            + "<table class=\"events\"><tr><th>Occurred</th><th>Received</th>"
            + "<th>Version</th><th>Host</th><th>User</th><th>Report</th></tr>"
        let pageQuery = eventsBefore.map { "&amp;events_before=\($0)" } ?? ""
        for event in detail.events {
            let current = event.id == shown?.id
            body += "<tr\(current ? " class=\"current\"" : "")><td>\(h(event.timestamp))</td><td>\(h(event.received_at))</td>"
                + "<td>\(h(event.app_version))</td><td><code>\(h(event.host ?? "—"))</code></td><td>\(h(event.user_id ?? "—"))</td>"
                + "<td>\(current ? "shown above" : "<a href=\"/issues/\(id)?event=\(event.id)\(pageQuery)\">open</a>")</td></tr>"
        }
        body += "</table>"
        var links: [String] = []
        if eventsBefore != nil { links.append("<a href=\"/issues/\(id)\">newest events</a>") }
        if let next = detail.next_events_before { links.append("<a href=\"/issues/\(id)?events_before=\(next)\">older events</a>") }
        if !links.isEmpty { body += "<p class=\"pages\">" + links.joined(separator: " · ") + "</p>" }
        return layout(title: issue.title, body: body)
    }

    private func eventSection(_ event: EventJSON, heading: String = "Latest event") -> String {
        var body = "<h2>\(h(heading))</h2><dl class=\"meta\">"
        body += row("Reason", event.reason)
        if let signal = event.signal {
            body += row("Signal", "\(signal.name) (\(signal.number)), \(signal.code_name) at \(signal.fault_address)")
        }
        if let error = event.error { body += row("Error", "\(error.domain) \(error.code): \(error.message)") }
        if let termination = event.termination {
            body += row("Termination", termination.kind == "oom_kill" ? "oom_kill (the kernel's OOM killer)" : termination.kind)
            if let memory = termination.memory {
                if let limit = memory.limit_bytes { body += row("Memory limit", mebibytes(limit) + (memory.cgroup.map { " (\($0))" } ?? "")) }
                let rss = memory.samples.compactMap(\.rss_bytes), usage = memory.samples.compactMap(\.cgroup_bytes)
                if let first = memory.samples.first, let last = memory.samples.last {
                    var growth = "\(memory.samples.count) samples, \(first.timestamp) → \(last.timestamp)"
                    if let a = rss.first, let b = rss.last { growth += "; RSS \(mebibytes(a)) → \(mebibytes(b))" }
                    if let a = usage.first, let b = usage.last { growth += "; cgroup \(mebibytes(a)) → \(mebibytes(b))" }
                    body += row("Memory before the end", growth)
                }
            }
        }
        body += row("Occurred", event.timestamp) + row("Received", event.received_at)
        body += row("Symbolicated", event.symbolicated ? "yes" : "no (module offsets and build-ids kept for the server)")
        if event.is_partial { body += row("Partial", "the record was cut short; what was written is shown") }
        body += row("User", event.user_id ?? "—") + row("Session (test_run_id)", event.test_run_id)
        body += "</dl>"

        if !event.requests_in_flight.isEmpty {
            // The one that started on the crashing thread first: most likely the one that crashed.
            let requests = event.requests_in_flight.sorted { $0.crashed_thread && !$1.crashed_thread }
            body += "<h3>Requests in flight (\(requests.count))</h3><table class=\"requests\">"
                + "<tr><th>Method</th><th>Route</th><th>Request id</th><th>Trace id</th><th>Age</th><th>Started on</th></tr>"
            for request in requests {
                let thread = request.crashed_thread ? "<strong>the crashing thread</strong> (\(request.thread_id))" : "thread \(request.thread_id)"
                body += "<tr><td>\(h(request.method))</td><td><code>\(h(request.route))</code></td>"
                    + "<td><code>\(h(request.request_id ?? "—"))</code></td><td><code>\(h(request.trace_id ?? "—"))</code></td>"
                    + "<td>\(request.age_ms) ms</td><td>\(thread)</td></tr>"
            }
            body += "</table>"
        }

        body += "<h3>Stack trace\(event.crashed_thread.map { " — " + h($0) } ?? "")</h3>"
        if event.frames.isEmpty {
            body += "<p class=\"muted\">No frames.</p>"
        } else {
            body += "<table class=\"frames\"><tr><th>#</th><th>Module</th><th>Function</th><th>Location</th><th>Address</th></tr>"
            for frame in event.frames {
                let location = frame.file.map { file in
                    file + (frame.line.map { ":\($0)" } ?? "") + (frame.column.map { ":\($0)" } ?? "")
                } ?? ""
                // The short name, tagged as Swift's backtracer tags frames; the full name on hover and in the JSON.
                let tags = (frame.inlined ? "[inlined] " : "") + (frame.async ? "[async] " : "")
                let function = (frame.display_function ?? frame.function).map { tags + $0 } ?? "—"
                let place = frame.module_offset.map { "\(frame.address) (+\($0))" } ?? frame.address
                body += "<tr class=\"\(frame.in_app ? "in-app" : "system")\"><td>\(frame.index)</td><td>\(h(frame.module ?? "?"))</td>"
                    + "<td title=\"\(h(frame.function ?? ""))\">\(h(function))</td><td>\(h(location))</td><td><code>\(h(place))</code></td></tr>"
            }
            body += "</table>"
        }
        let others = event.threads.filter { !$0.crashed && !$0.frames.isEmpty }
        if !others.isEmpty && event.threads.contains(where: \.crashed) {
            body += "<details><summary>Other threads (\(others.count))</summary>"
            for thread in others {
                body += "<h4>\(h(thread.name)) (\(thread.id))</h4><pre>"
                body += thread.frames.map { h("#\($0.index) \($0.module ?? "?") \($0.function.map(Grouping.displayName) ?? $0.address)") }
                    .joined(separator: "\n")
                body += "</pre>"
            }
            body += "</details>"
        }

        body += "<h3>Breadcrumbs and logs (\(event.logs.count))</h3>"
        if event.logs.isEmpty {
            body += "<p class=\"muted\">None.</p>"
        } else {
            body += "<table><tr><th>Time</th><th>Level</th><th>Tag</th><th>Message</th><th>Metadata</th></tr>"
            for log in event.logs.suffix(200) {
                body += "<tr class=\"level-\(h(log.level))\"><td>\(h(log.timestamp))</td><td>\(h(log.level))</td><td>\(h(log.tag))</td>"
                    + "<td>\(h(log.message))</td><td>\(log.metadata.map { "<code>\(h(compactJSON(.object($0))))</code>" } ?? "")</td></tr>"
            }
            body += "</table>"
        }

        body += "<h3>Network errors (\(event.network_errors.count))</h3>"
        if event.network_errors.isEmpty {
            body += "<p class=\"muted\">None.</p>"
        } else {
            body += "<table><tr><th>Time</th><th>Request</th><th>Status</th><th>Type</th><th>Message</th><th>Duration</th><th>Retries</th></tr>"
            for error in event.network_errors {
                body += "<tr><td>\(h(error.timestamp))</td><td>\(h(error.request_method)) \(h(error.request_url))</td>"
                    + "<td>\(error.status_code.map(String.init) ?? "—")</td><td>\(h(error.error_type))</td><td>\(h(error.error_message))</td>"
                    + "<td>\(error.request_duration_ms) ms</td><td>\(error.retry_count)</td></tr>"
            }
            body += "</table>"
        }

        body += "<h3>Keys</h3>"
        if event.custom_keys.isEmpty {
            body += "<p class=\"muted\">None.</p>"
        } else {
            body += "<table class=\"keys\">" + event.custom_keys.sorted { $0.key < $1.key }.map {
                "<tr><th>\(h($0.key))</th><td>\(h($0.value.string ?? compactJSON($0.value)))</td></tr>"
            }.joined() + "</table>"
        }
        if !event.custom_data.isEmpty {
            body += "<h3>Custom data</h3><pre>\(h(prettyJSON(.object(event.custom_data))))</pre>"
        }

        let app = event.app_metadata, host = event.device_metadata
        body += "<div class=\"columns\"><div><h3>App</h3><dl class=\"meta\">"
        body += row("Name", app.app_name) + row("Version", app.app_version) + row("Build", app.build_number)
            + row("Bundle id", app.bundle_id) + row("Environment", app.environment)
        if let reporter = event.reporter {
            body += row("Reporter", "\(reporter.name) \(reporter.version)")
            if reporter.dropped_reports > 0 { body += row("Dropped on the host", String(reporter.dropped_reports)) }
        }
        body += "</dl></div><div><h3>Host</h3><dl class=\"meta\">"
        body += row("Machine", host.device_model) + row("OS", host.ios_version) + row("Host id", host.device_identifier)
            + row("CPU", host.cpu_model.isEmpty ? "—" : "\(host.cpu_model) × \(host.cpu_count)")
            + row("Memory", "\(host.total_memory_mb) MB") + row("Free storage", "\(host.available_storage_mb) MB")
            + row("Virtualization", host.virtualization) + row("Locale", host.locale) + row("Time zone", host.timezone)
        body += "</dl></div></div>"
        if !event.images.isEmpty {
            body += "<details><summary>Loaded modules (\(event.images.count))</summary><table><tr><th>Path</th><th>Build id</th><th>Range</th></tr>"
            for image in event.images {
                body += "<tr><td>\(h(image.path))</td><td><code>\(h(image.build_id))</code></td><td><code>\(h(image.start))–\(h(image.end))</code></td></tr>"
            }
            body += "</table></details>"
        }
        return body
    }

    /// A log's event as shown on the page: at most this many characters of its pretty JSON, then a
    /// link to the whole of it in the read API (an event may hold strings of 512 KiB).
    static let shownLogEventCharacters = 4096

    func logsPage(limit: Int, before: Int64? = nil) async throws -> String {
        let fetched = try await store.apiLogs(limit: limit + 1, appID: nil, before: before)
        let logs = fetched.prefix(limit)
        var body = "<h1>API logs</h1><p class=\"muted\">\(before == nil ? "The newest" : "Older:") \(limit) api_log events "
            + "received on POST /api/logs (seed 003), a page at a time.</p>"
        if logs.isEmpty {
            body += "<p class=\"empty\">No API logs yet.</p>"
        } else {
            body += "<table class=\"logs\"><tr><th>Time</th><th>App</th><th>Method</th><th>URL</th><th>Status</th><th>Duration</th></tr>"
            for log in logs {
                let time = log.timestamp.map { Timestamp.format(Date(milliseconds: $0)) } ?? Timestamp.format(log.receivedAt)
                let status = log.statusCode ?? 0
                body += "<tr><td>\(h(time))</td><td>\(h(log.appID ?? "—"))</td><td>\(h(log.method ?? "—"))</td>"
                    + "<td><details><summary>\(h(log.url ?? "—"))</summary>\(Self.logEvent(log))</details></td>"
                    + "<td class=\"\(status >= 400 || status == 0 ? "bad" : "ok")\">\(status)</td><td>\(log.duration.map { "\($0) ms" } ?? "—")</td></tr>"
            }
            body += "</table>"
        }
        var links: [String] = []
        if before != nil { links.append("<a href=\"/logs\">newest</a>") }
        if fetched.count > limit, let last = logs.last { links.append("<a href=\"/logs?before=\(last.id)\">older</a>") }
        if !links.isEmpty { body += "<p class=\"pages\">" + links.joined(separator: " · ") + "</p>" }
        return layout(title: "API logs", body: body)
    }

    static func logEvent(_ log: StoredAPILog) -> String {
        let text = prettyJSON(JSONValue(json: log.eventJSON) ?? .null)
        guard text.count > shownLogEventCharacters else { return "<pre>\(h(text))</pre>" }
        return "<pre>\(h(String(text.prefix(shownLogEventCharacters))))…</pre>"
            + "<p class=\"muted\">\(text.count) characters; <a href=\"/api/logs?before=\(log.id + 1)&amp;limit=1\">the whole event</a></p>"
    }

    // MARK: Connect App (seed 002)

    func connectLink(appID: String) -> APIAnswer {
        let hosts = ConnectLink.candidateHosts(boundHost: address.host, advertised: advertisedHost)
        let host = hosts[0]
        let error = ConnectLink.validate(appID: appID)
        return .json(error == nil ? 200 : 400, ConnectLinkBody(
            app_id: appID, valid: error == nil, error: error, server_ip: host, server_port: address.port,
            deep_link: error == nil ? ConnectLink.deepLink(appID: appID, host: host, port: address.port) : nil,
            qr_svg: error == nil ? ConnectLink.qrPath(appID: appID, host: host, port: address.port) : nil,
            warning: ConnectLink.isLoopback(host) ? Self.loopbackWarning : nil))
    }

    enum QRAnswer {
        case svg(String)
        case invalid(APIAnswer)
    }

    /// GET /connect/qr.svg?app_id=&host=&port=: the deep link's QR code. The modal passes the host
    /// and port it shows; either may be left out for the detected ones. The same rules as the modal
    /// and seed 002 §5.2: a bundle id, an IPv4 address or host name, a port in 1...65535 (400 else).
    func connectQR(appID: String?, host: String?, port: String?) -> QRAnswer {
        let appID = appID ?? ""
        let host = host ?? ConnectLink.candidateHosts(boundHost: address.host, advertised: advertisedHost)[0]
        var details: [String] = []
        if let error = ConnectLink.validate(appID: appID) { details.append(error) }
        if let error = ConnectLink.validate(host: host) { details.append(error) }
        let portNumber = port.map(ConnectLink.port) ?? address.port
        if portNumber == nil { details.append("The server port is an integer from 1 to 65535") }
        guard details.isEmpty, let portNumber else {
            return .invalid(.error(400, "validation_failed", details.joined(separator: "; "), details: details))
        }
        let link = ConnectLink.deepLink(appID: appID, host: host, port: portNumber)
        // Unreachable with the limits above (a version 40 symbol holds 2,331 bytes at level M).
        guard let code = QRCode(link) else {
            return .invalid(.error(400, "qr_failed", "The deep link does not fit in a QR code"))
        }
        return .svg(code.svg(title: link))
    }

    static let loopbackWarning = "This collector listens on 127.0.0.1 only: a phone or another machine cannot reach it. Restart it with --host 0.0.0.0."

    private func connectModal() -> String {
        let hosts = ConnectLink.candidateHosts(boundHost: address.host, advertised: advertisedHost)
        let port = address.port
        let options = hosts.map { "<option>\(h($0))</option>" }.joined()
        let warning = ConnectLink.isLoopback(hosts[0]) ? "<p class=\"warning\">\(h(Self.loopbackWarning))</p>" : ""
        return """
            <dialog id="connect"><form method="dialog" id="connect-form">
            <h2>Connect App</h2>
            <label>App bundle id <input id="app-id" placeholder="com.example.app" autocomplete="off" required></label>
            <p id="app-id-error" class="error" hidden></p>
            <label>Server host <select id="server-ip">\(options)</select></label>
            <label>Server port <input id="server-port" value="\(port)" readonly></label>
            <label>Deep link <textarea id="deep-link" readonly rows="2" placeholder="enter a bundle id"></textarea></label>
            <figure id="qr-box" hidden><img id="qr" alt="QR code of the deep link" width="216" height="216">
            <figcaption>Scan with the phone's camera: the app opens and sends to this collector.</figcaption></figure>
            <p id="qr-error" class="error" hidden>The QR code could not be generated.</p>
            <p><button type="button" id="copy">Copy link</button> <span id="copied" hidden>Copied</span>
               <button type="button" id="close-connect">Close</button></p>
            \(warning)
            <p class="help">The phone or machine running the app must be on the same LAN as this collector, and
            the collector must listen on the LAN interface (<code>--host 0.0.0.0</code>), not only on
            <code>127.0.0.1</code>. The app registers the URL scheme <code>dev-see-&lt;bundle id&gt;</code> and passes the
            link to <code>CrashReporter.handleURL(_:)</code>.</p>
            </form></dialog>
            <script>\(Self.connectScript)</script>
            """
    }

    /// The Connect App modal's script: the only script of the dashboard, served inline and allowed
    /// by its hash in the Content-Security-Policy (no 'unsafe-inline' for scripts, no inline handlers).
    static let connectScript = """
    (function () {
      var id = document.getElementById('app-id'), ip = document.getElementById('server-ip'),
          port = document.getElementById('server-port'), link = document.getElementById('deep-link'),
          error = document.getElementById('app-id-error'), qr = document.getElementById('qr'),
          qrBox = document.getElementById('qr-box'), qrError = document.getElementById('qr-error');
      // The server's rule (ConnectLink.validate): dot-separated labels of letters, digits, hyphens.
      var valid = /^[A-Za-z0-9-]+(\\.[A-Za-z0-9-]+)*$/;
      function update() {
        var value = id.value.trim();
        var ok = value.length > 0 && value.length <= 155 && valid.test(value);
        error.hidden = ok || value.length === 0;
        error.textContent = ok ? '' : 'A bundle id has letters, digits and hyphens, separated by dots (e.g. com.example.app)';
        link.value = ok ? 'dev-see-' + value + '://connect?server_ip=' + encodeURIComponent(ip.value) +
          '&server_port=' + encodeURIComponent(port.value) : '';
        // The QR code of the same link, drawn by the server (libqrencode), redrawn on every change.
        if (ok) {
          var src = '/connect/qr.svg?app_id=' + encodeURIComponent(value) + '&host=' + encodeURIComponent(ip.value) +
            '&port=' + encodeURIComponent(port.value);
          if (qr.getAttribute('src') !== src) { qr.setAttribute('src', src); }
          qrBox.hidden = false;
        } else {
          qr.removeAttribute('src'); qrBox.hidden = true; qrError.hidden = true;
        }
      }
      qr.addEventListener('load', function () { qrError.hidden = true; qrBox.hidden = !qr.getAttribute('src'); });
      qr.addEventListener('error', function () {
        if (!qr.getAttribute('src')) { return; }
        qrBox.hidden = true; qrError.hidden = false;
      });
      id.addEventListener('input', update); ip.addEventListener('change', update); port.addEventListener('input', update);
      function open() { document.getElementById('connect').showModal(); id.focus(); }
      document.getElementById('open-connect').addEventListener('click', open);
      document.getElementById('close-connect').addEventListener('click', function () { document.getElementById('connect').close(); });
      // Enter in a field must not submit (and close) the dialog.
      document.getElementById('connect-form').addEventListener('submit', function (event) { event.preventDefault(); });
      // A link to #connect (or #connect=<bundle id>) opens the modal, filled in.
      var hash = decodeURIComponent(location.hash.slice(1));
      if (hash === 'connect' || hash.indexOf('connect=') === 0) { id.value = hash.slice(8); update(); open(); }
      document.getElementById('copy').addEventListener('click', function () {
        if (!link.value) { update(); return; }
        var done = function () { var c = document.getElementById('copied'); c.hidden = false; setTimeout(function () { c.hidden = true; }, 1500); };
        if (navigator.clipboard && window.isSecureContext) { navigator.clipboard.writeText(link.value).then(done); }
        else { link.select(); document.execCommand('copy'); done(); }
      });
    })();
    """

    /// `'sha256-…'` of connectScript, as script-src names it.
    static let connectScriptHash: String = {
        "'sha256-" + Data(SHA256.hash(data: Data(connectScript.utf8))).base64EncodedString() + "'"
    }()

    // MARK: Layout

    private func layout(title: String, body: String) -> String {
        """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
        <title>\(h(title)) — crash-collector</title>
        <style>\(Self.style)</style></head>
        <body><header><a class="brand" href="/">crash-collector</a><nav><a href="/">Issues</a><a href="/logs">Logs</a></nav>
        <button id="open-connect" type="button">Connect App</button></header>
        <main>\(body)</main>
        \(connectModal())
        </body></html>
        """
    }

    static func notFound() -> String {
        "<!doctype html><html lang=\"en\"><meta charset=\"utf-8\"><title>Not found</title><p>Not found. <a href=\"/\">Issues</a></p></html>"
    }

    static func errorPage(_ message: String) -> String {
        "<!doctype html><html lang=\"en\"><meta charset=\"utf-8\"><title>Error</title><p>Something failed: \(h(message))</p></html>"
    }

    static let style = """
        body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
        header{display:flex;align-items:center;gap:1.5em;padding:.6em 1.5em;background:#1d2330;color:#fff}
        header a{color:#fff;text-decoration:none;margin-right:1em}.brand{font-weight:700}
        header nav{flex:1}header button{background:#4f7cff;color:#fff;border:0;border-radius:4px;padding:.45em 1em;cursor:pointer}
        main{padding:1em 1.5em;max-width:1200px}
        table{border-collapse:collapse;width:100%;background:#fff;margin:.5em 0 1.2em}
        th,td{text-align:left;padding:.35em .6em;border-bottom:1px solid #e3e6eb;vertical-align:top}
        th{background:#eef0f4;font-weight:600}
        code,pre{font:12px ui-monospace,monospace}pre{background:#fff;padding:.6em;overflow:auto}
        .muted{color:#6b7280}.empty{padding:2em;background:#fff;text-align:center}
        .ok{color:#137333}.bad{color:#b3261e}.warning{color:#8a4b00;background:#fff4e0;padding:.5em}
        .error{color:#b3261e}.subtitle{font-size:1.1em;color:#374151}
        .kind{padding:.1em .5em;border-radius:3px;background:#e3e6eb}.kind.crash{background:#fde2e1}.kind.non_fatal{background:#fff1c2}.kind.hang{background:#e3e0ff}
        .stats{display:flex;flex-wrap:wrap;gap:1.5em}.stats dt{color:#6b7280;font-size:.85em}.stats dd{margin:0;font-weight:600}
        .meta{display:grid;grid-template-columns:max-content 1fr;gap:.2em 1em}.meta dt{color:#6b7280}.meta dd{margin:0}
        .frames tr.in-app td{font-weight:600}.frames tr.system td{color:#6b7280}
        .columns{display:flex;gap:3em;flex-wrap:wrap}.columns>div{flex:1;min-width:320px}
        .charts{display:flex;gap:1em;flex-wrap:wrap}.charts figure{margin:0;background:#fff;padding:.5em;max-width:550px}
        .charts figcaption{color:#4b5563;font-size:.85em}
        .alert{background:#fde2e1;border-left:4px solid #b3261e;padding:.5em 1em;margin:.5em 0 1em}.alert ul{margin:.3em 0}
        .badge{font-size:.75em;padding:.1em .45em;border-radius:3px;vertical-align:middle}.badge.spike{background:#b3261e;color:#fff}
        svg.spark{vertical-align:middle}caption{text-align:left;color:#4b5563;font-size:.85em;padding:.3em 0}
        .level-error td,.level-fatal td{color:#b3261e}
        dialog{border:0;border-radius:8px;padding:1.5em;width:min(560px,90vw);box-shadow:0 8px 30px #0004}
        dialog label{display:block;margin:.6em 0}dialog input,dialog select,dialog textarea{display:block;width:100%;padding:.4em;box-sizing:border-box}
        dialog textarea{font:12px ui-monospace,monospace;resize:none}
        .help{color:#4b5563;font-size:.9em}
        dialog figure{margin:.6em 0;text-align:center}dialog figure img{display:block;margin:0 auto;image-rendering:pixelated}
        dialog figcaption{color:#4b5563;font-size:.85em}
        """
}

/// HTML-escapes text for element content and attribute values.
func h(_ text: String) -> String {
    var result = ""
    result.reserveCapacity(text.utf8.count)
    for character in text {
        switch character {
        case "&": result += "&amp;"
        case "<": result += "&lt;"
        case ">": result += "&gt;"
        case "\"": result += "&quot;"
        case "'": result += "&#39;"
        default: result.append(character)
        }
    }
    return result
}

private func row(_ name: String, _ value: String) -> String { "<dt>\(h(name))</dt><dd>\(h(value))</dd>" }

func percent(_ rate: Double) -> String { String(format: "%.2f%%", rate * 100) }

/// 3, 2.5, 0.143: at most three decimals, no trailing zeros.
func formatNumber(_ value: Double) -> String {
    var text = String(format: "%.3f", value)
    while text.hasSuffix("0") { text.removeLast() }
    if text.hasSuffix(".") { text.removeLast() }
    return text
}

func compactJSON(_ value: JSONValue) -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    return (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? ""
}

func prettyJSON(_ value: JSONValue) -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes, .prettyPrinted]
    return (try? encoder.encode(value)).map { String(decoding: $0, as: UTF8.self) } ?? ""
}

/// "12.3 MiB".
private func mebibytes(_ bytes: Int) -> String {
    String(format: "%.1f MiB", Double(bytes) / 1_048_576)
}
