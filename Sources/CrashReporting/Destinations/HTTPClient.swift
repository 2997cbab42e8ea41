// The HTTP client the destinations use: a protocol, so that an app can send through a client of
// its own (a proxy, mutual TLS, AsyncHTTPClient) and tests can record requests; URLSession by
// default. Whatever the client, the body it gets has been through the outgoing check.
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization

/// One request, as a destination made it.
public struct HTTPRequest: Sendable {
    public var url: URL
    public var method: String
    public var headers: [String: String]
    public var body: Data

    public init(url: URL, method: String, headers: [String: String], body: Data) {
        self.url = url
        self.method = method
        self.headers = headers
        self.body = body
    }
}

/// What came back: a response (any status; header names in lower case), or no answer at all
/// (refused, reset, time-out, DNS) with the reason.
public enum HTTPAnswer: Sendable {
    case response(status: Int, headers: [String: String], body: Data)
    case failed(String)
}

public protocol HTTPClient: Sendable {
    /// Sends `request` and waits for the answer on the caller's thread (the pipeline's own),
    /// giving up after about twice `timeout`. Redirects must not be followed: a 3xx is the answer
    /// (the token must go only to the configured host). `bodySent`, when given, is called once,
    /// when the first bytes of the body went out (the pipeline's evidence that a connection was
    /// made; a client that cannot tell calls it just before sending).
    func send(_ request: HTTPRequest, timeout: Duration, bodySent: (@Sendable () -> Void)?) -> HTTPAnswer
}

/// The default client: a synchronous request on the caller's thread, through URLSession, with a
/// hard deadline.
///
/// Redirects are never followed: a 3xx is the answer (Linux URLSession follows a 307 for a POST
/// and sends the Authorization header to whatever host the Location names, so a redirect could
/// hand the token and the report to another host, whose 2xx would then delete the record). The
/// delegate is only asked when a task has no completion handler, hence the delegate-based tasks.
/// Upload tasks, because only they report `didSendBodyData`: the evidence that a connection was
/// made and the body went out (`bodySent`, see Uploader's interruption rule).
public struct URLSessionHTTPClient: HTTPClient {
    public init() {}

    private final class Exchange: @unchecked Sendable {
        var response: HTTPURLResponse?
        var body = Data()
        var error: (any Error)?
        var bodySent: (@Sendable () -> Void)?
        let done = DispatchSemaphore(value: 0)
    }

    /// The session's delegate: one per session, exchanges by task identifier.
    private final class Delegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
        let exchanges = Mutex<[Int: Exchange]>([:])

        func exchange(_ task: URLSessionTask) -> Exchange? {
            exchanges.withLock { $0[task.taskIdentifier] }
        }

        func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void) {
            completionHandler(nil)   // the 3xx is the answer
        }

        func urlSession(_ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64,
                        totalBytesSent: Int64, totalBytesExpectedToSend: Int64) {
            guard let exchange = exchange(task) else { return }
            // Called under the lock: once `send` has cleared it (a time-out), it never runs late,
            // after the pipeline has marked the attempt as over.
            exchanges.withLock { _ in
                exchange.bodySent?()
                exchange.bodySent = nil
            }
        }

        func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void) {
            if let exchange = exchange(dataTask) { exchanges.withLock { _ in exchange.response = response as? HTTPURLResponse } }
            completionHandler(.allow)
        }

        func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
            if let exchange = exchange(dataTask) { exchanges.withLock { _ in exchange.body.append(data) } }
        }

        func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
            guard let exchange = exchanges.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
            exchanges.withLock { _ in
                exchange.error = error
                if exchange.response == nil { exchange.response = task.response as? HTTPURLResponse }
            }
            exchange.done.signal()
        }
    }

    /// One session per time-out: on Linux, URLRequest.timeoutInterval is ignored; only the
    /// session configuration's timeoutIntervalForRequest is honoured (measured).
    private static let sessions = Mutex<[Duration: (URLSession, Delegate)]>([:])

    private static func session(timeout: Duration) -> (URLSession, Delegate) {
        sessions.withLock { sessions in
            if let session = sessions[timeout] { return session }
            let configuration = URLSessionConfiguration.ephemeral
            configuration.httpCookieStorage = nil
            configuration.urlCache = nil
            configuration.timeoutIntervalForRequest = HTTPExchange.seconds(timeout)
            configuration.timeoutIntervalForResource = HTTPExchange.seconds(timeout) * 2
            let delegate = Delegate()
            // Serial: didSendBodyData is over before didCompleteWithError signals the caller.
            let queue = OperationQueue()
            queue.maxConcurrentOperationCount = 1
            let session = (URLSession(configuration: configuration, delegate: delegate, delegateQueue: queue), delegate)
            sessions[timeout] = session
            return session
        }
    }

    public func send(_ request: HTTPRequest, timeout: Duration, bodySent: (@Sendable () -> Void)?) -> HTTPAnswer {
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        let body = request.body
        let (session, delegate) = Self.session(timeout: timeout)
        let task = session.uploadTask(with: urlRequest, from: body)
        let exchange = Exchange()
        exchange.bodySent = bodySent
        delegate.exchanges.withLock { $0[task.taskIdentifier] = exchange }
        task.resume()
        // URLSession's own timeout covers idle time; this bounds the whole exchange.
        if exchange.done.wait(timeout: .now() + HTTPExchange.seconds(timeout) * 2 + 1) == .timedOut {
            task.cancel()
            _ = exchange.done.wait(timeout: .now() + 1)
            delegate.exchanges.withLock {
                $0[task.taskIdentifier] = nil
                exchange.bodySent = nil
            }
            return .failed("timed out after \(timeout)")
        }
        return delegate.exchanges.withLock { _ -> HTTPAnswer in
            if let response = exchange.response {
                var headers: [String: String] = [:]
                for (key, value) in response.allHeaderFields { headers["\(key)".lowercased()] = "\(value)" }
                return .response(status: response.statusCode, headers: headers, body: exchange.body)
            }
            return .failed(exchange.error.map { ($0 as NSError).localizedDescription } ?? "no response")
        }
    }
}
