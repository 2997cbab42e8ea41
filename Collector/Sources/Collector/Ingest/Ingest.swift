// The two upload endpoints without HTTP plumbing: seed 000's POST /api/v1/qa/diagnostics and seed
// 003's POST /api/logs, answering as Tests/Support/fake_collector.py does (the runtime's tests
// were written against it). Checks run in its order: token, size, idempotency, then the payload.
import CrashReportModel
import Crypto
import Foundation
import Logging

/// A JSON answer: status and body.
struct APIAnswer: Sendable {
    var status: Int
    var body: Data
    /// Sent as Retry-After (seconds) with a 429.
    var retryAfter: Int? = nil
    /// The upload limit this answer refuses for (ValidationFailure.limit, "body_bytes",
    /// "inflated_bytes"): counted by /metrics, never sent.
    var limit: String? = nil

    static func json(_ status: Int, _ value: some Encodable) -> APIAnswer {
        APIAnswer(status: status, body: (try? JSONEncoder.api.encode(value)) ?? Data("{}".utf8))
    }

    static func error(_ status: Int, _ error: String, _ message: String, details: [String]? = nil) -> APIAnswer {
        .json(status, ErrorBody(error: error, message: message, details: details))
    }

    static let unauthorized = error(401, "unauthorized", "Missing or invalid bearer token")
    static let tooLarge: APIAnswer = {
        var answer = json(413, TooLargeBody(
            error: "payload_too_large", message: "Payload exceeds 5MB limit", max_size_bytes: CollectorConfiguration.seedBodyLimit))
        answer.limit = "body_bytes"
        return answer
    }()

    /// A gzip'd body that inflates past the collector's cap: the seed's 413, the cap named beside
    /// the 5 MB the runtime shrinks its payload to.
    static func inflatesTooLarge(limit: Int) -> APIAnswer {
        var answer = json(413, TooLargeBody(
            error: "payload_too_large", message: "Payload inflates past the \(limit)-byte limit",
            max_size_bytes: CollectorConfiguration.seedBodyLimit, max_inflated_bytes: limit))
        answer.limit = "inflated_bytes"
        return answer
    }

    /// A 400 naming what is wrong (and, for a limit passed, which one).
    static func invalid(_ failure: ValidationFailure) -> APIAnswer {
        var answer = error(400, "validation_failed", failure.message, details: failure.details)
        answer.limit = failure.limit
        return answer
    }
}

struct ErrorBody: Codable {
    var error: String
    var message: String
    var details: [String]?
}

struct TooLargeBody: Codable {
    var error: String
    var message: String
    var max_size_bytes: Int
    var max_inflated_bytes: Int? = nil
}

/// Seed 000's 201 body.
struct AcceptedBody: Codable {
    var diagnostics_id: String
    var test_run_id: String
    var received_at: String
    var status: String
}

struct LogsAcceptedBody: Codable {
    var accepted: Int
}

/// A request body as read: whole, or cut off at the limit.
enum ReceivedBody: Sendable {
    case complete([UInt8])
    case tooLarge
}

extension JSONEncoder {
    /// Sorted keys (the same answer is the same bytes) and slashes as sent (URLs stay readable).
    static var api: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}

struct Ingest: Sendable {
    let store: any Store
    let configuration: CollectorConfiguration
    var logger: Logger?

    /// Constant-time against each accepted token, so the answer's timing does not tell how much
    /// of a guessed token was right.
    func isAuthorized(_ authorization: String?) -> Bool { token(authorization) != nil }

    /// The accepted token the header carries, found in constant time; nil when none.
    func token(_ authorization: String?) -> String? {
        guard let authorization, authorization.hasPrefix("Bearer ") else { return nil }
        let offered = Array(authorization.dropFirst("Bearer ".count).utf8)
        var matched: String?
        for token in configuration.ingestTokens where !token.isEmpty {
            if constantTimeEqual(offered, Array(token.utf8)) { matched = token }
        }
        return matched
    }

    /// A 403 when `token` is bound to apps and `bundleIDs` names another; nil to go on.
    func forbidden(_ token: String?, writingFor bundleIDs: [String]) -> APIAnswer? {
        guard let token, let allowed = configuration.tokenBundleIDs[token] else { return nil }
        let others = Array(Set(bundleIDs.filter { !allowed.contains($0) })).sorted()
        guard !others.isEmpty else { return nil }
        return .error(403, "forbidden", "This token may not write for \(others.joined(separator: ", "))",
                      details: others.map { "\($0): not an app of this token" })
    }

