// Hang detection (Configuration.hangs: on by default in release builds, off in debug ones;
// Docs/Decisions/0029). Whatever must keep
// moving — a NIO event loop, the cooperative pool, a worker thread — beats a `Heartbeat`; a
// monitor thread looks every threshold/4 and, when one has not beaten for the threshold, writes a
// hang report: every thread's stack (each thread asked to unwind itself, as at a crash, then let
// go), the one that last beat it first, with the session's breadcrumbs. The report waits in new/
// while the hang lasts; when the heartbeat comes back it gets the hang's duration and goes to
// pending/ to be sent. A process that ends during the hang (a liveness probe's SIGKILL) leaves it
// in new/, from where the next launch sends it as unresolved, and that launch's abnormal
// termination names it.
import CCrashCapture
import CrashReportModel
import Foundation
import Glibc
import Synchronization

extension CrashReporter {
    /// Hang detection (`HangDetection.buildDefault` unless set). The monitor is one thread that
    /// sleeps between looks.
    public struct HangDetection: Sendable, Equatable {
        /// A heartbeat older than this is a hang (default 2 s).
        public var threshold: Duration
        /// Also watch Swift's cooperative pool: a task beats a heartbeat named "cooperative pool";
        /// when every pool thread is blocked, it stops.
        public var watchesCooperativePool: Bool
        /// Also watch the main queue (heartbeat "main queue"): the monitor queues a beat on the
        /// main dispatch queue, the main actor's executor, at each look; work stuck on it stops
        /// the beat. The thread that drains it is the one listed first: the main thread under
        /// `RunLoop.main.run()`; a dispatch thread after `dispatchMain()`, which an `async` main
        /// calls on Linux. A program that never drains the main queue (its main thread blocks in
        /// `group.wait()`) never beats it, so nothing is watched.
        public var watchesMainThread: Bool

        public init(threshold: Duration = .seconds(2), watchesCooperativePool: Bool = true, watchesMainThread: Bool = true) {
            self.threshold = threshold
            self.watchesCooperativePool = watchesCooperativePool
            self.watchesMainThread = watchesMainThread
        }

        /// What `Configuration.hangs` is unless set: on, with the defaults above, in a release
        /// build; off in a debug build (a debugger's breakpoint or a slow debug build would make
        /// hang reports of every pause).
        public static var buildDefault: HangDetection? {
            #if DEBUG
            return nil
            #else
            return HangDetection()
            #endif
        }
    }

    /// Something that must keep moving. Call `beat()` from the thread or event loop it stands for,
    /// more often than the threshold (a quarter of it is a good period); `stop()` when it ends.
    public final class Heartbeat: Sendable {
        public let name: String
        let lastBeat = Atomic<UInt64>(0)
        let thread = Atomic<Int32>(0)
        let stopped = Atomic<Bool>(false)

        init(name: String) {
            self.name = name
            beat()
        }

        /// Lock-free: two relaxed stores.
        public func beat() {
            lastBeat.store(HangMonitor.now(), ordering: .relaxed)
            thread.store(ccr_gettid(), ordering: .relaxed)
        }

        public func stop() { stopped.store(true, ordering: .relaxed) }
    }

    /// A heartbeat the hang monitor watches (when `Configuration.hangs` is set; otherwise nobody
    /// does, and beating it costs two stores).
    public static func heartbeat(named name: String) -> Heartbeat {
        let heartbeat = Heartbeat(name: name)
        hangMonitor()?.add(heartbeat)
        return heartbeat
    }

    /// The hang threshold in force (nil: hang detection is off). A heartbeat should beat at least
    /// four times per threshold.
    public static var hangThreshold: Duration? {
        hangMonitor().map { Duration.nanoseconds(Int64($0.threshold)) }
    }

    /// The monitor, not yet started: `start()` makes it on the caller's thread (heartbeats may be
    /// added at once) and starts it from its own background thread, so that the caller does not
    /// pay for one more thread's creation.
    static func makeHangMonitor(_ detection: HangDetection, context: ReportingContext, uploader: Uploader) -> HangMonitor {
        HangMonitor(detection: detection, context: context, uploader: uploader)
    }
}

final class HangMonitor: Sendable {
    let threshold: UInt64
    let interval: Duration
    let context: CrashReporter.ReportingContext
    let uploader: Uploader
    let watchesPool: Bool
    let watchesMainThread: Bool
    private let heartbeats = Mutex<[CrashReporter.Heartbeat]>([])
    private let mainHeartbeat = Mutex<CrashReporter.Heartbeat?>(nil)
    private let mainBeatQueued = Atomic<Bool>(false)

    init(detection: CrashReporter.HangDetection, context: CrashReporter.ReportingContext, uploader: Uploader) {
        let components = max(detection.threshold, .milliseconds(100)).components
        threshold = UInt64(components.seconds) * 1_000_000_000 + UInt64(components.attoseconds / 1_000_000_000)
        // A quarter of the threshold, in integers: `Duration / Int` is generic, and its first use
        // in a process costs `start` a run-time conformance lookup.
        let asked = detection.threshold.components
        let quarter = (asked.seconds * 1_000_000_000 + asked.attoseconds / 1_000_000_000) / 4
        interval = max(Duration(secondsComponent: quarter / 1_000_000_000, attosecondsComponent: quarter % 1_000_000_000 * 1_000_000_000),
                       .milliseconds(25))
        self.context = context
        self.uploader = uploader
        watchesPool = detection.watchesCooperativePool
        watchesMainThread = detection.watchesMainThread
    }

