// What privacy costs an upload pass, off the app's threads: seed 000's redaction of a payload of
// 500 breadcrumbs (with metadata) and a 64 KiB API body (alone, and with the pass's memo as the
// pipeline runs it), the verify stage (with and without the encoding it makes, which the send
// reuses), then the outgoing check (LeakScanner) over the gzip'd body the destination sends,
// beside encoding + gzip alone (the baseline every upload pays) and the verify stage and the check
// as they were before Decision 0040, in the same run. Prints medians and ratios; not a test.
// Usage: PrivacyBenchmark [rounds]
import CrashReportModel
@_spi(Benchmarks) import CrashReporting
import Foundation

let rounds = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 15 : 15
// PRIVACY_BENCH_PASS_ONLY=1: only what an upload pass runs (for a profile: perf record).
let passOnly = ProcessInfo.processInfo.environment["PRIVACY_BENCH_PASS_ONLY"] == "1"

let host = HostMetadata(device_model: "x86_64", device_identifier: "5f1c0e2a9b7d", ios_version: "Debian 12", locale: "C.UTF-8",
                        timezone: "UTC", is_simulator: false, available_storage_mb: 1024, total_memory_mb: 24_000)
let app = AppMetadata(app_name: "orders", app_version: "2.4.1", build_number: "241", bundle_id: "com.example.orders", environment: "production")
let routes = ["/v1/orders/:id", "/v1/users/:id/cart", "/health", "/v1/checkout", "/v1/search"]

func makePayload() -> DiagnosticsPayload {
    var payload = DiagnosticsPayload(
        test_run_id: "6f1f6c1e-3f7b-4c1a-9d1e-6a0e2b7c9d10", app_metadata: app, device_metadata: host,
        timestamp_collected: "2026-11-26T00:00:00.000Z", logs: [], network_errors: [], crash_reports: [], screenshots: [])
    for index in 0..<500 {
        let route = routes[index % routes.count]
        let message: String
        switch index % 5 {
        case 0: message = "GET \(route) 200 in \(index % 17 + 2) ms"
        case 1: message = "cache miss for order \(100_000 + index) (region eu-west-1), fetching from 10.0.3.\(index % 250)"
        case 2: message = "user 018f3c1e-\(String(format: "%04x", index))-7abc-9def-0123456789ab opened cart with \(index % 9) items"
        case 3: message = "retrying payment provider call, attempt \(index % 3 + 1) of 3, backoff \(index % 700) ms"
        default: message = "Fatal error would be: Index out of range in OrderService.total(for:) at Sources/App/Orders.swift:\(index % 300)"
        }
        payload.logs.append(.init(timestamp: "2026-11-26T00:00:\(String(format: "%02d", index % 60)).000Z", level: "info", tag: "http",
                                  message: message,
                                  metadata: ["hb.request.id": .string(String(format: "%032x", index * 7919)), "route": .string(route),
                                             "status": .int(200)]))
    }
    // A 64 KiB API body (JSON order lines), as network logging records it.
    var body = "{\"orders\":["
    var line = 0
    while body.utf8.count < 64 * 1024 {
        body += "{\"sku\":\"SKU-\(line)\",\"quantity\":\(line % 5 + 1),\"price\":\"\(line % 90).99\",\"note\":\"gift wrap, deliver after 6pm\"},"
        line += 1
    }
    body += "{}]}"
    payload.custom_data["last_request_body"] = .string(body)
    return payload
}

/// The baseline every upload pays: its own function, so that `tools/bench-privacy --instructions`
/// can count its instructions.
@inline(never) func encodeAndGzip(_ payload: DiagnosticsPayload) -> Data? { try? Gzip.compress(payload.encoded()) }

func median(_ values: [Double]) -> Double { values.isEmpty ? .nan : values.sorted()[values.count / 2] }
func ms(_ duration: Duration) -> Double { Double(duration.components.attoseconds) / 1e15 + Double(duration.components.seconds) * 1e3 }

let clock = ContinuousClock()