    func diagnostics(authorization: String?, idempotencyKey: String?, contentEncoding: String?, body: ReceivedBody,
                     now: Date = Date()) async throws -> APIAnswer {
        guard let token = self.token(authorization) else { return .unauthorized }
        guard case .complete(let raw) = body else { return .tooLarge }
        if let idempotencyKey, idempotencyKey.utf8.count > Idempotency.maxKeyBytes {
            return .error(400, "validation_failed", "Idempotency-Key longer than \(Idempotency.maxKeyBytes) bytes",
                          details: ["Idempotency-Key: at most \(Idempotency.maxKeyBytes) bytes"])
        }
        let payload: DiagnosticsPayload
        let key: Idempotency?
        var sent: (body: [UInt8], ranges: StoredAsSent)?
        do {
            let json = try inflated(raw, contentEncoding: contentEncoding, limits: .diagnosticsUpload)
            // Scoped to the token: another token's key is another key. A repeat (same token, same
            // key, same JSON) gets the first answer; the same key with another body is a 409. The
            // store answers both from its write (`IngestOutcome.duplicate`): a separate look-up
            // first cost every upload a second trip to the database for the rare repeat's sake.
            key = idempotencyKey.flatMap { $0.isEmpty ? nil : Idempotency(token: token, key: $0, body: json) }
            try UploadLimits.diagnosticsUpload.check(json)
            let decoded = try PayloadDecoding.decoded(json)
            payload = decoded.payload
            if decoded.asSent, let ranges = StoredAsSent.find(in: json), ranges.reports.count == payload.crash_reports.count {
                sent = (json, ranges)
            }
        } catch let failure as ValidationFailure {
            return .invalid(failure)
        } catch Gzip.Failure.tooLarge(let limit) {
            return .inflatesTooLarge(limit: limit)
        } catch {
            return .error(400, "validation_failed", "\(error)", details: ["\(error)"])
        }

        if let answer = forbidden(token, writingFor: [payload.app_metadata.bundle_id]) { return answer }

        let answer = AcceptedBody(diagnostics_id: Self.newDiagnosticsID(), test_run_id: payload.test_run_id,
                                  received_at: Timestamp.format(now), status: "accepted")
        let answerText = String(decoding: try JSONEncoder.api.encode(answer), as: UTF8.self)
        let record = try Self.record(payload, diagnosticsID: answer.diagnostics_id, idempotencyKey: key?.storedKey,
                                     answer: key?.stored(answerText) ?? answerText, receivedAt: now, sent: sent)
        switch try await store.ingest(record) {
        case .stored:
            // Raw reports are stored as sent and grouped by module and offset; the worker finishes
            // them after this answer and moves them to the issue their function names sign.
            if let symbolication = configuration.symbolication, payload.crash_reports.contains(where: ArrivalSymbolication.needsSymbolication),
               !symbolication.enqueue(diagnosticsID: answer.diagnostics_id, token: token, store: store, logger: logger) {
                let full = "symbolication: queue full (\(symbolication.limits.queuedUploads) uploads): upload \(answer.diagnostics_id) "
                    + "(\(payload.app_metadata.bundle_id)) stays raw; `crash-collector resymbolicate` finishes it"
                logger?.warning("\(full)")
                configuration.metrics.symbolicationQueueFull()
            }
            return APIAnswer(status: 201, body: Data(answerText.utf8))
        case .duplicate(let first): return key?.answer(repeating: first) ?? APIAnswer(status: 201, body: Data(first.utf8))
        }
    }