    static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    func add(_ heartbeat: CrashReporter.Heartbeat) {
        heartbeats.withLock { $0.append(heartbeat) }
    }

    /// Starts the monitor's thread; the main thread's and the pool's heartbeats are set up there,
    /// off the caller's (the first Task starts the cooperative pool).
    func start() {
        _ = BackgroundWork { [self] in
            // Listed at a crash or a hang, never asked; not renamed: its heartbeats queue work on the main
            // queue and the cooperative pool, whose new workers would inherit its name.
            ccr_threads_mark_reporter("crash-hangs", 0)
            if watchesMainThread {
                // Registered by its first beat on the main queue: until then (and for good, where
                // the queue is never drained) there is nothing to watch.
                DispatchQueue.main.async { [self] in
                    let heartbeat = CrashReporter.Heartbeat(name: "main queue")
                    mainHeartbeat.withLock { $0 = heartbeat }
                    add(heartbeat)
                }
            }
            if watchesPool {
                let heartbeat = CrashReporter.Heartbeat(name: "cooperative pool")
                add(heartbeat)
                let period = interval
                Task.detached(priority: .utility) {
                    while true {
                        heartbeat.beat()
                        try? await Task.sleep(for: period)
                    }
                }
            }
            run()
        }
    }

    /// A hang being reported: its record in new/ (locked, open) until the heartbeat returns.
    private struct OpenHang {
        var fd: Int32
        var id: String
        var lastBeat: UInt64
    }

    /// Queues the main thread's next beat, unless the last one queued has not run yet.
    private func queueMainBeat() {
        guard let heartbeat = mainHeartbeat.withLock({ $0 }) else { return }
        guard !mainBeatQueued.exchange(true, ordering: .acquiringAndReleasing) else { return }
        DispatchQueue.main.async { [self] in
            heartbeat.beat()
            mainBeatQueued.store(false, ordering: .releasing)
        }
    }

    private func run() {
        var open: [ObjectIdentifier: OpenHang] = [:]
        while true {
            sleep(interval)
            if watchesMainThread { queueMainBeat() }
            let now = Self.now()
            for heartbeat in heartbeats.withLock({ $0 }) {
                let key = ObjectIdentifier(heartbeat)
                let last = heartbeat.lastBeat.load(ordering: .relaxed)
                if let hang = open[key] {
                    if last != hang.lastBeat {   // it beat again: the hang is over
                        finish(hang, duration: last &- hang.lastBeat)
                        open[key] = nil
                    }
                    continue
                }
                guard !heartbeat.stopped.load(ordering: .relaxed), now > last, now - last >= threshold else { continue }
                if let hang = begin(heartbeat, lastBeat: last, age: now - last) { open[key] = hang }
            }
        }
    }

    private func sleep(_ duration: Duration) {
        let c = duration.components
        var request = timespec(tv_sec: Int(c.seconds), tv_nsec: Int(c.attoseconds / 1_000_000_000))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }

    /// Writes the hang record into new/: header, session, hang, the module table and every
    /// thread (the hung one first), the session's breadcrumbs and keys, end. Kept open and locked.
    private func begin(_ heartbeat: CrashReporter.Heartbeat, lastBeat: UInt64, age: UInt64) -> OpenHang? {
        var idBuffer = [CChar](repeating: 0, count: 37)
        ccr_make_record_id(&idBuffer)
        let id = String(decoding: idBuffer.prefix(36).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let path = context.newFolder + "/" + id + ".crash"
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { return nil }
        flock(fd, LOCK_EX | LOCK_NB)   // held while the hang lasts: another process's start leaves it in new/
        let tid = heartbeat.thread.load(ordering: .relaxed)
        let lines = [
            CrashReporter.recordHeader(version: 2, id: id, appID: context.appID, appVersion: context.appVersion, pid: getpid(),
                                       timestampNanoseconds: CrashReporter.wallClockNanoseconds()),
            RecordLine(.session).string("id", context.sessionID).text,
            RecordLine(.hang).string("name", heartbeat.name).integer("tid", Int(tid)).integer("threshold_ms", Int(threshold / 1_000_000))
                .integer("age_ms", Int(age / 1_000_000)).string("session", context.sessionID).text,
        ]
        var elapsed: UInt64 = 0
        var ok = CrashReporter.writeAll(fd, lines.joined(separator: "\n") + "\n") && ccr_write_hang_record(fd, tid, &elapsed) == 0
        if ok, let session = context.sessionPath {
            ok = ccr_session_export(session, fd) == 0
        }
        ok = ok && CrashReporter.writeAll(fd, RecordLine(.end).unsigned("hang_capture_ns", elapsed).textLine) && fsync(fd) == 0
        guard ok else {
            close(fd)
            unlink(path)
            return nil
        }
        CrashReporter.warn("\(heartbeat.name) has not responded for \(CrashReport.seconds(Int(age / 1_000_000))): hang report \(id)")
        return OpenHang(fd: fd, id: id, lastBeat: lastBeat)
    }

    /// The heartbeat came back: the record gets the hang's duration and goes to pending/.
    private func finish(_ hang: OpenHang, duration: UInt64) {
        _ = CrashReporter.writeAll(hang.fd, RecordLine(.hang_end).integer("duration_ms", Int(duration / 1_000_000)).textLine)
        fsync(hang.fd)
        close(hang.fd)
        rename(context.newFolder + "/" + hang.id + ".crash", context.pendingFolder + "/" + hang.id + ".crash")
        uploader.wake()
    }
}
