// Requests in flight, for servers: a framework middleware calls `beginRequest` as a request starts
// and `endRequest` as it ends, and a crash report lists the requests that were running (route,
// method, request id, trace id, age, and whether it started on the crashing thread). The table is
// 128 fixed slots in static memory, read by the signal handler without locks.
import CCrashCapture

extension CrashReporter {
    /// A request's slot in the table; pass it to `endRequest`.
    public struct RequestToken: Sendable, Equatable {
        let slot: Int32
        /// False when every slot was taken (the request is counted as dropped in reports).
        public var isRecorded: Bool { slot != 0 }
    }

    /// Records a request as in flight. `route` is the pattern (`/users/{id}`), not the path, so no
    /// id or query string is kept. Texts are cut at 16 (method), 192 (route) and 64 bytes (ids).
    /// Lock-free and allocation-free; works before `start` too (the table is static).
    public static func beginRequest(method: String, route: String, requestID: String = "", traceID: String = "") -> RequestToken {
        var method = method, route = route, requestID = requestID, traceID = traceID
        let slot = method.withUTF8 { m in
            route.withUTF8 { r in
                requestID.withUTF8 { i in
                    traceID.withUTF8 { t in
                        ccr_request_begin(m.baseAddress, m.count, r.baseAddress, r.count, i.baseAddress, i.count, t.baseAddress, t.count)
                    }
                }
            }
        }
        return RequestToken(slot: slot)
    }

    /// Ends what `beginRequest` started.
    public static func endRequest(_ token: RequestToken) {
        ccr_request_end(token.slot)
    }

    /// Requests begun and not yet ended in this process.
    public static var requestsInFlight: Int { Int(ccr_requests_in_flight()) }
}