    /// The payload as stored: one report per crash_reports entry, each with its issue. With `sent`
    /// (the body the payload was decoded from as sent, and where its reports are), the copies are
    /// cut from it instead of encoded again.
    static func record(_ payload: DiagnosticsPayload, diagnosticsID: String, idempotencyKey: String?, answer: String,
                       receivedAt: Date, sent: (body: [UInt8], ranges: StoredAsSent)? = nil) throws -> IngestRecord {
        let encoder = JSONEncoder.api
        let userID = payload.user_id.flatMap { $0.isEmpty ? nil : $0 }
        let reports = try payload.crash_reports.enumerated().map { index, report in
            IngestRecord.Report(
                reportID: report.report_id, kind: report.kind,
                occurredAt: Timestamp.parse(report.timestamp) ?? receivedAt, exceptionType: report.exception_type,
                exceptionMessage: report.exception_message, symbolicated: report.symbolicated,
                reportJSON: try sent.map { $0.ranges.reportJSON(index, of: $0.body) } ?? String(decoding: encoder.encode(report), as: UTF8.self),
                issue: Grouping.issueKey(for: report))
        }
        // The upload's copy keeps what its events show beside their report (logs, network
        // errors, custom data and keys, the app and host); each crash report is its own row, so
        // it is not stored (nor encoded) a second time here.
        let payloadJSON: String
        if let sent {
            payloadJSON = sent.ranges.uploadJSON(of: sent.body)
        } else {
            var rest = payload
            rest.crash_reports = []
            payloadJSON = String(decoding: try encoder.encode(rest), as: UTF8.self)
        }
        return IngestRecord(
            diagnosticsID: diagnosticsID, idempotencyKey: idempotencyKey, testRunID: payload.test_run_id, receivedAt: receivedAt,
            answer: answer, app: payload.app_metadata, userID: userID,
            userKey: userKey(userID: userID, deviceIdentifier: payload.device_metadata.device_identifier),
            payloadJSON: payloadJSON, reports: reports,
            session: .init(sessionID: payload.test_run_id, appVersion: payload.app_metadata.app_version,
                           crashed: payload.crash_reports.contains { $0.kind == "crash" },
                           day: utcDay(sessionDate(payload, receivedAt: receivedAt))))
    }

    /// When the session ran: its earliest report, else when the payload was collected; never in
    /// the future (a host with a wrong clock), never before the epoch of sane clocks.
    static func sessionDate(_ payload: DiagnosticsPayload, receivedAt: Date) -> Date {
        let reported = payload.crash_reports.compactMap { Timestamp.parse($0.timestamp) }.min()
            ?? Timestamp.parse(payload.timestamp_collected) ?? receivedAt
        return plausible(reported, receivedAt: receivedAt)
    }

    /// Whether a POST /api/logs may go on (checked before its body is read).
    func mayPostLogs(authorization: String?) -> Bool {
        (configuration.acceptAnonymousLogs && authorization == nil) || isAuthorized(authorization)
    }

    func apiLogs(authorization: String?, contentEncoding: String?, body: ReceivedBody, now: Date = Date()) async throws -> APIAnswer {
        guard mayPostLogs(authorization: authorization) else { return .unauthorized }
        let token = self.token(authorization)
        guard case .complete(let raw) = body else { return .tooLarge }
        let events: [JSONValue]
        do {
            let json = try inflated(raw, contentEncoding: contentEncoding, limits: .apiLogs)
            try UploadLimits.apiLogs.check(json)
            switch try JSONDecoder().decode(JSONValue.self, from: Data(json)) {
            case .array(let values): events = values
            case let value: events = [value]
            }
        } catch let failure as ValidationFailure {
            return .invalid(failure)
        } catch Gzip.Failure.tooLarge(let limit) {
            return .inflatesTooLarge(limit: limit)
        } catch {
            let reason = error is Gzip.Failure ? "\(error)" : "invalid JSON: \(PayloadDecoding.describe(error))"
            return .error(400, "validation_failed", reason, details: [])
        }
        var records: [APILogRecord] = []
        var problems: [String] = []
        for (index, event) in events.enumerated() {
            guard case .object(let fields) = event else {
                problems.append("\(index): an api_log event must be an object")
                continue
            }
            if let type = fields["type"], type != .string("api_log") { problems.append("\(index)/type: must be \"api_log\"") }
            records.append(APILogRecord(
                receivedAt: now, appID: fields["appId"]?.string, method: fields["method"]?.string, url: fields["url"]?.string,
                statusCode: fields["statusCode"]?.integer.map { Int($0) }, duration: fields["duration"]?.integer.map { Int($0) },
                timestamp: fields["timestamp"]?.integer,
                eventJSON: String(decoding: try JSONEncoder.api.encode(event), as: UTF8.self)))
        }
        if !problems.isEmpty {
            return .error(400, "validation_failed", problems[0], details: problems)
        }
        // A token bound to apps writes only their logs: each event names its appId.
        if let token, configuration.tokenBundleIDs[token] != nil {
            if let answer = forbidden(token, writingFor: records.map { $0.appID ?? "(no appId)" }) { return answer }
        }
        let stored = try await store.insertAPILogs(records)
        return .json(201, LogsAcceptedBody(accepted: stored))
    }

