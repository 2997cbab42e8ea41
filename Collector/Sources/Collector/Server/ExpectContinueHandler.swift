// Answers "Expect: 100-continue" at once. libcurl (URLSession on Linux, so the runtime's uploads)
// sends it with bodies over 1 MB and then waits a second for "100 Continue" before sending the
// body; Hummingbird does not send one, so every large upload would start a second late.
import HTTPTypes
import NIOCore
import NIOHTTPTypes

final class ExpectContinueHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var part = unwrapInboundIn(data)
        if case .head(var head) = part, let expect = head.headerFields[.expect] {
            // Always "go on": the handler decides on the whole request (a 401 or 413 after the
            // body is simpler for clients than a final answer they may not wait for).
            if expect.lowercased() == "100-continue" {
                context.writeAndFlush(wrapOutboundOut(.head(HTTPResponse(status: .continue))), promise: nil)
            }
            head.headerFields[.expect] = nil
            part = .head(head)
        }
        context.fireChannelRead(wrapInboundOut(part))
    }
}
