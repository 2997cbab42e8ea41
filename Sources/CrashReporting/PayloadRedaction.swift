// Which parts of a payload are people's text (redacted, then checked) and which are machine
// facts (addresses, build-ids, symbols, paths: left alone, since a 40-hex build-id looks like a
// token to any pattern and rewriting one would make the report useless).
import CrashReportModel
import Foundation

enum PayloadRedaction {
    /// Keys whose values the verifier skips: written by the handler or symbolication, not by people.
    static let machineKeys: Set<String> = [
        "build_id", "address", "module_offset", "start", "end", "bias", "fault_address", "path", "module", "file",
        "function", "stack_trace", "report_id", "test_run_id", "timestamp", "timestamp_collected", "received_at",
        "device_identifier", "hostname_hash", "cpu_model", "ios_version", "device_model", "locale", "timezone",
        "app_version", "build_number", "bundle_id", "app_name", "environment", "exception_type", "code_name",
        "kind", "level", "request_method", "error_type", "virtualization", "battery_state",
    ]
}

/// Remembers what redaction and verification made of each text during one upload pass: records
/// of one process share most of their breadcrumbs, and regular expressions are the pass's main cost.
final class RedactionMemo {
    let redactor: Redactor
    private let verifier: RedactionVerifier?
    private var redacted: [String: String] = [:]
    private var clean: Set<String> = []

    init(redactor: Redactor, verifier: RedactionVerifier?) {
        self.redactor = redactor
        self.verifier = verifier
    }

    func redact(_ text: String) -> String {
        if let known = redacted[text] { return known }
        let result = redactor.redact(text)
        if redacted.count > 50_000 { redacted.removeAll() }
        redacted[text] = result
        return result
    }

    /// What the verifier still finds in the payload's people's text (machine fields skipped).
    func findings(in payload: DiagnosticsPayload) -> [RedactionVerifier.Finding] {
        guard let verifier, let data = try? payload.encoded(),
              let root = try? JSONSerialization.jsonObject(with: data) else { return [] }
        var found: [RedactionVerifier.Finding] = []
        func walk(_ value: Any, key: String?) {
            if let key, PayloadRedaction.machineKeys.contains(key) { return }
            switch value {
            case let text as String:
                guard !clean.contains(text) else { return }
                let hits = verifier.findings(in: text)
                if hits.isEmpty { clean.insert(text) } else { found += hits }
            case let array as [Any]:
                for element in array { walk(element, key: key) }
            case let object as [String: Any]:
                for (name, element) in object { walk(element, key: name) }
            default:
                break
            }
        }
        walk(root, key: nil)
        return found
    }
}

extension Redactor {
    /// Redacts every free text of `payload`: log messages and metadata, network error URLs and
    /// messages, crash and error messages, error userInfo, custom data, key values, the user id.
    public func apply(to payload: inout DiagnosticsPayload) {
        apply(to: &payload, redact: redact)
    }

    func apply(to payload: inout DiagnosticsPayload, redact: (String) -> String) {
        for index in payload.logs.indices {
            payload.logs[index].message = redact(payload.logs[index].message)
            payload.logs[index].metadata = payload.logs[index].metadata?.mapValues { $0.mapStrings(redact) }
        }
        for index in payload.network_errors.indices {
            if let url = URL(string: payload.network_errors[index].request_url) {
                payload.network_errors[index].request_url = redactURL(url)
            }
            payload.network_errors[index].error_message = redact(payload.network_errors[index].error_message)
        }
        for index in payload.crash_reports.indices {
            payload.crash_reports[index].exception_message = redact(payload.crash_reports[index].exception_message)
            if var error = payload.crash_reports[index].error {
                error.message = redact(error.message)
                error.user_info = error.user_info.mapStrings(redact)
                error.underlying = error.underlying.map { $0.mapStrings(redact) }
                payload.crash_reports[index].error = error
            }
        }
        payload.custom_data = payload.custom_data.mapValues { $0.mapStrings(redact) }
        payload.custom_keys = payload.custom_keys.mapValues { $0.mapStrings(redact) }
        payload.user_id = payload.user_id.map(redact)
        for index in payload.screenshots.indices {
            payload.screenshots[index].screen_name = redact(payload.screenshots[index].screen_name)
        }
    }
}