// PRIVACY_BENCH_CHECK=1: only the outgoing check, over the redacted payload's gzip'd body, each
// round (for `perf stat`: instructions vary less than time on a shared host).
if ProcessInfo.processInfo.environment["PRIVACY_BENCH_CHECK"] == "1" {
    var payload = makePayload()
    UploadPassPrivacy().redact(&payload)
    let body = try Gzip.compress(payload.encoded())
    var times: [Double] = []
    for _ in 0..<rounds {
        var result: (body: Data, kinds: [String])?
        times.append(ms(clock.measure { result = LeakScanner.cleanedBody(body, gzipped: true) }))
        precondition(result == nil, "the check masked something in the redacted payload")
    }
    print(String(format: "outgoing check alone: %.2f ms median of %d", median(times), rounds))
    exit(0)
}

// PRIVACY_BENCH_SCANNER=1: the scanner alone, no memo, over the payload's 500 breadcrumb messages
// and its 64 KiB body, with every detector run on every text (ungated) and as the check runs it.
if ProcessInfo.processInfo.environment["PRIVACY_BENCH_SCANNER"] == "1" {
    let payload = makePayload()
    let messages = payload.logs.map(\.message)
    guard case .string(let body)? = payload.custom_data["last_request_body"] else { fatalError("no body") }
    var figures: [String: [Double]] = [:]
    for _ in 0..<rounds {
        for (name, scanner) in [("ungated", LeakScanner(gated: false)), ("gated", LeakScanner())] {
            var found = 0
            figures["\(name) messages", default: []].append(ms(clock.measure {
                for message in messages { found += scanner.findings(in: message, key: "message", keyMayBeLabel: false).count }
            }))
            figures["\(name) body", default: []].append(ms(clock.measure { found += scanner.findings(in: body, key: "last_request_body", keyMayBeLabel: false).count }))
            precondition(found == 0, "the scanner found something in the benchmark's payload")
        }
    }
    for part in ["messages", "body"] {
        let ungated = median(figures["ungated \(part)"]!), gated = median(figures["gated \(part)"]!)
        print(String(format: "scanner, %@: ungated %6.2f ms, gated %6.2f ms (%.2fx)", part, ungated, gated, ungated / gated))
    }
    exit(0)
}
// PRIVACY_BENCH_PARTS=1: the pass's redaction and the outgoing check over the payload's two parts
// apart: the 500 breadcrumbs without the body, and the body alone.
if ProcessInfo.processInfo.environment["PRIVACY_BENCH_PARTS"] == "1" {
    let whole = makePayload()
    var breadcrumbs = whole
    breadcrumbs.custom_data = [:]
    var bodyOnly = whole
    bodyOnly.logs = []
    // Warm: the first redaction in a process compiles the rules' patterns.
    var warm = whole
    Redactor.seed000.apply(to: &warm)
    // PRIVACY_BENCH_PART=breadcrumbs or body: that part only (for callgrind).
    let only = ProcessInfo.processInfo.environment["PRIVACY_BENCH_PART"]
    for (name, part) in [("breadcrumbs", breadcrumbs), ("body", bodyOnly)] where only == nil || only == name {
        var redaction: [Double] = [], check: [Double] = []
        for _ in 0..<rounds {
            var payload = part
            let pass = UploadPassPrivacy()
            redaction.append(ms(clock.measure { pass.redact(&payload) }))
            let body = try Gzip.compress(payload.encoded())
            check.append(ms(clock.measure { _ = LeakScanner.cleanedBody(body, gzipped: true) }))
        }
        print(String(format: "%-12@ redaction (pass) %6.2f ms, check %6.2f ms", name, median(redaction), median(check)))
    }
    exit(0)
}
var encodeGzip: [Double] = [], redaction: [Double] = [], check: [Double] = [], bodyOnly: [Double] = []
var checkBodyOnly: [Double] = [], fullPass: [Double] = []
var passRedaction: [Double] = [], passVerify: [Double] = [], passVerifyEncoded: [Double] = [], verifyBefore: [Double] = []
var masked = 0
for _ in 0..<rounds {
    var payload = makePayload()
    let baseline = clock.measure { _ = encodeAndGzip(payload) }
    if case .string(let text)? = payload.custom_data["last_request_body"] {
        bodyOnly.append(ms(clock.measure { _ = Redactor.seed000.redact(text) }))
        checkBodyOnly.append(ms(clock.measure { _ = LeakScanner().findings(in: text, key: "last_request_body") }))
    }
    var alone = payload
    let redact = clock.measure { Redactor.seed000.apply(to: &alone) }
    // As an upload pass runs it: each distinct text redacted once (a memo made for the pass), then
    // the verify stage over the redacted payload.
    let pass = UploadPassPrivacy()
    let original = payload
    passRedaction.append(ms(clock.measure { pass.redact(&payload) }))
    var refused = 0
    passVerify.append(ms(clock.measure { refused = pass.verify(payload) }))
    // The stage encodes the payload, and the send reuses that encoding: the stage without it.
    if !passOnly {
        var copy = original
        let encoded = UploadPassPrivacy()
        encoded.redact(&copy)
        encoded.encode(copy)
        passVerifyEncoded.append(ms(clock.measure { _ = encoded.verify(copy) }))
    }
    // The same stage as it was before Decision 0040: Foundation's JSON tree, every check on every text.
    if !passOnly {
        let before = UploadPassPrivacy(verifierHints: false)
        verifyBefore.append(ms(clock.measure { _ = before.verify(payload, readingBytes: false) }))
    }
    precondition(refused == 0 && alone == payload, "the pass's redaction differs from the redactor's, or its verifier refused")
    let body = try Gzip.compress(payload.encoded())
    var result: (body: Data, kinds: [String])?
    let scan = clock.measure { result = LeakScanner.cleanedBody(body, gzipped: true) }
    // The check as it was before its first pass (Decision 0040): a Foundation JSON tree, rebuilt.
    if !passOnly { fullPass.append(ms(clock.measure { _ = LeakScanner.cleanedBody(body, gzipped: true, firstPass: false) })) }
    masked = result?.kinds.count ?? 0
    encodeGzip.append(ms(baseline))
    redaction.append(ms(redact))
    check.append(ms(scan))
}
let total = median(redaction) + median(check)
let passTotal = median(passRedaction) + median(passVerify) + median(check)
print("payload: 500 breadcrumbs with metadata + a 64 KiB API body; \(rounds) rounds, medians")
print(String(format: "encode + gzip (baseline)           %8.2f ms", median(encodeGzip)))
print(String(format: "seed 000 redaction                 %8.2f ms  (%.1fx baseline)", median(redaction), median(redaction) / median(encodeGzip)))
print(String(format: "  of which the 64 KiB body alone     %8.2f ms", median(bodyOnly)))
print(String(format: "  as an upload pass runs it (memo)   %8.2f ms", median(passRedaction)))
print(String(format: "verify stage (seed 000's verifier)   %8.2f ms", median(passVerify)))
print(String(format: "  without encoding the payload       %8.2f ms  (the send reuses that encoding)", median(passVerifyEncoded)))
print(String(format: "  before (Foundation tree, no hints)  %7.2f ms  (%.1fx)", median(verifyBefore), median(verifyBefore) / median(passVerify)))
print(String(format: "outgoing check (gunzip, scan)      %8.2f ms  (%.1fx baseline)", median(check), median(check) / median(encodeGzip)))
print(String(format: "  of which the 64 KiB body alone     %8.2f ms", median(checkBodyOnly)))
print(String(format: "  the full pass alone (no first pass) %7.2f ms  (first pass saves %.0f %%)", median(fullPass), 100 * (1 - median(check) / median(fullPass))))
print(String(format: "redaction + check                  %8.2f ms  (target <= 5 ms)", total))
print(String(format: "  redaction as the pass runs it + check %5.2f ms", median(passRedaction) + median(check)))
print(String(format: "an upload pass's privacy work       %8.2f ms  (redaction with its memo, verify stage, check)", passTotal))
print(String(format: "  without the encoding the send reuses %6.2f ms", median(passRedaction) + median(passVerifyEncoded) + median(check)))
print("findings the outgoing check masked in the redacted payload: \(masked)")