    /// The body as JSON text: inflated when gzip'd, with `limits` looked at as it inflates.
    func inflated(_ raw: [UInt8], contentEncoding: String?, limits: UploadLimits) throws -> [UInt8] {
        guard let encoding = contentEncoding?.trimmingCharacters(in: .whitespaces).lowercased(), !encoding.isEmpty,
              encoding != "identity" else { return raw }
        guard encoding == "gzip" || encoding == "x-gzip" else {
            throw ValidationFailure(message: "Unsupported Content-Encoding: \(encoding)", details: ["only gzip is accepted"])
        }
        return try Gzip.decompress(raw, limit: configuration.maxInflatedBytes, checkpoint: limits.checkPrefix)
    }

    /// "diag_" and 16 random hex digits, as fake_collector.py answers.
    static func newDiagnosticsID() -> String {
        // One 64-bit draw: a draw per byte was eight calls into the system's generator.
        var generator = SystemRandomNumberGenerator()
        return "diag_" + hexString(withUnsafeBytes(of: generator.next() as UInt64) { Array($0) })
    }
}

/// Who "a user" is for counting, in uploads and session beacons alike: the user id, else the
/// host's device identifier.
func userKey(userID: String?, deviceIdentifier: String) -> String {
    userID.flatMap { $0.isEmpty ? nil : $0 } ?? "device:\(deviceIdentifier)"
}

/// A sender's date as counted: never in the future (a host with a wrong clock), never before the
/// epoch of sane clocks; the time it arrived instead.
func plausible(_ date: Date, receivedAt: Date) -> Date {
    date > receivedAt || date.timeIntervalSince1970 < 1_000_000_000 ? receivedAt : date
}

func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    var difference = UInt8(a.count == b.count ? 0 : 1)
    for index in 0..<max(a.count, b.count) {
        difference |= (index < a.count ? a[index] : 0) ^ (index < b.count ? b[index] : 0)
    }
    return difference == 0
}

extension JSONValue {
    var string: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    /// Integers, and doubles that hold one (a JavaScript client's 124.0).
    var integer: Int64? {
        switch self {
        case .int(let number): return Int64(number)
        case .double(let number) where number.rounded() == number && abs(number) < 9e18: return Int64(number)
        default: return nil
        }
    }
}

/// An Idempotency-Key as stored: scoped to the token that sent it (a hash of the token, never the
/// token), with a digest of the JSON it came with kept after the first answer, so that the same key
/// with another body is told apart (409) from a repeat (the first answer again).
struct Idempotency {
    static let maxKeyBytes = 256

    /// "t" + 16 hex digits of SHA-256(token) + ":" + the key as sent.
    let storedKey: String
    /// SHA-256 of the inflated JSON, hex.
    let digest: String

    init(token: String, key: String, body: [UInt8]) {
        let scope = hexString(SHA256.hash(data: Data(token.utf8))).prefix(16)
        storedKey = "t\(scope):\(key)"
        digest = hexString(SHA256.hash(data: body))
    }

    /// What the uploads table keeps as the answer: the 201 body, a newline (JSON text written by
    /// JSONEncoder has none), the body's digest.
    func stored(_ answer: String) -> String { answer + "\nsha256:" + digest }

    /// The answer to a repeat of a stored key: the first answer for the same body, 409 otherwise.
    /// An answer stored before keys had digests is taken as the same body.
    func answer(repeating stored: String) -> APIAnswer {
        guard let newline = stored.lastIndex(of: "\n") else { return APIAnswer(status: 201, body: Data(stored.utf8)) }
        let first = String(stored[..<newline])
        guard stored[stored.index(after: newline)...] == "sha256:" + digest else {
            return .error(409, "idempotency_conflict", "This Idempotency-Key was already used with another body",
                          details: ["Idempotency-Key: reused with a different payload"])
        }
        return APIAnswer(status: 201, body: Data(first.utf8))
    }
}
