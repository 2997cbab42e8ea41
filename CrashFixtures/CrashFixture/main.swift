// CrashFixture: a program that crashes in a known way, through a fixed level1()…level5() chain, so
// the integration tests can check every frame. Usage: CrashFixture <fixture> <reports-directory>
// Set CRASH_FIXTURE_NO_REPORTER=1 to crash without CrashReporter (the Swift backtracer baseline).
import CCrashCapture
import CFixtureSupport
import CrashReporting
import Foundation
import Glibc
import Synchronization

enum Fixture: String, CaseIterable {
    case nullPointerWrite = "null-pointer-write"
    case abortFromC = "abort-from-c"
    case arrayIndexOutOfRange = "array-index-out-of-range"
    case forceUnwrapNil = "force-unwrap-nil"
    case fatalErrorMessage = "fatal-error"
    case integerDivisionByZero = "integer-division-by-zero"
    case truncatedMappingBusError = "truncated-mapping-bus-error"
    case trapInstruction = "trap-instruction"
    case backgroundThreadCrash = "background-thread-crash"
    case taskCrash = "task-crash"
    case mainThreadStackOverflow = "main-thread-stack-overflow"
    case backgroundThreadStackOverflow = "background-thread-stack-overflow"
    case qsortComparatorCrash = "qsort-comparator-crash"
    case previousHandlerChained = "previous-handler-chained"
    /// An app's SIGSEGV handler installed after start, calling ours: the crash's module read
    /// cannot be a guarded copy (a fault in it would reach the app's handler first).
    case handlerAfterStartChains = "handler-after-start-chains"
    case concurrentCrashes = "concurrent-crashes"
    case forceCrash = "force-crash"
    case deepStack = "deep-stack"
    case faultInHandler = "fault-in-handler"
    case hangInHandler = "hang-in-handler"
    case loaderLockHeld = "loader-lock-held"
    case contextThenCrash = "context-then-crash"
    /// 8 threads log 200 breadcrumbs each, more threads than there are rings of their own (the
    /// rest share ring 0), in two waves so that rings are handed over; then a last one and a crash.
    case threadsContextThenCrash = "threads-context-then-crash"
    /// Four named threads, each waiting in its own function (waitInAlpha…waitInDelta), and one
    /// that blocks every signal; then the main thread crashes: the record lists them all.
    case namedThreadsThenCrash = "named-threads-then-crash"
    /// Opens $CRASH_FIXTURE_UNLOADED before start and closes it after; opens $CRASH_FIXTURE_PLUGIN
    /// after start and crashes inside its `plugin_crash()` (called from crash()).
    case dlopenedLibraryCrash = "dlopened-library-crash"
    /// A forked child faults first (it must die by SIGSEGV without touching the parent's record
    /// file, session or watchdog); then the parent faults and must get its own record.
    case forkChildCrashThenParentCrash = "fork-child-crash-then-parent-crash"
    /// Run with hang-in-handler-after-write: the main thread faults and its handler stalls; meanwhile
    /// another thread forks once the parent's record file has its module table, and the child faults. The
    /// child inherits the parent's claim on the crash, but not its thread.
    case forkDuringParentCrash = "fork-during-parent-crash"
    /// As fork-child-crash-then-parent-crash, but the child has used up its descriptors (EMFILE).
    case forkChildOutOfDescriptorsCrash = "fork-child-out-of-descriptors-crash"
    /// As fork-child-crash-then-parent-crash, but the child closes every inherited descriptor and
    /// puts a file of its own under each number (the parent's record file's and watchdog pipe's
    /// among them); a SIGSEGV handler installed before start says which the child still has.
    case forkChildReusingDescriptorsCrash = "fork-child-reusing-descriptors-crash"
    /// fork(); the parent exit()s at once; the child (setsid, stdio on /dev/null) then crashes.
    case daemonisedChildCrash = "daemonised-child-crash"
    /// A write through 0x10 in a leaf that keeps no frame, called from a function that does.
    case framelessLeafCrash = "frameless-leaf-crash"
    /// The app's SIGTERM handler calls exit(0); SIGTERM arrives at the crashing thread while the
    /// handler is busy (run with the hang-in-handler-after-write misbehaviour: the sender watches the file).
    case sigtermDuringCrash = "sigterm-during-crash"
    /// Breadcrumbs, then a crash on a thread whose handler stalls (CRASH_REPORTING_TEST_MISBEHAVIOUR
    /// hang-in-handler), while the main thread ends the session as a graceful shutdown would.
    case endSessionDuringCrash = "end-session-during-crash"
    /// A seccomp filter traps getppid(2): SIGSYS with SYS_SECCOMP, the real case.
    case seccompTrappedSystemCall = "seccomp-trapped-system-call"
    /// A call through a NULL function pointer: the fault is at pc 0.
    case nullFunctionPointerCall = "null-function-pointer-call"
}

