// Server-rendered dashboard pages: issues (with seed 001's crash-free rates), one issue's latest
// event, the API logs of seed 003, and seed 002's Connect App modal. This file gathers each page's
// values (DashboardViews.swift); its HTML is in Templates/*.mustache, which escape every value.
// The only script is the modal's (validation, deep link, QR image, copy).
import CrashReportModel
import Crypto
import Foundation

struct Dashboard: Sendable {
    let store: any Store
    let address: ListeningAddress
    let advertisedHost: String?
    var rule = AlertRule()
    var templates = DashboardTemplates.shared

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

        var crashFree: IssuesPageView.CrashFree?
        if !rates.isEmpty {
            let days = IssueMetrics.trendDays(endingAt: now)
            crashFree = IssuesPageView.CrashFree(
                charts: CrashFreeChart(rows: allRates, days: days, metric: .sessions).svg()
                    + CrashFreeChart(rows: allRates, days: days, metric: .users).svg(),
                rows: rates.map { row in
                    let rate = CrashFreeJSON(row)
                    return IssuesPageView.CrashFree.Row(day: row.day, bundleID: row.bundleID, version: row.appVersion,
                                 usersClass: rate.crash_free_users > CrashFreeChart.Metric.users.target ? "ok" : "bad",
                                 crashFreeUsers: percent(rate.crash_free_users),
                                 sessionsClass: rate.crash_free_sessions > CrashFreeChart.Metric.sessions.target ? "ok" : "bad",
                                 crashFreeSessions: percent(rate.crash_free_sessions), sessions: row.sessions)
                })
        }
        var topCrashes: [IssuesPageView.TopCrashes] = []
        for (window, label) in [(86_400.0, "last 24 hours"), (7 * 86_400.0, "last 7 days")] {
            let ranked = try await metrics.top(window: window, now: now, limit: 10)
            topCrashes.append(IssuesPageView.TopCrashes(label: label, ranked: Table(ranked.enumerated().map { rank, entry in
                IssuesPageView.TopCrashes.Row(rank: rank + 1, id: entry.issue.id, title: entry.issue.title, kind: entry.issue.kind,
                      bundleID: entry.issue.bundleID, events: entry.events, sparkline: sparkline(trends[entry.issue.id] ?? empty))
            })))
        }
        let rows = issues.map { issue in
            IssuesPageView.IssueRow(
                id: issue.id, title: issue.title, spike: alerting.contains(issue.id), subtitle: issue.subtitle, kind: issue.kind,
                bundleID: issue.bundleID, events: issue.eventCount, sparkline: sparkline(trends[issue.id] ?? empty),
                users: issue.userCount, versions: issue.versions.joined(separator: ", "),
                firstSeen: Timestamp.format(issue.firstSeen), lastSeen: Timestamp.format(issue.lastSeen))
        }
        return templates.render(IssuesPageView(connect: connectModal(), alerts: alertBanner(alerts), crashFree: crashFree,
                                               topCrashes: topCrashes, issueTable: Table(rows)), "issues")
    }

    private func alertBanner(_ alerts: [VelocityAlert]) -> AlertBannerView? {
        guard !alerts.isEmpty else { return nil }
        return AlertBannerView(minimum: rule.minimum, factor: formatNumber(rule.factor), entries: alerts.map {
            AlertBannerView.Entry(id: $0.issue.id, title: $0.issue.title, bundleID: $0.issue.bundleID, lastHour: $0.lastHour,
                  baselinePerHour: formatNumber($0.baselinePerHour))
        })
    }

    /// The issue, one event whole (the latest, or `event` when it is one of the recent ones), and
    /// the list of recent events, each opening its own report.
    func issuePage(id: Int64, event selected: Int64? = nil, eventsBefore: Int64? = nil, now: Date = Date()) async throws -> String? {
        guard let detail = try await ReadAPI(store: store, rule: rule).issueDetail(id: id, before: eventsBefore, event: selected, now: now)
        else { return nil }
        let issue = detail.issue
        let alert = try await IssueMetrics(store: store, rule: rule).alerts(now: now).first { $0.issue.id == id }
        let shown = detail.event ?? detail.latest_event
        let pageQuery = eventsBefore.map { "&events_before=\($0)" } ?? ""
        var links: [(href: String, label: String)] = []
        if eventsBefore != nil { links.append(("/issues/\(id)", "newest events")) }
        if let next = detail.next_events_before { links.append(("/issues/\(id)?events_before=\(next)", "older events")) }
        let view = IssuePageView(
            title: issue.title, connect: connectModal(), spike: alert != nil, subtitle: issue.subtitle,
            eventCount: issue.event_count, userCount: issue.user_count, firstSeen: issue.first_seen, lastSeen: issue.last_seen,
            versions: issue.versions.joined(separator: ", "), bundleID: issue.bundle_id, kind: issue.kind, signature: issue.signature,
            alerts: alert.flatMap { alertBanner([$0]) },
            trend: sparkline(issue.trend ?? IssueMetrics.emptyTrend(now: now), width: 336, height: 60),
            event: shown.map { eventView($0, heading: detail.event == nil ? "Latest event" : "Event \($0.id)") },
            eventsHeading: eventsBefore == nil ? "Recent events" : "Older events", listedCount: detail.events.count,
            listed: detail.events.map { event in
                IssuePageView.Listed(current: event.id == shown?.id, occurred: event.timestamp, received: event.received_at,
                      version: event.app_version, host: event.host ?? "—", user: event.user_id ?? "—",
                      href: "/issues/\(id)?event=\(event.id)\(pageQuery)")
            },
            pages: PagesView(links))
        return templates.render(view, "issue")
    }

    private func eventView(_ event: EventJSON, heading: String) -> EventView {
        var facts = [Fact(name: "Reason", value: event.reason)]
        if let signal = event.signal {
            facts.append(Fact(name: "Signal", value: "\(signal.name) (\(signal.number)), \(signal.code_name) at \(signal.fault_address)"))
        }
        if let error = event.error { facts.append(Fact(name: "Error", value: "\(error.domain) \(error.code): \(error.message)")) }
        if let termination = event.termination {
            facts.append(Fact(name: "Termination",
                              value: termination.kind == "oom_kill" ? "oom_kill (the kernel's OOM killer)" : termination.kind))
            if let memory = termination.memory {
                if let limit = memory.limit_bytes {
                    facts.append(Fact(name: "Memory limit", value: mebibytes(limit) + (memory.cgroup.map { " (\($0))" } ?? "")))
                }
                let rss = memory.samples.compactMap(\.rss_bytes), usage = memory.samples.compactMap(\.cgroup_bytes)
                if let first = memory.samples.first, let last = memory.samples.last {
                    var growth = "\(memory.samples.count) samples, \(first.timestamp) → \(last.timestamp)"
                    if let a = rss.first, let b = rss.last { growth += "; RSS \(mebibytes(a)) → \(mebibytes(b))" }
                    if let a = usage.first, let b = usage.last { growth += "; cgroup \(mebibytes(a)) → \(mebibytes(b))" }
                    facts.append(Fact(name: "Memory before the end", value: growth))
                }
            }
        }
        facts += [Fact(name: "Occurred", value: event.timestamp), Fact(name: "Received", value: event.received_at),
                  Fact(name: "Symbolicated", value: event.symbolicated ? "yes" : "no (module offsets and build-ids kept for the server)")]
        if event.is_partial { facts.append(Fact(name: "Partial", value: "the record was cut short; what was written is shown")) }
        facts += [Fact(name: "User", value: event.user_id ?? "—"), Fact(name: "Session (test_run_id)", value: event.test_run_id)]

        // The one that started on the crashing thread first: most likely the one that crashed.
        let requests = event.requests_in_flight.sorted { $0.crashed_thread && !$1.crashed_thread }.map { request in
            EventView.Request(method: request.method, route: request.route, requestID: request.request_id ?? "—",
                              traceID: request.trace_id ?? "—", ageMilliseconds: request.age_ms,
                              onCrashingThread: request.crashed_thread, threadID: "\(request.thread_id)")
        }
        let frames = event.frames.map { frame in
            let location = frame.file.map { file in
                file + (frame.line.map { ":\($0)" } ?? "") + (frame.column.map { ":\($0)" } ?? "")
            } ?? ""
            // The short name, tagged as Swift's backtracer tags frames; the full name on hover and in the JSON.
            let tags = (frame.inlined ? "[inlined] " : "") + (frame.async ? "[async] " : "")
            return EventView.Frame(
                rowClass: frame.in_app ? "in-app" : "system", index: frame.index, module: frame.module ?? "?",
                fullFunction: frame.function ?? "", function: (frame.display_function ?? frame.function).map { tags + $0 } ?? "—",
                location: location, place: frame.module_offset.map { "\(frame.address) (+\($0))" } ?? frame.address)
        }
        var threads: [EventView.Thread] = []
        if event.threads.contains(where: \.crashed) {
            threads = event.threads.filter { !$0.crashed && !$0.frames.isEmpty }.map { thread in
                EventView.Thread(name: thread.name, id: "\(thread.id)", lines: thread.frames.map {
                    "#\($0.index) \($0.module ?? "?") \($0.function.map(Grouping.displayName) ?? $0.address)"
                }.joined(separator: "\n"))
            }
        }
        let logs = event.logs.suffix(200).map { log in
            EventView.Log(level: log.level, timestamp: log.timestamp, tag: log.tag, message: log.message,
                          hasMetadata: log.metadata != nil, metadata: log.metadata.map { compactJSON(.object($0)) } ?? "")
        }
        let networkErrors = event.network_errors.map { error in
            EventView.NetworkError(timestamp: error.timestamp, method: error.request_method, url: error.request_url,
                                   status: error.status_code.map(String.init) ?? "—", type: error.error_type,
                                   message: error.error_message, durationMilliseconds: error.request_duration_ms,
                                   retries: error.retry_count)
        }
        let keys = event.custom_keys.sorted { $0.key < $1.key }.map { Fact(name: $0.key, value: $0.value.string ?? compactJSON($0.value)) }

        let app = event.app_metadata, host = event.device_metadata
        var appFacts = [Fact(name: "Name", value: app.app_name), Fact(name: "Version", value: app.app_version),
                        Fact(name: "Build", value: app.build_number), Fact(name: "Bundle id", value: app.bundle_id),
                        Fact(name: "Environment", value: app.environment)]
        if let reporter = event.reporter {
            appFacts.append(Fact(name: "Reporter", value: "\(reporter.name) \(reporter.version)"))
            if reporter.dropped_reports > 0 { appFacts.append(Fact(name: "Dropped on the host", value: String(reporter.dropped_reports))) }
        }
        let hostFacts = [
            Fact(name: "Machine", value: host.device_model), Fact(name: "OS", value: host.ios_version),
            Fact(name: "Host id", value: host.device_identifier),
            Fact(name: "CPU", value: host.cpu_model.isEmpty ? "—" : "\(host.cpu_model) × \(host.cpu_count)"),
            Fact(name: "Memory", value: "\(host.total_memory_mb) MB"), Fact(name: "Free storage", value: "\(host.available_storage_mb) MB"),
            Fact(name: "Virtualization", value: host.virtualization), Fact(name: "Locale", value: host.locale),
            Fact(name: "Time zone", value: host.timezone),
        ]
        let images = event.images.map { EventView.Image(path: $0.path, buildID: $0.build_id, start: $0.start, end: $0.end) }

        return EventView(
            heading: heading, facts: facts, requestTable: Table(requests), crashedThreadName: event.crashed_thread,
            frameTable: Table(frames), threadTable: Table(threads), logCount: event.logs.count, logTable: Table(logs),
            networkErrorCount: event.network_errors.count, networkErrorTable: Table(networkErrors), keyTable: Table(keys),
            customData: event.custom_data.isEmpty ? nil : prettyJSON(.object(event.custom_data)),
            appFacts: appFacts, hostFacts: hostFacts, imageTable: Table(images))
    }

    /// A log's event as shown on the page: at most this many characters of its pretty JSON, then a
    /// link to the whole of it in the read API (an event may hold strings of 512 KiB).
    static let shownLogEventCharacters = 4096

    func logsPage(limit: Int, before: Int64? = nil) async throws -> String {
        let fetched = try await store.apiLogs(limit: limit + 1, appID: nil, before: before)
        let logs = fetched.prefix(limit)
        let rows = logs.map { log in
            let text = prettyJSON(JSONValue(json: log.eventJSON) ?? .null)
            let cut = text.count > Self.shownLogEventCharacters
            let status = log.statusCode ?? 0
            return LogsPageView.Row(
                time: log.timestamp.map { Timestamp.format(Date(milliseconds: $0)) } ?? Timestamp.format(log.receivedAt),
                app: log.appID ?? "—", method: log.method ?? "—", url: log.url ?? "—",
                event: cut ? String(text.prefix(Self.shownLogEventCharacters)) : text, cut: cut, characters: text.count,
                wholeBefore: log.id + 1, statusClass: status >= 400 || status == 0 ? "bad" : "ok", status: status,
                duration: log.duration.map { "\($0) ms" } ?? "—")
        }
        var links: [(href: String, label: String)] = []
        if before != nil { links.append(("/logs", "newest")) }
        if fetched.count > limit, let last = logs.last { links.append(("/logs?before=\(last.id)", "older")) }
        return templates.render(LogsPageView(connect: connectModal(), lead: before == nil ? "The newest" : "Older:", limit: limit,
                                             logTable: Table(Array(rows)), pages: PagesView(links)), "logs")
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

    private func connectModal() -> ConnectModalView {
        let hosts = ConnectLink.candidateHosts(boundHost: address.host, advertised: advertisedHost)
        return ConnectModalView(hosts: hosts, port: address.port,
                                loopbackWarning: ConnectLink.isLoopback(hosts[0]) ? Self.loopbackWarning : nil,
                                script: Self.connectScript)
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

    // MARK: Pages outside the layout

    static func notFound() -> String { DashboardTemplates.shared.render([String: String](), "not-found") }

    static func errorPage(_ message: String) -> String { DashboardTemplates.shared.render(ErrorPageView(message: message), "error") }

    /// The 401 challenge's body (DashboardAuth).
    static func unauthorized() -> String { DashboardTemplates.shared.render([String: String](), "unauthorized") }
}

/// HTML-escapes text for element content and attribute values: for the SVG that this code draws
/// (Charts.swift, QRCode.swift). The pages escape through their templates, with the same five entities.
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
