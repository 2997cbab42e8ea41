// At the connection cap (--max-connections), the connection that has waited longest for a request
// head is closed to make room: a slowloris's half-sent heads, or a keep-alive connection idle
// between requests. Without it, 512 connections that never finish a head held every slot until the
// idle time-out, and every new client (a health check, an upload) waited in the listen backlog
// meanwhile (tools/collector-abuse: a fresh /health took the whole idle time-out). A connection in
// the middle of a request (its head read, its body or answer under way) is never shed; when every
// slot holds one, new connections wait in the backlog as before.
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTPTypes
import Synchronization

/// The open connections waiting for a request head, oldest first.
final class WaitingConnections: Sendable {
    private struct State {
        var next: UInt64 = 0
        var waiting: [ObjectIdentifier: (order: UInt64, channel: any Channel)] = [:]
    }

    private let state = Mutex(State())

    /// `channel` waits for a head from now on (opened, or its last answer sent).
    func waiting(_ channel: any Channel) {
        state.withLock { state in
            state.next += 1
            state.waiting[ObjectIdentifier(channel)] = (state.next, channel)
        }
    }

    /// `channel` has a request under way, or is gone.
    func busy(_ channel: any Channel) {
        _ = state.withLock { $0.waiting.removeValue(forKey: ObjectIdentifier(channel)) }
    }

    var count: Int { state.withLock { $0.waiting.count } }

    /// Closes the connection that has waited longest; false when none waits.
    func shedOldest() -> Bool {
        let oldest: (any Channel)? = state.withLock { state in
            guard let entry = state.waiting.min(by: { $0.value.order < $1.value.order }) else { return nil }
            state.waiting.removeValue(forKey: entry.key)
            return entry.value.channel
        }
        oldest?.close(promise: nil)
        return oldest != nil
    }
}

/// In each connection's pipeline, after HTTP decoding: waiting from when it is added and after
/// each answer's end, busy from each request head on.
final class WaitingConnectionHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    let connections: WaitingConnections

    init(connections: WaitingConnections) {
        self.connections = connections
    }

    func handlerAdded(context: ChannelHandlerContext) {
        connections.waiting(context.channel)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        connections.busy(context.channel)
    }

    func channelInactive(context: ChannelHandlerContext) {
        connections.busy(context.channel)
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head = unwrapInboundIn(data) { connections.busy(context.channel) }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data), context.channel.isActive { connections.waiting(context.channel) }
        context.write(data, promise: promise)
    }
}

/// Hummingbird's MaximumAvailableConnections, shedding the longest-waiting connection when the
/// count reaches the maximum: the next one is accepted as soon as that one has closed.
struct SheddingMaximumConnections: AvailableConnectionsDelegate {
    let maximum: Int
    let waiting: WaitingConnections
    let logger: Logger
    var count = 0

    init(_ maximum: Int, waiting: WaitingConnections, logger: Logger) {
        self.maximum = maximum
        self.waiting = waiting
        self.logger = logger
    }

    mutating func connectionOpened() {
        count += 1
        if count >= maximum, waiting.shedOldest() {
            logger.debug("connections: \(count) open, the maximum; closed the one waiting longest for a request")
        }
    }

    mutating func connectionClosed() {
        count -= 1
    }

    func isAcceptingNewConnections() -> Bool {
        count < maximum
    }
}
