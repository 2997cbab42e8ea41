// `request-breadcrumb-order`: the server middlewares' request breadcrumbs (a screen view as a
// request begins, the http one as it ends, ordered by the counter they read and their clock reads,
// Decision 0058) among ordinary ones, on two fresh threads that take turns, each turn handed over
// through a semaphore (a happens-before edge, as a request handed from one event loop to another).
// In a process of its own, so that the two threads get rings of their own: in a shared ring the
// slots' order alone would list them right. Prints each breadcrumb of the run as
// "ring<TAB>tag<TAB>message", in the session's merged order, then exits 0.
@_spi(ServerIntegrations) import CrashReporting
import Foundation

/// Step i runs on thread `owners[i]` once step i - 1 signalled it.
private final class Turns: @unchecked Sendable {
    static let owners = [0, 1, 0, 1, 1, 0, 1, 0, 1, 0, 1]
    let turns = owners.map { _ in DispatchSemaphore(value: 0) }
    let done = DispatchSemaphore(value: 0)
    let lock = NSLock()
    var tokens: [Int: (token: CrashReporter.RequestToken, route: String)] = [:]   // each thread its own key

    func run(_ me: Int) {
        for (index, owner) in Self.owners.enumerated() where owner == me {
            turns[index].wait()
            switch index {
            case 0, 4, 7, 8:   // a request begins, its route as the screen view
                let route = "/order/\(index)"
                let token = Array("id".utf8).withUnsafeBufferPointer {
                    CrashReporter.beginRequest(method: "GET", route: route, requestIDUTF8: $0, traceID: "", routeAsScreenView: true)
                }
                lock.withLock { tokens[me] = (token, route) }
            case 2, 6, 9, 10:   // it ends
                let (token, route) = lock.withLock { tokens[me]! }
                CrashReporter.endRequest(token)
                let fromStack = Array("id".utf8).withUnsafeBufferPointer {
                    CrashReporter.logHTTPRequest(method: "GET", route: route, status: 200, durationTenthsOfMillisecond: 0,
                                                 requestIDUTF8: $0, startedNanoseconds: token.startedNanoseconds)
                }
                if !fromStack { CrashReporter.log("/order http breadcrumb \(index) not from the stack buffer") }
            default:
                CrashReporter.log("/order ordinary \(index)")
            }
            if index + 1 < turns.count { turns[index + 1].signal() } else { done.signal() }
        }
    }
}

func runRequestBreadcrumbOrder(reportsDirectory: String) -> Never {
    try! CrashReporter.start(fixtureConfiguration(reportsDirectory))
    let turns = Turns()
    for me in 0..<2 { Thread { turns.run(me) }.start() }
    turns.turns[0].signal()
    turns.done.wait()
    for crumb in CrashReporter.contextSnapshot()?.breadcrumbs ?? [] where crumb.message.contains("/order") {
        print("\(crumb.ring ?? -1)\t\(crumb.tag)\t\(crumb.message)")
    }
    fflush(nil)
    exit(0)
}
