// Hang detection for SwiftNIO servers (Hummingbird, Vapor): every event loop of a group beats a
// heartbeat of its own from a repeated task on itself, so a loop that something blocks (a
// synchronous call in a ChannelHandler, a blocking closure given to `execute`) stops beating and
// the hang report lists that loop's thread first, with the blocking code in its stack.
import CrashReporting
import NIOCore

extension CrashReporter {
    /// Watches each event loop of `group` ("event loop 0", "event loop 1"…), beating four times per
    /// hang threshold. Does nothing (returns []) when `Configuration.hangs` is not set. Cancel the
    /// returned tasks when the group shuts down, or let the shutdown end them.
    @discardableResult
    public static func watchEventLoops(_ group: any EventLoopGroup) -> [RepeatedTask] {
        guard let threshold = hangThreshold else { return [] }
        let components = (threshold / 4).components
        let period = TimeAmount.nanoseconds(max(components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000, 10_000_000))
        var tasks: [RepeatedTask] = []
        for (index, loop) in group.makeIterator().enumerated() {
            let heartbeat = CrashReporter.heartbeat(named: "event loop \(index)")
            tasks.append(loop.scheduleRepeatedTask(initialDelay: .zero, delay: period) { _ in heartbeat.beat() })
        }
        return tasks
    }
}