nonisolated(unsafe) var sink = 0
nonisolated(unsafe) var reportsDirectory = ""

// MARK: - The fixed chain

@inline(never) func level1(_ fixture: Fixture) { level2(fixture); sink &+= 1 }
@inline(never) func level2(_ fixture: Fixture) { level3(fixture); sink &+= 2 }
@inline(never) func level3(_ fixture: Fixture) { level4(fixture); sink &+= 3 }
@inline(never) func level4(_ fixture: Fixture) { level5(fixture); sink &+= 4 }
@inline(never) func level5(_ fixture: Fixture) { crash(fixture); sink &+= 5 }

/// Returns once CLOCK_REALTIME_COARSE (the breadcrumbs' clock) reads later than it did on entry:
/// everything logged before the call has an earlier timestamp than anything logged after it.
func waitForCoarseClockTick() {
    func now() -> Int {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME_COARSE, &time)
        return time.tv_sec * 1_000_000_000 + time.tv_nsec
    }
    let entry = now()
    while now() <= entry { usleep(500) }
}

// MARK: - The faults

@inline(never) func crash(_ fixture: Fixture) {
    switch fixture {
    case .nullPointerWrite, .backgroundThreadCrash, .taskCrash, .previousHandlerChained, .handlerAfterStartChains,
         .faultInHandler, .hangInHandler, .loaderLockHeld, .contextThenCrash, .threadsContextThenCrash,
         .namedThreadsThenCrash, .forkChildCrashThenParentCrash, .forkDuringParentCrash, .forkChildOutOfDescriptorsCrash, .forkChildReusingDescriptorsCrash, .daemonisedChildCrash, .sigtermDuringCrash, .endSessionDuringCrash:
        cfs_write_null_pointer()
    case .seccompTrappedSystemCall:
        sink &+= cfs_trapped_system_call()
    case .nullFunctionPointerCall:
        cfs_call_null_function_pointer()
    case .framelessLeafCrash:
        cfs_call_frameless_leaf()
    case .abortFromC:
        cfs_abort()
    case .arrayIndexOutOfRange:
        sink &+= indexOutOfRange(Array(0..<Int(3 + sink % 2)), index: 7 + sink)
    case .forceUnwrapNil:
        sink &+= forceUnwrap(sink == 0 ? nil : sink)
    case .fatalErrorMessage:
        callFatalError()
    case .integerDivisionByZero:
        sink &+= Int(cfs_divide(42, Int32(sink)))
    case .truncatedMappingBusError:
        sink &+= Int(cfs_touch_truncated_mapping(reportsDirectory))
    case .trapInstruction:
        cfs_trap_instruction()
    case .mainThreadStackOverflow, .backgroundThreadStackOverflow:
        sink &+= recurseWithoutEnd(0)
    case .qsortComparatorCrash:
        sortWithCrashingComparator()
    case .concurrentCrashes:
        crashTogether()
    case .forceCrash:
        CrashReporter.forceCrash()
        print("forceCrash returned")
    case .deepStack:
        sink &+= recurseThenCrash(60)
    case .dlopenedLibraryCrash:
        callPlugin()
    }
}

/// The library opened after start; its `plugin_crash()` writes through a null pointer.
nonisolated(unsafe) var pluginCrash: (@convention(c) () -> Void)? = nil

@inline(never) func callPlugin() {
    pluginCrash?()
    sink &+= 1
}

func openLibrary(_ variable: String) -> UnsafeMutableRawPointer {
    guard let path = ProcessInfo.processInfo.environment[variable], let handle = dlopen(path, RTLD_NOW) else {
        FileHandle.standardError.write(Data("cannot open $\(variable): \(String(cString: dlerror()))\n".utf8))
        exit(5)
    }
    return handle
}

@inline(never) func indexOutOfRange(_ array: [Int], index: Int) -> Int {
    array[index]
}

@inline(never) func forceUnwrap(_ value: Int?) -> Int {
    value!
}

