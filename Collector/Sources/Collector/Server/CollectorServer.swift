// The HTTP surface on Hummingbird 2: upload endpoints (ingest token), the read API and dashboard
// pages (dashboard password, HTTP basic auth), and a health check. Handlers translate HTTP to the
// Ingest / ReadAPI / Dashboard functions and back; no logic of their own beyond auth and limits.
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// Where the server listens, known once it has bound (port 0 picks a free one); the Connect App
/// modal and the startup line read it.
public final class ListeningAddress: Sendable {
    private let state: Mutex<(host: String, port: Int)>

    public init(host: String, port: Int) { state = Mutex((host, port)) }

    public var host: String { state.withLock { $0.host } }
    public var port: Int { state.withLock { $0.port } }
    func set(port: Int) { state.withLock { $0.port = port } }

    /// URLs other machines can use: this machine's LAN addresses when listening on all interfaces.
    public var lanURLs: [String] {
        guard ConnectLink.isWildcard(host) else { return [] }
        return ConnectLink.lanAddresses().map { "http://\($0):\(port)" }
    }
}

public enum CollectorServer {
    public typealias App = Application<RouterResponder<CollectorRequestContext>>

    /// The application, not yet running: `try await app.runService()` (or add it to a ServiceGroup).
    /// `onListening` gets the bound address, once.
    public static func application(
        store: any Store, configuration: CollectorConfiguration, host: String, port: Int, logger: Logger,
        onListening: @escaping @Sendable (ListeningAddress) async -> Void = { _ in }
    ) -> App {
        let address = ListeningAddress(host: host, port: port)
        let refusals = configuration.freeUploadRefusals.map {
            RefusedUploads(freeRefusals: $0, backoff: configuration.uploadRefusalBackoff)
        }
        let router = makeRouter(store: store, configuration: configuration, address: address, refusals: refusals,
                                held: HeldAnswers(hold: configuration.throttledAnswerHold), logger: logger)
        let ingest = Ingest(store: store, configuration: configuration, logger: logger)
        let uploadPaths: Set<String> = ["/api/v1/qa/diagnostics", "/api/v1/sessions", "/api/logs"]
        /// An upload's head: an accepted token (none for anonymous logs when allowed), no
        /// Content-Length over the limit, a sender not blocked for refused uploads; other requests always.
        let uploadMayReadBody: @Sendable (HTTPRequest, () -> String) -> Bool = { head, address in
            guard head.method == .post, let path = head.path?.split(separator: "?", maxSplits: 1).first.map(String.init),
                  uploadPaths.contains(path) else { return true }
            if let length = head.headerFields[.contentLength].flatMap(Int.init), length > configuration.maxBodyBytes { return false }
            let authorization = head.headerFields[.authorization]
            if let refusals, refusals.blocked(RefusedUploads.key(authorization: authorization, address: address())) != nil {
                return false
            }
            return path == "/api/logs" ? ingest.mayPostLogs(authorization: authorization) : ingest.isAuthorized(authorization)
        }
        /// Connections waiting for a request head: at the cap, the oldest is closed for a new one.
        let waiting = WaitingConnections()
        var services: [any Service] = []
        if configuration.retentionDays > 0 {
            services.append(RetentionService(store: store, days: configuration.retentionDays, logger: logger))
        }
        if let webhook = configuration.alertWebhook {
            services.append(AlertWebhook(metrics: IssueMetrics(store: store, rule: configuration.alertRule), url: webhook,
                                         interval: configuration.alertCheckInterval, clock: configuration.clock,
                                         logger: logger))
        }
        return Application(
            router: router,
            // The idle time-out closes a connection that sends nothing for that long: between
            // requests, in the middle of a request's head (slowloris), or between body chunks.
            server: .http1(configuration: .init(
                additionalChannelHandlers: [ExpectContinueHandler(mayReadBody: uploadMayReadBody),
                                            WaitingConnectionHandler(connections: waiting)],
                idleTimeout: configuration.idleTimeout.map { .nanoseconds(Int64($0.components.seconds) * 1_000_000_000
                    + $0.components.attoseconds / 1_000_000_000) })),
            configuration: .init(address: .hostname(host, port: port), serverName: "crash-collector",
                                 availableConnectionsDelegate: configuration.maxConnections > 0
                                    ? SheddingMaximumConnections(configuration.maxConnections, waiting: waiting,
                                                                 logger: logger) : nil),
            services: services,
            onServerRunning: { channel in
                if let bound = channel.localAddress?.port { address.set(port: bound) }
                await onListening(address)
            },
            logger: logger)
    }

