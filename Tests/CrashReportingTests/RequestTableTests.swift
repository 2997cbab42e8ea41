// The table of requests in flight (CrashReporter.beginRequest / endRequest, ccr_requests.c): 128
// slots, each claimed by one request at a time. A thread starts looking where it freed a slot last
// (or after its last claim), so these tests check what that must not change: every slot can be
// taken, from any thread; a full table drops the request; no two requests in flight share a slot.
@testable import CrashReporting
import Foundation
import Synchronization
import Testing

/// A value shared between threads under an NSLock (not Synchronization.Mutex: ThreadSanitizer on
/// Linux sees no order in Mutex, and reports accesses inside withLock as races).
private final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func withLock<R>(_ body: (inout Value) -> R) -> R {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}

// Serialized: both tests fill or churn the whole process-wide table (no other test of this target
// begins requests in-process).
@Suite("Requests in flight: the slot table", .serialized)
struct RequestTableTests {
    @Test("128 requests take 128 slots and the next is dropped; a freed slot is taken again, from another thread too")
    func everySlotThenDropped() throws {
        #expect(CrashReporter.requestsInFlight == 0)
        let tokens = (0..<128).map { CrashReporter.beginRequest(method: "GET", route: "/table/\($0)") }
        #expect(tokens.filter { !$0.isRecorded }.isEmpty)
        let slots = Set(tokens.map { $0.slot })
        #expect(slots.count == 128, "128 requests share \(slots.count) slots")
        #expect(CrashReporter.requestsInFlight == 128)
        let extra = CrashReporter.beginRequest(method: "GET", route: "/table/full")
        #expect(!extra.isRecorded)
        CrashReporter.endRequest(extra)   // a token of 0: ignored
        #expect(CrashReporter.requestsInFlight == 128)

        // One slot freed here, claimed on a thread that never claimed one (it starts elsewhere).
        CrashReporter.endRequest(tokens[37])
        let claimed = Locked<CrashReporter.RequestToken?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread {
            let token = CrashReporter.beginRequest(method: "GET", route: "/table/other-thread")
            claimed.withLock { $0 = token }
            done.signal()
        }.start()
        done.wait()
        let other = try #require(claimed.withLock { $0 })
        #expect(other.isRecorded && other.slot == tokens[37].slot)
        // And freed there, taken again here: this thread's hint points elsewhere by now.
        CrashReporter.endRequest(other)
        let again = CrashReporter.beginRequest(method: "GET", route: "/table/again")
        #expect(again.isRecorded && again.slot == tokens[37].slot)
        CrashReporter.endRequest(again)
        for (index, token) in tokens.enumerated() where index != 37 { CrashReporter.endRequest(token) }
        #expect(CrashReporter.requestsInFlight == 0)
    }

    @Test("four threads beginning and ending requests never hold one slot at once")
    func noSharedSlot() {
        let held = Locked<Set<Int32>>([])
        let clashes = Atomic<Int>(0)
        let group = DispatchGroup()
        for thread in 0..<4 {
            group.enter()
            Thread {
                var open: [CrashReporter.RequestToken] = []
                for step in 0..<5_000 {
                    // Up to 20 open at once on a thread, ended out of order.
                    if open.count < 20 && (step % 3 != 2 || open.isEmpty) {
                        let token = CrashReporter.beginRequest(method: "GET", route: "/churn/\(thread)")
                        if token.isRecorded {
                            if !held.withLock({ $0.insert(token.slot).inserted }) { clashes.add(1, ordering: .relaxed) }
                            open.append(token)
                        }
                    } else {
                        let token = open.remove(at: step % open.count)
                        held.withLock { _ = $0.remove(token.slot) }
                        CrashReporter.endRequest(token)
                    }
                }
                for token in open {
                    held.withLock { _ = $0.remove(token.slot) }
                    CrashReporter.endRequest(token)
                }
                group.leave()
            }.start()
        }
        group.wait()
        #expect(clashes.load(ordering: .relaxed) == 0)
        #expect(CrashReporter.requestsInFlight == 0)
    }
}