@inline(never) func callFatalError() {
    fatalError("fixture: the ledger does not balance")
}

/// Indirect so the optimizer cannot turn the recursion into a loop.
nonisolated(unsafe) var recursion: (Int) -> Int = recurseWithoutEnd

@inline(never) func recurseWithoutEnd(_ depth: Int) -> Int {
    withUnsafeTemporaryAllocation(of: Int.self, capacity: 32) { buffer in
        buffer.initialize(repeating: depth)
        return recursion(depth + 1) &+ buffer[depth % 32]
    }
}

nonisolated(unsafe) var deepRecursion: (Int) -> Int = recurseThenCrash

@inline(never) func recurseThenCrash(_ remaining: Int) -> Int {
    if remaining == 0 {
        cfs_write_null_pointer()
        return 0
    }
    return deepRecursion(remaining - 1) &+ 1
}

@inline(never) func crashInComparator() -> Int32 {
    cfs_write_null_pointer()
    return 0
}

@inline(never) func sortWithCrashingComparator() {
    var values: [Int32] = [3, 1, 2]
    values.withUnsafeMutableBufferPointer { buffer in
        qsort(buffer.baseAddress!, buffer.count, MemoryLayout<Int32>.stride) { _, _ in crashInComparator() }
    }
    sink &+= Int(values[0])
}

let crashTogetherArrivals = Atomic<Int>(0)

/// Both threads arrive, then fault within microseconds of each other.
@inline(never) func crashTogether() {
    crashTogetherArrivals.add(1, ordering: .sequentiallyConsistent)
    while crashTogetherArrivals.load(ordering: .sequentiallyConsistent) < 2 {}
    cfs_write_null_pointer()
}

// MARK: - Named threads, each waiting in a function of its own

/// Never signalled: the waiting threads stay where they are until the process dies.
let gate = DispatchSemaphore(value: 0)
/// Signalled by each thread from inside its wait function, just before it blocks.
let waiting = DispatchSemaphore(value: 0)

@inline(never) func waitInAlpha() { waiting.signal(); gate.wait(); sink &+= 1 }
@inline(never) func waitInBeta() { waiting.signal(); gate.wait(); sink &+= 2 }
@inline(never) func waitInGamma() { waiting.signal(); gate.wait(); sink &+= 3 }
@inline(never) func waitInDelta() { waiting.signal(); gate.wait(); sink &+= 4 }

/// The thread that blocks every signal waits here (a function of its own: the only frame of
/// startNamedThreads' on its stack is the closure that called cfs_call_below_big_frame).
@inline(never) func maskedWait() { waiting.signal(); gate.wait() }