    static func makeRouter(store: any Store, configuration: CollectorConfiguration, address: ListeningAddress,
                           refusals: RefusedUploads?, held: HeldAnswers, logger: Logger) -> Router<CollectorRequestContext> {
        let router = Router(context: CollectorRequestContext.self)
        router.add(middleware: SecurityHeadersMiddleware())
        PayloadContract.check()   // the compiled-in schema read now, not at the first upload that needs it
        let ingest = Ingest(store: store, configuration: configuration, logger: logger)
        let read = ReadAPI(store: store, rule: configuration.alertRule)
        let dashboard = Dashboard(store: store, address: address, advertisedHost: configuration.advertisedHost,
                                  rule: configuration.alertRule)
        let auth = DashboardAuth(password: configuration.dashboardPassword,
                                 throttle: .logins(base: configuration.loginBackoff), held: held, logger: logger)
        let limiter = RateLimiter(rate: configuration.rateLimit, burst: configuration.rateBurst)
        let gate = configuration.uploadGate
            ?? UploadGate(overall: configuration.uploadsInFlight, perToken: configuration.uploadsInFlightPerToken)
        let work = UploadExecutor.shared
        let metrics = configuration.metrics
        let clock = configuration.clock
        configuration.symbolication?.report(to: metrics)
        /// An upload's handler: its answer (a failure is a 500) counted and timed for /metrics, and
        /// counted against its sender when it refuses the body (see RefusedUploads).
        @Sendable func upload(_ endpoint: CollectorMetrics.Endpoint, _ request: Request, _ context: CollectorRequestContext,
                              _ body: () async throws -> APIAnswer) async -> Response {
            let start = ContinuousClock.now
            let sender = RefusedUploads.key(authorization: request.headers[.authorization], address: context.clientAddress)
            let answer: APIAnswer
            if let refusals, let seconds = refusals.blocked(sender) {
                await held.holdBack(seconds: seconds)
                answer = .refusedTooOften(retryAfter: seconds)
            } else {
                answer = await CollectorServer.answer(logger, body)
                if let refusals, let block = refusals.answered(sender, status: answer.status) {
                    logger.warning("uploads: \(endpoint) from \(context.clientAddress) refused too often; that token from that address waits \(FailureThrottle.seconds(block)) s")
                }
            }
            metrics.uploadAnswered(endpoint, status: answer.status, limit: answer.limit, duration: .now - start)
            return json(answer)
        }
        /// A 429 when the request's token (checked before) has used its bucket; nil to go on.
        @Sendable func limited(_ request: Request) -> APIAnswer? {
            guard let limiter else { return nil }
            // Anonymous API logs (--anonymous-logs) share one bucket.
            let key = request.headers[.authorization] ?? ""
            guard case .limited(let seconds) = limiter.take(key) else { return nil }
            return .rateLimited(retryAfter: seconds)
        }

        router.get("/health") { _, _ in json(APIAnswer.json(200, ["status": "ok"])) }
        router.get("/openapi.json") { _, _ in json(APIAnswer(status: 200, body: Data(OpenAPI.document))) }
        router.get(RouterPath(OpenAPI.payloadSchemaPath)) { _, _ in
            Response(status: .ok, headers: [.contentType: "application/schema+json"],
                     body: .init(byteBuffer: ByteBuffer(bytes: OpenAPI.payloadSchema)))
        }
        // Prometheus' text format; a scraper sends the dashboard credentials (basic_auth).
        router.get("/metrics") { request, context in
            if let refusal = await auth.refusal(request, context, json: true) { return refusal }
            let text = metrics.exposition(uploadsInFlight: gate.inFlight,
                                          symbolicationQueue: configuration.symbolication?.unfinishedUploads)
            return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8", .cacheControl: "no-store"],
                            body: .init(byteBuffer: ByteBuffer(bytes: text)))
        }

