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

/// Failed dashboard logins per client address, with exponential backoff.
final class LoginThrottle: Sendable {
    enum Decision: Equatable {
        case allowed
        case blocked(retryAfter: Int)
    }

    static let freeFailures = 5
    let base: Duration
    let maximum: Duration
    private let clock: @Sendable () -> Duration
    private let state = Mutex<[String: Entry]>([:])

    private struct Entry {
        var failures: Int
        var blockedUntil: Duration
    }

    init(base: Duration = .seconds(1), maximum: Duration = .seconds(900), clock: (@Sendable () -> Duration)? = nil) {
        self.base = base
        self.maximum = maximum
        if let clock {
            self.clock = clock
        } else {
            let start = ContinuousClock.now
            self.clock = { start.duration(to: .now) }
        }
    }

    /// Whether `address` may try a password now.
    func check(_ address: String) -> Decision {
        let now = clock()
        return state.withLock { entries in
            guard let entry = entries[address], entry.blockedUntil > now else { return .allowed }
            return .blocked(retryAfter: Self.seconds(entry.blockedUntil - now))
        }
    }

    /// Counts a wrong password; the block it starts (nil while the free failures last).
    @discardableResult
    func failed(_ address: String) -> Duration? {
        let now = clock()
        return state.withLock { entries in
            // A table of addresses an attacker fills: old, unblocked entries go first.
            if entries.count > 10_000 { entries = entries.filter { $0.value.blockedUntil > now } }
            var entry = entries[address] ?? Entry(failures: 0, blockedUntil: .zero)
            entry.failures += 1
            defer { entries[address] = entry }
            guard entry.failures >= Self.freeFailures else { return nil }
            let doublings = min(entry.failures - Self.freeFailures, 30)
            let block = min(maximum, base * (1 << doublings))
            entry.blockedUntil = now + block
            return block
        }
    }

    func succeeded(_ address: String) {
        _ = state.withLock { $0.removeValue(forKey: address) }
    }

    static func seconds(_ duration: Duration) -> Int {
        max(1, Int((Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18).rounded(.up)))
    }
}
