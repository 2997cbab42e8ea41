// CrashDemo: a small "order service" that links CrashReporting. Run it and it crashes on a nil it
// did not expect; run it again and it finds the record its previous run left, shows it, and
// delivers the report (symbolicated, redacted) to the collector named by CRASH_REPORTING_ENDPOINT.
// Usage: CrashDemo <reports-directory> [checkout | pagination | refund-error]
//   checkout      crashes on a force-unwrapped nil (the default when nothing is pending)
//   pagination    crashes on an index out of range, in another function: another issue
//   refund-error  records a non-fatal error and sends it before exiting
// With no mode and a record pending, it delivers what the previous run left.
import CrashReportModel
import CrashReporting
import Foundation

struct Order {
    var id: Int
    var coupon: String?
}

@inline(never) func discount(for order: Order) -> Int {
    order.coupon!.count * 5   // the bug: orders without a coupon
}

@inline(never) func price(_ order: Order) -> Int {
    100 - discount(for: order)
}

@inline(never) func process(_ orders: [Order]) -> Int {
    orders.reduce(0) { $0 + price($1) }
}

@inline(never) func pageItems(_ orders: [Order], page: Int, perPage: Int) -> [Int] {
    (0..<perPage).map { orders[page * perPage + $0].id }   // the bug: the last page is short
}

struct RefundError: Error, CustomStringConvertible {
    var orderID: Int
    var description: String { "refund of order \(orderID) declined by the payment provider" }
}

let directory = CommandLine.arguments.count > 1 ? CommandLine.arguments[1] : "/tmp/crash-demo"
let mode = CommandLine.arguments.count > 2 ? CommandLine.arguments[2] : nil
let pending = URL(fileURLWithPath: directory).appendingPathComponent("pending")
let records = ((try? FileManager.default.contentsOfDirectory(at: pending, includingPropertiesForKeys: nil)) ?? [])
    .filter { $0.pathExtension == "crash" }

// The record as the handler wrote it, read before `start`: the relaunch uploads it and deletes it.
let previous = records.compactMap { try? CrashRecord(contentsOf: $0) }

// Endpoint and token come from CRASH_REPORTING_ENDPOINT and CRASH_REPORTING_TOKEN.
try CrashReporter.start(.init(appID: "com.example.crash-demo", reportsDirectory: directory, appVersion: "1.0.0",
                              buildNumber: "7", environment: "staging"))

let orders = [Order(id: 1, coupon: "SPRING"), Order(id: 2, coupon: nil), Order(id: 3, coupon: "AUTUMN")]
if mode != nil || previous.isEmpty {
    CrashReporter.setUserID("customer-1842@example.com")   // an email: redacted before upload
    CrashReporter.setCustomValue("eu-west-1", forKey: "region")
    CrashReporter.setCustomValue(orders.count, forKey: "orders_in_batch")
    CrashReporter.log("loaded \(orders.count) orders from the queue for 203.0.113.7", level: .info, tag: "queue")
    switch mode ?? "checkout" {
    case "pagination":
        CrashReporter.logScreenView("orders")
        CrashReporter.logAction("show_page", parameters: ["page": "1"])
        print("CrashDemo: listing page 2 of the orders, 2 per page (there are 3)...")
        fflush(nil)   // out before the crash
        print("page:", pageItems(orders, page: 1, perPage: 2))
    case "refund-error":
        CrashReporter.logScreenView("refunds")
        print("CrashDemo: refunding order 3; the provider declines, recorded as a non-fatal error")
        _ = try CrashReporter.record(error: RefundError(orderID: 3))
        _ = CrashReporter.shutdown(timeout: .seconds(20))
        print("CrashDemo: delivered \(CrashReporter.uploadStatus.delivered) report(s)")
    default:
        CrashReporter.logScreenView("checkout")
        CrashReporter.logAction("apply_discounts", parameters: ["batch": "7"])
        print("CrashDemo: processing orders (the second one has no coupon)...")
        fflush(nil)   // out before the crash
        print("total:", process(orders))
    }
} else {
    for record in previous {
        print("CrashDemo relaunched: found the crash record of the previous run: \(record.id)")
        print("  signal:   \(record.signal.map { "\($0.name) (\($0.codeName)) at \($0.faultAddress)" } ?? "?")")
        print("  thread:   \(record.thread.map { "\($0.id) \"\($0.name)\"\($0.isMain ? " (main)" : "")" } ?? "?")")
        print("  message:  \(record.fatalMessage?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "(none: an -O trap)")")
        print("  stack:    \(record.frames.count) frames of \(record.stack?.depth ?? 0), unwound by \(record.stack?.unwinder ?? "?")")
        for frame in record.frames {
            let module = record.module(containing: frame.lookupAddress)
            let name = module.map { fileName(of: $0.path) } ?? "?"
            let offset = module.map { String(frame.address.value - $0.bias.value, radix: 16) } ?? "?"
            print("    #\(frame.index) \(name) + 0x\(offset)")
        }
        print("  modules:  \(record.modules.count), e.g. \(record.modules[0].path) build-id \(record.modules[0].buildID)")
        print("  durable:  \((record.durableNanoseconds ?? 0) / 1000) us after the signal")
    }
    // The previous run crashed within seconds of starting, so `start` already tried to upload
    // (crash-on-launch); this waits for the rest of the launch's pass.
    CrashReporter.waitForBackgroundWork(timeout: .seconds(20))
    let status = CrashReporter.uploadStatus
    print("CrashDemo: delivered \(status.delivered) report(s) to \(CrashReporter.resolvedEndpoint?.url.absoluteString ?? "-")"
          + (status.lastFailure.map { " (last failure: \($0))" } ?? "") + "; \(CrashReporter.checkForUnsentReports()) left to send")
}
