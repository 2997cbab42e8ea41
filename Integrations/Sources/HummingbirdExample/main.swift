// A small Hummingbird 2 service with crash reporting, as an app would set it up; the integration
// tests drive it over loopback. Usage: HummingbirdExample <reports-directory> <port-file>
// (the port it listens on, 127.0.0.1, is written to <port-file>). Reports go to
// CRASH_REPORTING_ENDPOINT with CRASH_REPORTING_TOKEN.
//   GET /hello            200
//   GET /users/{id}       200, the profile; /users/0 crashes (a force-unwrapped nil in loadProfile(id:))
//   GET /comments/{id}/thread  200, the reply count; /comments/0/thread recurses without end in
//                         countReplies(of:) (a reply cycle): a stack overflow
//   GET /orders/{id}      throws: a 500 and a non-fatal report
//   GET /missing          throws a 404 (not reported)
//   GET /slow             answers after 30 s (a request in flight while another crashes)
//   GET /inflight         how many requests are in flight (itself included)
//   GET /block-event-loop?ms=N  blocks an event loop's thread N ms in Blocking.blockEventLoop(ms:) (a hang)
// EXAMPLE_HANGS_MS=N turns hang detection on with that threshold, watching the event loops.
// tools/bench-start: EXAMPLE_PRINT_START=1 prints "start-ns N" (CrashReporter.start's duration) to
// standard error; EXAMPLE_WITHOUT_REPORTER=1 starts no crash reporting at all (its baseline).
import CrashReporting
import CrashReportingHummingbird
import CrashReportingServerCore
import CrashReportingServiceLifecycle
import Foundation
import Hummingbird
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle

struct Profile {
    var id: Int
    var nickname: String?
}

struct OrderStoreUnavailable: Error, CustomStringConvertible {
    var description: String { "the order store did not answer" }
}

/// The bug: comment 0 is its own parent, so the walk up never ends.
@inline(never) func countReplies(of id: Int) -> Int {
    var chain = [id, id &* 31]   // a frame that needs its stack
    let parent = id == 0 ? 0 : id - 1
    if id == 1 { return chain.count }
    chain[1] = countReplies(of: parent)
    return chain[0] &+ chain[1]
}

@inline(never) func loadProfile(id: Int) -> String {
    let profile = Profile(id: id, nickname: id == 0 ? nil : "user\(id)")
    return profile.nickname!   // the bug: profile 0 has no nickname
}

let arguments = CommandLine.arguments
guard arguments.count == 3 else {
    FileHandle.standardError.write(Data("usage: HummingbirdExample <reports-directory> <port-file>\n".utf8))
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
var configuration = CrashReporter.Configuration(appID: "com.example.hummingbird-example", reportsDirectory: arguments[1],
                                                appVersion: "1.0.0", environment: "test")
if let threshold = ProcessInfo.processInfo.environment["EXAMPLE_HANGS_MS"].flatMap(Int.init) {
    configuration.hangs = .init(threshold: .milliseconds(threshold), watchesCooperativePool: true)
}
let withoutReporter = ProcessInfo.processInfo.environment["EXAMPLE_WITHOUT_REPORTER"] != nil
if !withoutReporter {
    let started = ContinuousClock.now
    try CrashReporter.start(configuration)
    let took = (ContinuousClock.now - started).components
    if ProcessInfo.processInfo.environment["EXAMPLE_PRINT_START"] != nil {
        FileHandle.standardError.write(Data("start-ns \(took.seconds * 1_000_000_000 + took.attoseconds / 1_000_000_000)\n".utf8))
    }
    CrashReporter.watchEventLoops(MultiThreadedEventLoopGroup.singleton)   // Hummingbird's default group; nothing when hangs are off
}

let router = Router()
// Before the routes. (tools/bench-middleware: without it when EXAMPLE_WITHOUT_MIDDLEWARE is set,
// its baseline; a middleware that only calls the next one instead when EXAMPLE_EMPTY_MIDDLEWARE is
// set, the cost of any middleware.)
if ProcessInfo.processInfo.environment["EXAMPLE_EMPTY_MIDDLEWARE"] != nil {
    router.middlewares.add(PassThroughMiddleware())
} else if ProcessInfo.processInfo.environment["EXAMPLE_WITHOUT_MIDDLEWARE"] == nil && !withoutReporter {
    router.middlewares.add(CrashReportingMiddleware())
}
router.get("/hello") { _, _ in "hello" }
router.get("/users/{id}") { _, context in
    loadProfile(id: try context.parameters.require("id", as: Int.self))
}
router.get("/comments/{id}/thread") { _, context in
    String(countReplies(of: try context.parameters.require("id", as: Int.self)))
}
router.get("/orders/{id}") { _, _ -> String in throw OrderStoreUnavailable() }
router.get("/missing") { _, _ -> String in throw HTTPError(.notFound) }
router.get("/slow") { _, _ -> String in
    try await Task.sleep(for: .seconds(30))   // in flight until the test crashes the server, however slow the machine
    return "slow"
}
router.get("/inflight") { _, _ in String(CrashReporter.requestsInFlight) }
router.get("/request-id") { _, context in context.id }   // the id Hummingbird's own log lines carry
router.get("/block-event-loop") { request, _ -> String in
    let ms = request.uri.queryParameters.get("ms", as: Int.self) ?? 1000
    try await MultiThreadedEventLoopGroup.singleton.next().submit { Blocking.blockEventLoop(ms: ms) }.get()
    return "unblocked"
}

var logger = Logger(label: "example")
logger.logLevel = .warning
let app = Application(
    router: router,
    configuration: .init(address: .hostname("127.0.0.1", port: 0)),
    onServerRunning: { channel in
        let port = channel.localAddress?.port ?? 0
        // What a server logs as it starts: a loopback address is kept, and is no reason to refuse a report.
        if !withoutReporter { CrashReporter.log("listening on 127.0.0.1:\(port)", level: .info, tag: "server") }
        try? "\(port)\n".write(toFile: portFile, atomically: true, encoding: .utf8)
    },
    logger: logger
)
// Crash reporting first: the group stops services in reverse order, so it flushes last.
let services: [any Service] = withoutReporter ? [app] : [CrashReportingService(), app]
let group = ServiceGroup(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
try await group.run()

/// tools/bench-middleware's yardstick: a middleware that does nothing but call the next.
struct PassThroughMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        try await next(request, context)
    }
}