        router.post("/api/v1/qa/diagnostics") { request, context in
            await upload(.diagnostics, request, context) {
                // The token is checked before the body is read: an unauthorised sender gets its
                // 401 without the server buffering 5 MB first.
                guard ingest.isAuthorized(request.headers[.authorization]) else { return .unauthorized }
                if let answer = limited(request) { return answer }
                let key = request.headers[.idempotencyKey]
                let answer = try await gate.admitting(request.headers[.authorization] ?? "") {
                    let body = try await collect(request, limit: configuration.maxBodyBytes)
                    return try await work.run {
                        try await ingest.diagnostics(
                            authorization: request.headers[.authorization], idempotencyKey: key,
                            contentEncoding: request.headers[.contentEncoding], body: body, now: clock())
                    }
                }
                // One line per upload: what an operator watching the collector wants to see.
                logger.info("diagnostics \(answer.status) key=\(key ?? "-") \(answer.status == 201 ? "" : String(decoding: answer.body.prefix(200), as: UTF8.self))")
                return answer
            }
        }

        router.post("/api/logs") { request, context in
            await upload(.logs, request, context) {
                guard ingest.mayPostLogs(authorization: request.headers[.authorization]) else { return .unauthorized }
                if let answer = limited(request) { return answer }
                return try await gate.admitting(request.headers[.authorization] ?? "") {
                    let body = try await collect(request, limit: configuration.maxBodyBytes)
                    return try await work.run {
                        try await ingest.apiLogs(authorization: request.headers[.authorization],
                                                 contentEncoding: request.headers[.contentEncoding], body: body, now: clock())
                    }
                }
            }
        }

        router.post("/api/v1/sessions") { request, context in
            await upload(.sessions, request, context) {
                guard ingest.isAuthorized(request.headers[.authorization]) else { return .unauthorized }
                if let answer = limited(request) { return answer }
                return try await gate.admitting(request.headers[.authorization] ?? "") {
                    let body = try await collect(request, limit: configuration.maxBodyBytes)
                    return try await work.run {
                        try await ingest.sessions(authorization: request.headers[.authorization],
                                                  contentEncoding: request.headers[.contentEncoding], body: body, now: clock())
                    }
                }
            }
        }