/// Starts the four named threads and one that blocks every signal, and returns once all wait.
func startNamedThreads() {
    let threads: [(String, @Sendable () -> Void)] = [
        ("fixture-alpha", waitInAlpha), ("\tfixture-beta", waitInBeta),
        (#"fixture\gamma"#, waitInGamma), ("fixture-delta", waitInDelta),
    ]
    for (name, body) in threads {
        Thread.detachNewThread {
            cfs_name_current_thread(name)
            body()
        }
    }
    Thread.detachNewThread {
        cfs_name_current_thread("fixture-masked")
        var all = sigset_t()
        sigfillset(&all)
        pthread_sigmask(SIG_SETMASK, &all, nil)
        // It waits (in maskedWait) under a 9000-byte frame: its caller, this closure, is found by
        // the stack scan only past the first two 4 KiB of its stack.
        cfs_call_below_big_frame(maskedWait)
    }
    // More waiting threads for measurements (tools/bench-capture's thread count): unnamed.
    let extra = ProcessInfo.processInfo.environment["CRASH_FIXTURE_EXTRA_THREADS"].flatMap(Int.init) ?? 0
    for _ in 0..<extra {
        Thread.detachNewThread {
            waiting.signal()
            gate.wait()
        }
    }
    for _ in 0..<(5 + extra) { waiting.wait() }
}

// MARK: - Running a fixture

func runOnThread(_ fixture: Fixture, stackSize: Int = 0) {
    let thread = Thread {
        cfs_name_current_thread("fixture-worker")   // the OS thread name the handler must record
        level1(fixture)
    }
    if stackSize > 0 { thread.stackSize = stackSize }
    thread.start()
}

func waitForCrash() -> Never {
    sleep(20)
    FileHandle.standardError.write(Data("fixture did not crash within 20 s\n".utf8))
    exit(3)
}

let arguments = CommandLine.arguments
if arguments.count == 3, let mode = LifecycleMode(rawValue: arguments[1]) {
    runLifecycle(mode, reportsDirectory: arguments[2])
}
if arguments.count == 3, let mode = HangMode(rawValue: arguments[1]) {
    runHangMode(mode, reportsDirectory: arguments[2])
}
if arguments.count == 3, let mode = UploadMode(rawValue: arguments[1]) {
    runUploadMode(mode, reportsDirectory: arguments[2])
}
if arguments.count == 3, let bug = CorpusBug(rawValue: arguments[1]) {
    runCorpusBug(bug, reportsDirectory: arguments[2])
}
if arguments.count == 3, arguments[1] == "request-breadcrumb-order" {
    runRequestBreadcrumbOrder(reportsDirectory: arguments[2])
}
guard arguments.count == 3, let fixture = Fixture(rawValue: arguments[1]) else {
    let names = (Fixture.allCases.map(\.rawValue) + LifecycleMode.allCases.map(\.rawValue) + HangMode.allCases.map(\.rawValue) + UploadMode.allCases.map(\.rawValue)
                 + CorpusBug.allCases.map(\.rawValue) + ["request-breadcrumb-order"]).joined(separator: "\n  ")
    FileHandle.standardError.write(Data("usage: CrashFixture <fixture> <reports-directory>\nfixtures:\n  \(names)\n".utf8))
    exit(2)
}
reportsDirectory = arguments[2]

if fixture == .previousHandlerChained {
    cfs_install_marker_handler(SIGSEGV, reportsDirectory + "/previous-handler.marker")
}
if fixture == .forkChildReusingDescriptorsCrash {
    cfs_install_descriptor_check_handler(reportsDirectory + "/child-own-file")
}

var unloadedAfterStart: UnsafeMutableRawPointer? = nil
if fixture == .dlopenedLibraryCrash {
    unloadedAfterStart = openLibrary("CRASH_FIXTURE_UNLOADED")   // in start's module table
}

if ProcessInfo.processInfo.environment["CRASH_FIXTURE_NO_REPORTER"] != "1" {
    do {
        try CrashReporter.start(fixtureConfiguration(reportsDirectory))
    } catch {
        FileHandle.standardError.write(Data("CrashReporter.start failed: \(error)\n".utf8))
        exit(4)
    }
    if fixture == .dlopenedLibraryCrash {
        // Start's table is made on the pipeline's thread just after start returns: the libraries
        // this fixture closes and opens "after start" are changed after that table.
        _ = ccr_wait_for_deferred_setup(2000)
    }
}

if fixture == .handlerAfterStartChains {
    cfs_install_chaining_handler(SIGSEGV)
}
if ProcessInfo.processInfo.environment["CRASH_FIXTURE_STEADY_STATE"] == "1" {
    CrashReporter.waitForBackgroundWork()   // start's background work done: a process that has been running
}
if let mode = ProcessInfo.processInfo.environment["CRASH_FIXTURE_WATCHDOG_PIPE"] {
    // An app that closes the watchdog's pipe ("closed") or puts a pipe of its own, with bytes
    // waiting, under its number ("replaced"). Waits (at most 10 s) until the watchdog has given the
    // number up, then: are the app's bytes all there, and does the watchdog thread stay idle?
    ccr_watchdog_wait_started(10_000)
    let number = ccr_test_watchdog_read_fd()
    if mode == "replaced" { _ = cfs_put_pipe_under(number) } else { close(number) }
    for _ in 0..<1000 where ccr_test_watchdog_gave_up_pipe() == 0 { usleep(10_000) }
    func cpuTicks() -> Int {   // utime + stime of the watchdog thread (fields 14 and 15 of its stat)
        let stat = (try? String(contentsOfFile: "/proc/self/task/\(ccr_test_watchdog_tid())/stat", encoding: .utf8)) ?? ""
        let fields = stat.split(separator: ")").last.map { $0.split(separator: " ") } ?? []
        return fields.count > 13 ? (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0) : -1
    }
    let before = cpuTicks()
    usleep(1_000_000)
    let left = mode == "replaced" ? cfs_bytes_waiting(number) : 0
    FileHandle.standardError.write(Data("watchdog-gave-up \(ccr_test_watchdog_gave_up_pipe()) app-pipe-bytes-left \(left) watchdog-cpu-ticks \(cpuTicks() - before)\n".utf8))
}
if let delay = ProcessInfo.processInfo.environment["CRASH_FIXTURE_RUN_BEFORE_CRASH_MS"].flatMap(Int.init) {
    usleep(useconds_t(delay * 1000))   // a process that has been up a while, not one crashing on launch
}
if let count = ProcessInfo.processInfo.environment["CRASH_FIXTURE_IDLE_THREADS"].flatMap(Int32.init) {
    cfs_start_idle_threads(count)   // tools/bench-capture: a process with this many other threads, all started and asleep
}
if let route = ProcessInfo.processInfo.environment["CRASH_FIXTURE_REQUEST_IN_FLIGHT"] {
    _ = CrashReporter.beginRequest(method: "GET", route: route, requestID: "fixture-request-1")   // a request this thread serves
}
if ProcessInfo.processInfo.environment["CRASH_FIXTURE_PRINT_CRASH_TIME"] == "1" {
    // Read by tools/bench-capture: the moment just before the crash, on the parent's clock.
    FileHandle.standardError.write(Data("crash-at-ns \(monotonicNanoseconds())\n".utf8))
}

switch fixture {
case .backgroundThreadCrash:
    runOnThread(fixture)
    waitForCrash()
case .backgroundThreadStackOverflow:
    runOnThread(fixture, stackSize: 1 << 20)
    waitForCrash()
case .concurrentCrashes:
    runOnThread(fixture)
    runOnThread(fixture)
    waitForCrash()
case .taskCrash:
    Task.detached { level1(fixture) }
    waitForCrash()
case .loaderLockHeld:
    cfs_hold_loader_lock_on_new_thread()
    level1(fixture)
case .contextThenCrash:
    setContext(breadcrumbs: 1000)
    // tools/e2e-collector: breadcrumbs with secrets the redactor's patterns miss (one per line).
    for line in (ProcessInfo.processInfo.environment["CRASH_FIXTURE_EXTRA_BREADCRUMBS"] ?? "").split(separator: "\n") {
        CrashReporter.log(String(line))
    }
    level1(fixture)
case .namedThreadsThenCrash:
    // This library's threads are listed by the ids and names they publish as they start. On a
    // loaded machine a crash within milliseconds of start() can come before the watchdog thread
    // has run at all (it is then listed as one of the app's threads); these tests are about the
    // listing, not that race: wait until it has published its id (the pipeline thread, which
    // made it, published its own before).
    ccr_watchdog_wait_started(10_000)
    startNamedThreads()
    if ProcessInfo.processInfo.environment["CRASH_FIXTURE_PRINT_THREAD_NAMES"] == "1" {
        // Every thread's own name, as gdb, top -H and a crash read them.
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        let names = tasks.compactMap { try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8) }
            .map { $0.trimmingCharacters(in: .newlines) }
        FileHandle.standardError.write(Data("thread-names: \(names.joined(separator: "|"))\n".utf8))
    }
    if ProcessInfo.processInfo.environment["CRASH_FIXTURE_TAKE_THREAD_SIGNAL"] == "1" {
        signal(ccr_thread_capture_signal(), SIG_IGN)   // another library takes the signal after start
    }
    if ProcessInfo.processInfo.environment["CRASH_FIXTURE_USE_UP_DESCRIPTORS"] == "1" {
        cfs_use_up_descriptors()   // a server that leaked its descriptors, then crashed
    }
    if ProcessInfo.processInfo.environment["CRASH_FIXTURE_MAIN_EXITS"] == "1" {
        cfs_exit_main_thread_then_crash()   // the main thread a zombie, another thread crashes
    }
    level1(fixture)
case .dlopenedLibraryCrash:
    if let unloadedAfterStart { dlclose(unloadedAfterStart) }
    let plugin = openLibrary("CRASH_FIXTURE_PLUGIN")
    pluginCrash = unsafeBitCast(dlsym(plugin, "plugin_crash"), to: (@convention(c) () -> Void).self)
    level1(fixture)
case .forkChildCrashThenParentCrash:
    var child: Int32 = 0
    // CRASH_FIXTURE_CHILD_SIGALRM=1: the parent sends the crashing child a SIGALRM with kill(2).
    let status = ProcessInfo.processInfo.environment["CRASH_FIXTURE_CHILD_SIGALRM"] == "1"
        ? cfs_fork_child_that_faults_then_alarm(&child, reportsDirectory + "/new")
        : cfs_fork_child_that_faults(&child)
    let ending = status & 0x7f != 0 ? "signal \(status & 0x7f)" : "exit status \((status >> 8) & 0xff)"
    FileHandle.standardError.write(Data("child \(child) ended by \(ending)\n".utf8))
    level1(fixture)
case .forkChildOutOfDescriptorsCrash:
    var child: Int32 = 0
    let status = cfs_fork_child_out_of_descriptors_that_faults(&child)
    FileHandle.standardError.write(Data("child \(child) ended by signal \(status & 0x7f)\n".utf8))
    level1(fixture)
case .forkChildReusingDescriptorsCrash:
    var child: Int32 = 0
    let status = cfs_fork_child_reusing_descriptors_that_faults(&child)
    FileHandle.standardError.write(Data("child \(child) ended by signal \(status & 0x7f)\n".utf8))
    level1(fixture)
case .forkDuringParentCrash:
    let folder = reportsDirectory + "/new"
    let forker = Thread {
        for _ in 0..<3000 {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
            if names.contains(where: { (try? String(contentsOfFile: folder + "/" + $0, encoding: .utf8))?.contains(#""type":"modules""#) == true }) {
                var child: Int32 = 0
                let status = cfs_fork_child_that_faults(&child)
                FileHandle.standardError.write(Data("child \(child) ended by signal \(status & 0x7f)\n".utf8))
                return
            }
            usleep(10_000)
        }
    }
    forker.start()
    level1(fixture)
case .daemonisedChildCrash:
    let daemon = cfs_daemonise_then_fault()
    FileHandle.standardError.write(Data("daemon \(daemon) started\n".utf8))
    exit(0)   // atexit work included, as a daemonising parent does
case .sigtermDuringCrash:
    cfs_exit_zero_on_sigterm()
    cfs_sigterm_this_thread_when_record_starts(reportsDirectory + "/new")
    level1(fixture)
case .endSessionDuringCrash:
    setContext(breadcrumbs: 1000)
    runOnThread(fixture)
    while ccr_test_crash_begun() == 0 { usleep(1000) }   // the other thread's handler has the crash
    CrashReporter.endSession()
    FileHandle.standardOutput.write(Data("session ended\n".utf8))   // unbuffered: the process dies by a signal
    waitForCrash()
case .seccompTrappedSystemCall:
    guard cfs_trap_getppid_with_seccomp() == 0 else {
        FileHandle.standardError.write(Data("seccomp unavailable\n".utf8))
        exit(5)
    }
    level1(fixture)
case .threadsContextThenCrash:
    CrashReporter.log("main first")
    // Main holds ring 1 of the 4 rings of their own. Wave 1: threads 0…3 run together, three
    // take rings 2…4 and one shares ring 0; they exit and give their rings back. Wave 2: threads
    // 4…7 take them over, one of them on ring 0 again.
    // Each thread logs 4 chunks of 50; after each chunk the wave's threads meet at a barrier and
    // wait until the breadcrumbs' coarse clock has ticked: every chunk is in a later tick than the
    // one before, however fast the appends run and however the machine schedules the threads (a
    // fixed sleep against the 4 ms tick was decided by the machine's load). Within a chunk the
    // merge by timestamp, then ring, depends on where the ticks fell; the test asserts only what
    // the chunks guarantee.
    let barrier = UnsafeMutablePointer<pthread_barrier_t>.allocate(capacity: 1)
    let barrierAddress = Int(bitPattern: barrier)   // an address is Sendable, a pointer is not
    for wave in [0..<4, 4..<8] {
        pthread_barrier_init(barrier, nil, 4)
        let done = DispatchGroup()
        for thread in wave {
            done.enter()
            Thread.detachNewThread {
                for index in 0..<200 {
                    CrashReporter.log("t\(thread) #\(index)")
                    if index % 50 == 49 {
                        pthread_barrier_wait(UnsafeMutablePointer<pthread_barrier_t>(bitPattern: barrierAddress)!)
                        waitForCoarseClockTick()
                    }
                }
                done.leave()
            }
        }
        done.wait()
        pthread_barrier_destroy(barrier)
        waitForCoarseClockTick()   // waves a clock tick apart; wave 1's threads have exited
    }
    CrashReporter.log("main last")
    level1(fixture)
default:
    level1(fixture)
}
exit(0)
