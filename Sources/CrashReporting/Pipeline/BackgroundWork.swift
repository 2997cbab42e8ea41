// One piece of work on its own detached pthread, with a bounded wait for it. Foundation's Thread
// and Dispatch cost ~100 µs on first use, a tenth of `start`'s budget; a pthread costs ~20 µs.
import Glibc
import Synchronization

final class BackgroundWork: Sendable {
    private let done = Atomic<Bool>(false)
    private let threadMade = Atomic<Bool>(false)
    /// False when no thread could be made (the work did not run).
    var hasThread: Bool { threadMade.load(ordering: .acquiring) }

    init(_ work: @escaping @Sendable () -> Void) {
        final class Box: @unchecked Sendable {
            let work: @Sendable () -> Void
            let owner: BackgroundWork
            init(_ work: @escaping @Sendable () -> Void, _ owner: BackgroundWork) {
                self.work = work
                self.owner = owner
            }
        }
        let box = Unmanaged.passRetained(Box(work, self)).toOpaque()
        var thread = pthread_t()
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        let result = pthread_create(&thread, &attributes, { opaque in
            let box = Unmanaged<Box>.fromOpaque(opaque!).takeRetainedValue()
            box.work()
            box.owner.done.store(true, ordering: .releasing)
            return nil
        }, box)
        pthread_attr_destroy(&attributes)
        threadMade.store(result == 0, ordering: .releasing)
        if result != 0 {
            // No thread (a pids limit, RLIMIT_NPROC): the work is a loop, so running it here would
            // never return. Do without it for this process, and say so.
            _ = Unmanaged<Box>.fromOpaque(box).takeRetainedValue()
            done.store(true, ordering: .releasing)
            CrashReporter.warn("no thread for background work (pthread_create: \(String(cString: strerror(result)))); reports wait for the next launch")
        }
    }

    /// True once the work finished; false if `timeout` passed first.
    func wait(timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while !done.load(ordering: .acquiring) {
            if ContinuousClock.now >= deadline { return false }
            usleep(1000)
        }
        return true
    }
}