        // Read API: JSON for scripts and the dashboard's own use.
        router.get("/api/issues") { request, context in
            if let refusal = await auth.refusal(request, context, json: true) { return refusal }
            return await answering(logger) {
                let parameters = request.uri.queryParameters
                let query = IssueQuery(bundleID: parameters.get("bundle_id"), kind: parameters.get("kind"),
                                       limit: min(1000, max(1, parameters.get("limit", as: Int.self) ?? 100)),
                                       offset: min(1_000_000, max(0, parameters.get("offset", as: Int.self) ?? 0)))
                return try await read.issues(query, now: clock())
            }
        }
        router.get("/api/issues/{id}") { request, context in
            if let refusal = await auth.refusal(request, context, json: true) { return refusal }
            return await answering(logger) {
                guard let id = context.parameters.get("id", as: Int64.self) else {
                    return .error(404, "not_found", "No such issue")
                }
                let parameters = request.uri.queryParameters
                return try await read.issue(id: id, event: parameters.get("event").flatMap { Int64($0) },
                                            eventsBefore: parameters.get("events_before").flatMap { Int64($0) },
                                            events: min(500, max(1, parameters.get("events", as: Int.self) ?? 50)), now: clock())
                    ?? .error(404, "not_found", "No such issue")
            }
        }
        router.get("/api/logs") { request, context in
            if let refusal = await auth.refusal(request, context, json: true) { return refusal }
            return await answering(logger) {
                let limit = min(1000, max(1, request.uri.queryParameters.get("limit", as: Int.self) ?? 100))
                return try await read.logs(limit: limit, appID: request.uri.queryParameters.get("app_id"),
                                           before: request.uri.queryParameters.get("before").flatMap { Int64($0) })
            }
        }
        router.get("/api/crash-free") { request, context in
            if let refusal = await auth.refusal(request, context, json: true) { return refusal }
            return await answering(logger) {
                try await read.crashFree(days: min(365, max(1, request.uri.queryParameters.get("days", as: Int.self) ?? 30)), now: clock())
            }
        }
        router.get("/api/top-crashes") { request, context in
            if let refusal = await auth.refusal(request, context, json: true) { return refusal }
            return await answering(logger) {
                let query = request.uri.queryParameters
                let limit = min(100, max(1, query.get("limit", as: Int.self) ?? 10))
                return .json(200, try await read.topCrashes(limit: limit, kind: query.get("kind"), now: clock()))
            }
        }
        router.get("/api/alerts") { request, context in
            if let refusal = await auth.refusal(request, context, json: true) { return refusal }
            return await answering(logger) { .json(200, try await read.alerts(now: clock())) }
        }
        router.get("/api/connect-link") { request, context in
            if let refusal = await auth.refusal(request, context, json: true) { return refusal }
            let appID = request.uri.queryParameters.get("app_id") ?? ""
            return json(dashboard.connectLink(appID: appID))
        }

        // The Connect App modal's QR code (seed 002): SVG drawn with libqrencode.
        router.get("/connect/qr.svg") { request, context in
            if let refusal = await auth.refusal(request, context, json: true) { return refusal }
            let query = request.uri.queryParameters
            switch dashboard.connectQR(appID: query.get("app_id"), host: query.get("host"), port: query.get("port")) {
            case .svg(let svg):
                // The same query always draws the same code.
                return Response(status: .ok, headers: [.contentType: "image/svg+xml", .cacheControl: "private, max-age=3600"],
                                body: .init(byteBuffer: ByteBuffer(string: svg)))
            case .invalid(let answer):
                return json(answer)
            }
        }

        // Dashboard pages.
        router.get("/") { request, context in
            if let refusal = await auth.refusal(request, context, json: false) { return refusal }
            return await page(logger) { try await dashboard.issuesPage(now: clock()) }
        }
        router.get("/issues/{id}") { request, context in
            if let refusal = await auth.refusal(request, context, json: false) { return refusal }
            return await page(logger) {
                guard let id = context.parameters.get("id", as: Int64.self) else { return nil }
                let parameters = request.uri.queryParameters
                return try await dashboard.issuePage(id: id, event: parameters.get("event").flatMap { Int64($0) },
                                                     eventsBefore: parameters.get("events_before").flatMap { Int64($0) },
                                                     now: clock())
            }
        }
        router.get("/logs") { request, context in
            if let refusal = await auth.refusal(request, context, json: false) { return refusal }
            return await page(logger) {
                try await dashboard.logsPage(limit: 200, before: request.uri.queryParameters.get("before").flatMap { Int64($0) })
            }
        }
        return router
    }

    /// The body, or .tooLarge as soon as more than `limit` bytes arrived (or are announced).
    /// What is left unread is drained by Hummingbird after the answer.
    static func collect(_ request: Request, limit: Int) async throws -> ReceivedBody {
        if let length = request.headers[.contentLength].flatMap(Int.init), length > limit { return .tooLarge }
        var bytes: [UInt8] = []
        for try await chunk in request.body {
            if bytes.count + chunk.readableBytes > limit { return .tooLarge }
            bytes.append(contentsOf: chunk.readableBytesView)
        }
        return .complete(bytes)
    }

    /// Runs a handler; a failure (the database, usually) is a 500 the runtime retries later.
    static func answering(_ logger: Logger, _ body: () async throws -> APIAnswer) async -> Response {
        json(await answer(logger, body))
    }

    static func answer(_ logger: Logger, _ body: () async throws -> APIAnswer) async -> APIAnswer {
        do {
            return try await body()
        } catch {
            logger.error("request failed: \(error)")
            return .error(500, "internal_error", "Internal Server Error")
        }
    }

    static func page(_ logger: Logger, _ body: () async throws -> String?) async -> Response {
        do {
            guard let html = try await body() else { return htmlResponse(404, Dashboard.notFound()) }
            return htmlResponse(200, html)
        } catch {
            logger.error("page failed: \(error)")
            return htmlResponse(500, Dashboard.errorPage("\(error)"))
        }
    }

    static func json(_ answer: APIAnswer) -> Response {
        var headers: HTTPFields = [.contentType: "application/json"]
        if let seconds = answer.retryAfter { headers[.retryAfter] = String(seconds) }
        return Response(status: .init(code: answer.status), headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: answer.body)))
    }

    static func htmlResponse(_ status: Int, _ html: String) -> Response {
        Response(status: .init(code: status),
                 headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-store"],
                 body: .init(byteBuffer: ByteBuffer(string: html)))
    }
}

