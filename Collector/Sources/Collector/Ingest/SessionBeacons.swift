// POST /api/v1/sessions: the runtime's session beacons, so that crash-free session and user rates
// count the sessions that never upload anything (a clean run sends no diagnostics). Wire format:
// {"sessions": [{session_id, started_at, bundle_id, app_version, build_number, user_id?, device_identifier?}]},
// 1…1000 entries, answered 202 {"accepted": n}.
import CrashReportModel
import Foundation

struct SessionsAcceptedBody: Codable {
    var accepted: Int
}

extension Ingest {
    static let maxBeaconsPerRequest = 1000
    /// Longer strings are refused: identifiers and versions, not free text.
    static let maxBeaconFieldLength = 256

    func sessions(authorization: String?, contentEncoding: String?, body: ReceivedBody, now: Date = Date()) async throws -> APIAnswer {
        guard isAuthorized(authorization) else { return .unauthorized }
        guard case .complete(let raw) = body else { return .tooLarge }
        let beacons: [SessionBeacon]
        do {
            let json = try inflated(raw, contentEncoding: contentEncoding, limits: .sessionBeacons)
            try UploadLimits.sessionBeacons.check(json)
            let value = try JSONDecoder().decode(JSONValue.self, from: Data(json))
            beacons = try Self.beacons(value, receivedAt: now)
        } catch let failure as ValidationFailure {
            return .invalid(failure)
        } catch Gzip.Failure.tooLarge(let limit) {
            return .inflatesTooLarge(limit: limit)
        } catch {
            let reason = error is Gzip.Failure ? "\(error)" : "invalid JSON: \(PayloadDecoding.describe(error))"
            return .error(400, "validation_failed", reason, details: [reason])
        }
        // A token bound to apps counts sessions of its apps only.
        if let answer = forbidden(token(authorization), writingFor: beacons.map(\.bundleID)) { return answer }
        try await store.recordSessions(beacons, receivedAt: now)
        return .json(202, SessionsAcceptedBody(accepted: beacons.count))
    }

    /// The body's entries, every problem listed (as "index/field: what is wrong") when there is one.
    static func beacons(_ body: JSONValue, receivedAt: Date) throws -> [SessionBeacon] {
        guard case .object(let fields) = body, case .array(let entries)? = fields["sessions"] else {
            throw ValidationFailure(message: "The body must be an object with a \"sessions\" array",
                                    details: ["sessions: required, an array of 1 to \(maxBeaconsPerRequest) sessions"])
        }
        guard (1...maxBeaconsPerRequest).contains(entries.count) else {
            let detail = "sessions: \(entries.count) entries, 1 to \(maxBeaconsPerRequest) are accepted"
            throw ValidationFailure(message: detail, details: [detail])
        }
        var problems: [String] = []
        var beacons: [SessionBeacon] = []
        for (index, entry) in entries.enumerated() {
            guard case .object(let session) = entry else {
                problems.append("sessions/\(index): must be an object")
                continue
            }
            func text(_ name: String, required: Bool, allowEmpty: Bool = true) -> String? {
                switch session[name] {
                case .string(let value)?:
                    if !allowEmpty && value.isEmpty {
                        problems.append("sessions/\(index)/\(name): must not be empty")
                    } else if value.count > maxBeaconFieldLength {
                        problems.append("sessions/\(index)/\(name): longer than \(maxBeaconFieldLength) characters")
                    } else {
                        return value
                    }
                case nil, .null?:
                    if required { problems.append("sessions/\(index)/\(name): required string") }
                default:
                    problems.append("sessions/\(index)/\(name): must be a string\(required ? "" : " or null")")
                }
                return nil
            }
            let sessionID = text("session_id", required: true, allowEmpty: false)
            let bundleID = text("bundle_id", required: true, allowEmpty: false)
            let appVersion = text("app_version", required: true)
            let buildNumber = text("build_number", required: true)
            let userID = text("user_id", required: false)
            let device = text("device_identifier", required: false)
            var started: Date?
            if let startedAt = text("started_at", required: true) {
                started = Timestamp.parse(startedAt)
                if started == nil { problems.append("sessions/\(index)/started_at: not an ISO 8601 date-time") }
            }
            guard let sessionID, let bundleID, let appVersion, let buildNumber, let started else { continue }
            beacons.append(SessionBeacon(
                sessionID: sessionID, bundleID: bundleID, appVersion: appVersion, buildNumber: buildNumber,
                userKey: userKey(userID: userID, deviceIdentifier: device ?? ""),
                day: utcDay(plausible(started, receivedAt: receivedAt))))
        }
        if !problems.isEmpty {
            throw ValidationFailure(message: problems[0], details: problems)
        }
        return beacons
    }
}
