// What every answer carries and who may try the dashboard password. Security headers go on every
// response (pages, JSON, errors, 404s): no framing (clickjacking), no MIME sniffing, no referrer
// leaking issue URLs, and JSON never cached. Failed logins are counted per client address: after
// five in a row, that address gets 429 with Retry-After for 1 s, doubling with each further failure
// (at most 15 minutes); a success clears it. Behind a reverse proxy every client is the proxy's
// address: the throttle is then one for all (see README, "Running it on the internet").
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Synchronization

/// The request context: Hummingbird's basic one and the client's address, for the login throttle.
public struct CollectorRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The peer's IP address ("127.0.0.1"), or "unknown".
    public let clientAddress: String

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        clientAddress = source.channel.remoteAddress?.ipAddress ?? "unknown"
    }
}

struct SecurityHeadersMiddleware<Context: RequestContext>: RouterMiddleware {
    /// Scripts: the dashboard's one inline script by its hash, nothing injected runs. Styles are
    /// inline (one <style> block), hence 'unsafe-inline' for them only.
    /// Everything else is this origin only, and no page may be framed.
    static var contentSecurityPolicy: String {
        "default-src 'self'; script-src 'self' \(Dashboard.connectScriptHash); style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
            + "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response: Response
        do {
            response = try await next(request, context)
        } catch let error as any HTTPResponseError {
            // Hummingbird's own answers (404 for an unknown path…) get the headers too.
            response = try error.response(from: request, context: context)
        }
        response.headers[.contentSecurityPolicy] = Self.contentSecurityPolicy
        response.headers[.xContentTypeOptions] = "nosniff"
        response.headers[.referrerPolicy] = "no-referrer"
        response.headers[.xFrameOptions] = "DENY"
        if response.headers[.cacheControl] == nil, response.headers[.contentType]?.hasPrefix("application/json") ?? true {
            response.headers[.cacheControl] = "no-store"
        }
        return response
    }
}

extension HTTPField.Name {
    static let xFrameOptions = Self("X-Frame-Options")!
    static let referrerPolicy = Self("Referrer-Policy")!
}

/// Failures per key (a client address for dashboard logins; a token and address for refused
/// uploads), with exponential backoff: after `freeFailures` of them the key is blocked for `base`,
/// doubling with each further failure up to `maximum`. A success clears the key; with `forgetAfter`,
/// so does a quiet spell that long since its last failure.
final class FailureThrottle: Sendable {
    enum Decision: Equatable {
        case allowed
        case blocked(retryAfter: Int)
    }

    let freeFailures: Int
    let base: Duration
    let maximum: Duration
    let forgetAfter: Duration?
    private let clock: @Sendable () -> Duration
    private let state = Mutex<[String: Entry]>([:])

    private struct Entry {
        var failures: Int
        var blockedUntil: Duration
        var lastFailure: Duration
    }

    /// Dashboard logins: five wrong passwords free, then 1 s doubling to 15 minutes.
    static func logins(base: Duration = .seconds(1)) -> FailureThrottle {
        FailureThrottle(freeFailures: 5, base: base, maximum: .seconds(900))
    }

    init(freeFailures: Int = 5, base: Duration = .seconds(1), maximum: Duration = .seconds(900),
         forgetAfter: Duration? = nil, clock: (@Sendable () -> Duration)? = nil) {
        self.freeFailures = max(1, freeFailures)
        self.base = base
        self.maximum = maximum
        self.forgetAfter = forgetAfter
        if let clock {
            self.clock = clock
        } else {
            let start = ContinuousClock.now
            self.clock = { start.duration(to: .now) }
        }
    }

    /// Whether `key` may go on now.
    func check(_ key: String) -> Decision {
        let now = clock()
        return state.withLock { entries in
            guard let entry = entries[key], entry.blockedUntil > now else { return .allowed }
            return .blocked(retryAfter: Self.seconds(entry.blockedUntil - now))
        }
    }

    /// Counts a failure; the block it starts (nil while the free failures last).
    @discardableResult
    func failed(_ key: String) -> Duration? {
        let now = clock()
        return state.withLock { entries in
            // A table of keys an attacker fills: old, unblocked entries go first.
            if entries.count > 10_000 { entries = entries.filter { $0.value.blockedUntil > now } }
            var entry = entries[key] ?? Entry(failures: 0, blockedUntil: .zero, lastFailure: now)
            if let forgetAfter, now - entry.lastFailure >= forgetAfter, entry.blockedUntil <= now { entry.failures = 0 }
            entry.failures += 1
            entry.lastFailure = now
            defer { entries[key] = entry }
            guard entry.failures >= freeFailures else { return nil }
            let doublings = min(entry.failures - freeFailures, 30)
            let block = min(maximum, base * (1 << doublings))
            entry.blockedUntil = now + block
            return block
        }
    }

    func succeeded(_ key: String) {
        _ = state.withLock { $0.removeValue(forKey: key) }
    }

    static func seconds(_ duration: Duration) -> Int {
        max(1, Int((Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18).rounded(.up)))
    }
}