extension HTTPField.Name {
    static let idempotencyKey = Self("Idempotency-Key")!
}

extension APIAnswer {
    static func loginThrottled(retryAfter: Int) -> APIAnswer {
        var answer = APIAnswer.json(429, RateLimitedBody(
            error: "too_many_attempts", message: "Too many wrong passwords from this address; retry after \(retryAfter) s",
            retry_after: retryAfter))
        answer.retryAfter = retryAfter
        return answer
    }
}

/// HTTP basic auth with the dashboard password (any user name): browsers ask for it themselves,
/// scripts send `curl -u :PASSWORD`.
struct DashboardAuth: Sendable {
    let password: String
    let throttle: FailureThrottle
    let held: HeldAnswers
    let logger: Logger

    /// nil when the request may go on; else the 401 challenge, or a 429 for an address that failed
    /// too often (checked before the password, so a blocked address learns nothing from a guess;
    /// held back a moment, so a guesser that never waits does not come straight back).
    func refusal(_ request: Request, _ context: CollectorRequestContext, json: Bool) async -> Response? {
        let address = context.clientAddress
        if case .blocked(let seconds) = throttle.check(address) {
            await held.holdBack(seconds: seconds)
            return CollectorServer.json(.loginThrottled(retryAfter: seconds))
        }
        if allows(request) {
            throttle.succeeded(address)
            return nil
        }
        // A request without credentials is a browser's first visit, not a guess.
        if request.headers[.authorization] != nil, let block = throttle.failed(address) {
            logger.warning("dashboard: wrong password from \(address); blocked for \(FailureThrottle.seconds(block)) s")
        } else if request.headers[.authorization] != nil {
            logger.notice("dashboard: wrong password from \(address)")
        }
        return challenge(json: json)
    }

    func allows(_ request: Request) -> Bool {
        guard let header = request.headers[.authorization], header.lowercased().hasPrefix("basic "),
              let decoded = Data(base64Encoded: String(header.dropFirst(6)).trimmingCharacters(in: .whitespaces)),
              let text = String(data: decoded, encoding: .utf8), let colon = text.firstIndex(of: ":") else { return false }
        return constantTimeEqual(Array(text[text.index(after: colon)...].utf8), Array(password.utf8))
    }

    func challenge(json: Bool) -> Response {
        var headers: HTTPFields = [.wwwAuthenticate: "Basic realm=\"crash-collector\", charset=\"UTF-8\""]
        if json {
            headers[.contentType] = "application/json"
            let body = #"{"error":"unauthorized","message":"Dashboard credentials required"}"#
            return Response(status: .unauthorized, headers: headers, body: .init(byteBuffer: ByteBuffer(string: body)))
        }
        headers[.contentType] = "text/html; charset=utf-8"
        return Response(status: .unauthorized, headers: headers,
                        body: .init(byteBuffer: ByteBuffer(string: Dashboard.unauthorized())))
    }
}
