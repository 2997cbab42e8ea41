// A small Vapor 4 service with crash reporting, as an app would set it up; the integration tests
// drive it over loopback. Usage: VaporExample <reports-directory> <port-file> (the port it listens
// on, 127.0.0.1, is written to <port-file>). Reports go to CRASH_REPORTING_ENDPOINT with
// CRASH_REPORTING_TOKEN. The same routes as HummingbirdExample, in Vapor's notation:
//   GET /hello            200
//   GET /users/:id        200, the profile; /users/0 crashes (a force-unwrapped nil in loadProfile(id:))
//   GET /orders/:id       throws: a 500 and a non-fatal report
//   GET /missing          throws a 404 (not reported); a URL no route matches is a 404 too
//   GET /slow             answers after 30 s (a request in flight while another crashes)
//   GET /inflight         how many requests are in flight (itself included)
//   GET /block-event-loop?ms=N  blocks an event loop's thread N ms in Blocking.blockEventLoop(ms:) (a hang)
// EXAMPLE_HANGS_MS=N: hang detection with an N ms threshold (otherwise the build's default), each
// of Vapor's event loops watched.
import CrashReporting
import CrashReportingVapor
import Foundation
import Logging
import Vapor

struct Profile {
    var id: Int
    var nickname: String?
}

struct OrderStoreUnavailable: Error, CustomStringConvertible {
    var description: String { "the order store did not answer" }
}

@inline(never) func loadProfile(id: Int) -> String {
    let profile = Profile(id: id, nickname: id == 0 ? nil : "user\(id)")
    return profile.nickname!   // the bug: profile 0 has no nickname
}

let arguments = CommandLine.arguments
guard arguments.count == 3 else {
    FileHandle.standardError.write(Data("usage: VaporExample <reports-directory> <port-file>\n".utf8))
    exit(2)
}
let portFile = arguments[2]

enum Blocking {
    /// The bug a hang report must point at: synchronous waiting on an event loop's thread.
    @inline(never) static func blockEventLoop(ms: Int) {
        let deadline = ContinuousClock.now + .milliseconds(ms)
        while ContinuousClock.now < deadline { usleep(10_000) }
    }
}

// First thing: a crash while the server starts is recorded too.
var configuration = CrashReporter.Configuration(appID: "com.example.vapor-example", reportsDirectory: arguments[1],
                                                appVersion: "1.0.0", environment: "test")
if let threshold = ProcessInfo.processInfo.environment["EXAMPLE_HANGS_MS"].flatMap(Int.init) {
    configuration.hangs = .init(threshold: .milliseconds(threshold))
}
try CrashReporter.start(configuration)

var environment = Environment(name: "testing", arguments: [arguments[0]])
let app = try await Application.make(environment)
app.logger.logLevel = .warning
app.http.server.configuration.hostname = "127.0.0.1"
app.http.server.configuration.port = 0
CrashReporter.watchEventLoops(app.eventLoopGroup)   // nothing when hangs are off

// Global middleware: Vapor routes a request before it runs the global middleware, so the route
// pattern is known, and a URL no route matches is seen too ("(no route)", 404). (tools/bench-middleware:
// without it when EXAMPLE_WITHOUT_MIDDLEWARE is set, its baseline; a middleware that only calls
// the next one instead when EXAMPLE_EMPTY_MIDDLEWARE is set, the cost of any middleware.)
if ProcessInfo.processInfo.environment["EXAMPLE_EMPTY_MIDDLEWARE"] != nil {
    app.middleware.use(PassThroughMiddleware())
} else if ProcessInfo.processInfo.environment["EXAMPLE_WITHOUT_MIDDLEWARE"] == nil {
    app.middleware.use(CrashReportingMiddleware())
}
let routes: any RoutesBuilder = app
routes.get("hello") { _ in "hello" }
routes.get("users", ":id") { request -> String in
    loadProfile(id: try request.parameters.require("id", as: Int.self))
}
routes.get("orders", ":id") { _ -> String in throw OrderStoreUnavailable() }
routes.get("missing") { _ -> String in throw Abort(.notFound) }
routes.get("slow") { _ async throws -> String in
    try await Task.sleep(for: .seconds(30))   // in flight until the test crashes the server, however slow the machine
    return "slow"
}
routes.get("inflight") { _ in String(CrashReporter.requestsInFlight) }
routes.get("block-event-loop") { request -> String in
    let ms = request.query[Int.self, at: "ms"] ?? 1000
    Blocking.blockEventLoop(ms: ms)   // a synchronous handler runs on the request's event loop
    return "blocked \(ms) ms"
}

// SIGTERM: a graceful shutdown that sends what is pending and ends the session. Handled before
// the port is published, so that a SIGTERM right after it is never the default action.
signal(SIGTERM, SIG_IGN)
let stop = DispatchSource.makeSignalSource(signal: SIGTERM, queue: .global())
let stopped = AsyncStream<Void> { continuation in
    stop.setEventHandler { continuation.finish() }
    stop.resume()
}
/// Serves until SIGTERM (a function: in top-level code Vapor's noasync start/shutdown overloads win).
func serve(_ server: HTTPServer) async throws {
    try await server.start(address: nil)
    let port = server.localAddress?.port ?? 0
    try "\(port)\n".write(toFile: portFile, atomically: true, encoding: .utf8)
    for await _ in stopped {}
    await server.shutdown()
    try await app.asyncShutdown()
    _ = CrashReporter.shutdown()
}
try await serve(app.http.server.shared)

/// tools/bench-middleware's yardstick: a middleware that does nothing but call the next.
struct PassThroughMiddleware: Middleware {
    func respond(to request: Request, chainingTo next: any Responder) -> EventLoopFuture<Response> {
        next.respond(to: request)
    }
}
