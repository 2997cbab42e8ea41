// Answers "Expect: 100-continue" at once, for requests that may go on. libcurl (URLSession on
// Linux, so the runtime's uploads) sends it with bodies over 1 MB and then waits a second for
// "100 Continue" before sending the body; Hummingbird does not send one, so every large upload
// would start a second late. An upload whose head already fails (no accepted token, or a
// Content-Length over the limit) gets no "100 Continue", and its connection closes after the
// answer instead of the server reading (draining) a body nobody will use.
import HTTPTypes
import NIOCore
import NIOHTTPTypes

final class ExpectContinueHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    /// Whether a request's head, from the client address the second closure gives ("127.0.0.1";
    /// asked only for uploads), lets its body be read: false for an upload that will be refused.
    let mayReadBody: @Sendable (HTTPRequest, () -> String) -> Bool

    init(mayReadBody: @escaping @Sendable (HTTPRequest, () -> String) -> Bool = { _, _ in true }) {
        self.mayReadBody = mayReadBody
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var part = unwrapInboundIn(data)
        if case .head(var head) = part {
            let channel = context.channel
            let allowed = mayReadBody(head) { channel.remoteAddress?.ipAddress ?? "unknown" }
            if let expect = head.headerFields[.expect] {
                // A client that waits for "100 Continue" has sent no body yet: after the final
                // answer the connection closes (Hummingbird closes after answering a request that
                // asked to), and the refused body is never read. A client that sent its body at
                // once is drained as before: closing on unread data would reset the connection
                // and lose the answer.
                if !allowed && expect.lowercased() == "100-continue" { head.headerFields[.connection] = "close" }
                // "Go on" for every request that may: the handler decides on the whole request (a
                // 413 after the body is simpler for clients than a final answer they may not wait for).
                if allowed && expect.lowercased() == "100-continue" {
                    context.writeAndFlush(wrapOutboundOut(.head(HTTPResponse(status: .continue))), promise: nil)
                }
                head.headerFields[.expect] = nil
            }
            part = .head(head)
        }
        context.fireChannelRead(wrapInboundOut(part))
    }
}
