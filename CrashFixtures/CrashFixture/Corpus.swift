// The grouping corpus (tools/test-grouping-corpus): six distinct bugs, each in its own app
// function, so that every build variant (debug, release, static stdlib, stripped + symbolicated)
// of the same source must give the same six issues. Inputs come from the command line's length so
// that the optimizer cannot fold the failures away.
import CrashReporting
import Foundation
import Glibc

enum CorpusBug: String, CaseIterable {
    case forceUnwrap = "corpus-force-unwrap"
    case indexInPageItems = "corpus-index-page-items"
    case indexInLastOrder = "corpus-index-last-order"
    case precondition = "corpus-precondition"
    case fatalError = "corpus-fatal-error"
    case taskGroupChild = "corpus-task-group-child"
    case onThread = "corpus-on-thread"
    /// Not in the corpus: a crash three awaits deep, after a suspension, so that only the async
    /// context chain knows the callers (the async-frames tests).
    case asyncChain = "async-chain-crash"
}

@inline(never) func fetchInvoice(_ id: Int) async -> Int {
    await Task.yield()   // resumed later by the executor: the synchronous stack no longer has the callers
    let lines: [Int] = []
    return lines[id]
}

@inline(never) func loadOrder(_ id: Int) async -> Int {
    await fetchInvoice(id) + 1
}

@inline(never) func handleRequest(_ id: Int) async -> Int {
    await loadOrder(id) + 1
}

nonisolated(unsafe) var corpusSink = 0
let corpusInput = CommandLine.arguments.count   // 3 when run as `CrashFixture <bug> <dir>`

@inline(never) func loadProfile(id: Int) -> Int {
    let profiles: [Int: Int] = [1: 10, 2: 20]
    return profiles[id + 40]!   // no such profile
}

@inline(never) func pageItems(_ page: Int) -> Int {
    let items = Array(0..<page)
    return items[page * 2]
}

@inline(never) func lastOrder(of customer: Int) -> Int {
    let orders = [customer, customer + 1]
    return orders[customer + 5]
}

@inline(never) func checkBalance(_ balance: Int) -> Int {
    precondition(balance >= 0, "balance must not be negative")
    return balance
}

@inline(never) func applyMigration(_ version: Int) -> Int {
    if version > 2 { Swift.fatalError("unknown migration \(version)") }
    return version
}

@inline(never) func resizeImage(_ width: Int) -> Int {
    let sizes = [width]
    return sizes[width]   // a child task's bug
}

@inline(never) func drainQueue(_ count: Int) -> Int {
    let jobs: [Int]? = count > 100 ? [count] : nil
    return jobs!.count
}

func runCorpusBug(_ bug: CorpusBug, reportsDirectory: String) -> Never {
    do {
        try CrashReporter.start(fixtureConfiguration(reportsDirectory))
    } catch {
        FileHandle.standardError.write(Data("CrashReporter.start failed: \(error)\n".utf8))
        exit(4)
    }
    switch bug {
    case .forceUnwrap: corpusSink &+= loadProfile(id: corpusInput)
    case .indexInPageItems: corpusSink &+= pageItems(corpusInput)
    case .indexInLastOrder: corpusSink &+= lastOrder(of: corpusInput)
    case .precondition: corpusSink &+= checkBalance(-corpusInput)
    case .fatalError: corpusSink &+= applyMigration(corpusInput)
    case .taskGroupChild:
        Task.detached {
            await withTaskGroup(of: Int.self) { group in
                for width in [corpusInput, corpusInput + 1] { group.addTask { resizeImage(width) } }
                for await size in group { corpusSink &+= size }
            }
        }
    case .onThread:
        Thread { corpusSink &+= drainQueue(corpusInput) }.start()
    case .asyncChain:
        Task.detached { corpusSink &+= await handleRequest(corpusInput) }
    }
    sleep(20)
    FileHandle.standardError.write(Data("corpus bug \(bug.rawValue) did not crash within 20 s\n".utf8))
    exit(3)
}
