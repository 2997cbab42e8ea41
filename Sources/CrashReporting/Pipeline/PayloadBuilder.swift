// From a record on disk to seed 000's DiagnosticsPayload: one record, one payload (its id is the
// upload's idempotency key). Frames keep their build-ids and module offsets next to the symbols,
// so a server can finish what this host could not symbolicate. Redaction and limits come after.
import CrashReportModel
import Foundation

struct PayloadBuilder {
    var app: AppMetadata
    var host: HostMetadata
    var droppedReports: Int = 0
    var reporterVersion = CrashReporter.version

    func payload(record: CrashRecord, report: CrashReport, collected: Date = Date()) -> DiagnosticsPayload {
        var app = app
        if !record.appVersion.isEmpty { app.app_version = record.appVersion }   // the version that crashed
        if !record.appID.isEmpty { app.bundle_id = record.appID }

        if app.environment.isEmpty { app.environment = "production" }
        var logs: [DiagnosticsPayload.LogEntry] = []
        var network: [NetworkErrorDigest] = []
        for crumb in record.breadcrumbs {
            if var digest = CrashReporter.digest(from: crumb) {
                // Within the schema whatever the app logged: an HTTP status or nothing.
                if let status = digest.status_code, !(100...599).contains(status) { digest.status_code = nil }
                digest.retry_count = max(0, digest.retry_count)
                digest.request_duration_ms = max(0, digest.request_duration_ms)
                network.append(digest)
                continue
            }
            var metadata = crumb.metadata?.mapValues { JSONValue.string($0) }
            if crumb.kind != "log" {   // screen views and actions: say which, the seed's LogEntry has no field for it
                metadata = (metadata ?? [:]).merging(["breadcrumb_kind": .string(crumb.kind)]) { current, _ in current }
            }
            logs.append(.init(timestamp: Timestamp.iso8601(crumb.timestamp), level: Self.level(crumb.level),
                              tag: crumb.tag.isEmpty ? crumb.kind : crumb.tag, message: crumb.message, metadata: metadata))
        }

        var keys: [String: JSONValue] = [:]
        for key in record.customKeys {
            switch JSONValue(json: key.jsonValue) ?? .string(key.jsonValue) {
            case .array, .object, .null: continue   // Codable values: they travel in custom_data
            case let scalar: keys[key.key] = scalar
            }
        }
        var custom: [String: JSONValue] = [:]
        if let text = record.customDataJSON, case .object(let object)? = JSONValue(json: text) { custom = object }

        return DiagnosticsPayload(
            test_run_id: record.sessionID ?? record.id, app_metadata: app, device_metadata: host,
            timestamp_collected: Timestamp.iso8601(collected), logs: logs, network_errors: network,
            crash_reports: [entry(record: record, report: report)], custom_data: custom, user_id: record.userID,
            custom_keys: keys, reporter: .init(name: "swift-crash-reporting", version: reporterVersion, dropped_reports: droppedReports))
    }

    static func level(_ level: String) -> String {
        ["debug", "info", "warning", "error", "fatal"].contains(level) ? level : "info"
    }

    static func kind(of record: CrashRecord) -> String {
        if record.nonFatalError != nil { return "non_fatal" }
        if record.termination != nil { return "abnormal_termination" }
        if record.hang != nil { return "hang" }
        if record.diagnosticsTrigger != nil { return "diagnostics" }
        return "crash"
    }

    /// The frames a payload keeps of a thread's, at most `limit` (seed 000's 50). A longer stack
    /// keeps its outer frames (index ≥ `innermostCount`, the record's kept frames: where a
    /// recursion was entered, then the outermost) and its async callers besides as many innermost
    /// frames as fit, so the recursion's entry and the code that awaited the crash are in the
    /// report. A frame's inlined frames share its index and are kept or left together. In order
    /// of need: the innermost 20, the outermost 10 indices, the first 10 outer indices (the
    /// recursion's entry), the first 10 async indices, more innermost, more async; written innermost,
    /// outer, async, each in its order.
    static func selectFrames(_ frames: [CrashReport.Frame], innermostCount: Int, limit: Int) -> [CrashReport.Frame] {
        guard frames.count > limit else { return frames }
        func groups(_ frames: [CrashReport.Frame]) -> [[CrashReport.Frame]] {
            var result: [[CrashReport.Frame]] = []
            for frame in frames {
                if let last = result.last?.last, last.index == frame.index { result[result.count - 1].append(frame) } else { result.append([frame]) }
            }
            return result
        }
        let inner = groups(frames.filter { !$0.isAsync && $0.index < innermostCount })
        let outer = groups(frames.filter { !$0.isAsync && $0.index >= innermostCount })
        let awaiting = groups(frames.filter(\.isAsync))
        var room = limit
        var takenInner = 0, takenOuter = Set<Int>(), takenAsync = 0
        func take(_ group: [CrashReport.Frame]) -> Bool {
            guard group.count <= room else { return false }
            room -= group.count
            return true
        }
        var innerFrames = 0
        while takenInner < inner.count, innerFrames < 20, take(inner[takenInner]) {
            innerFrames += inner[takenInner].count
            takenInner += 1
        }
        for position in outer.indices.reversed().prefix(10) where take(outer[position]) { takenOuter.insert(position) }
        for position in outer.indices.prefix(10) where !takenOuter.contains(position) && take(outer[position]) { takenOuter.insert(position) }
        while takenAsync < min(10, awaiting.count), take(awaiting[takenAsync]) { takenAsync += 1 }
        while takenInner < inner.count, take(inner[takenInner]) { takenInner += 1 }
        while takenAsync < awaiting.count, take(awaiting[takenAsync]) { takenAsync += 1 }   // room left: more callers
        return inner.prefix(takenInner).flatMap { $0 } + outer.indices.filter(takenOuter.contains).flatMap { outer[$0] }
            + awaiting.prefix(takenAsync).flatMap { $0 }
    }

    func entry(record: CrashRecord, report: CrashReport) -> DiagnosticsPayload.CrashReportEntry {
        let kind = Self.kind(of: record)
        let buildIDs = Dictionary(report.images.map { ($0.path, $0.buildID.hex) }, uniquingKeysWith: { first, _ in first })
        func payloadFrames(_ frames: [CrashReport.Frame], innermostCount: Int = .max) -> [DiagnosticsPayload.Frame] {
            let kept = Self.selectFrames(frames, innermostCount: innermostCount, limit: DiagnosticsPayload.Limits.stackFrames)
            return kept.map { frame in
                DiagnosticsPayload.Frame(
                    index: frame.index, address: frame.address.description, module: frame.module.map(fileName(of:)),
                    module_offset: frame.moduleOffset?.description, build_id: frame.module.flatMap { buildIDs[$0] },
                    function: frame.function, file: frame.file, line: frame.line, column: frame.column, inlined: frame.isInlined,
                    async: frame.isAsync ? true : nil)
            }
        }
        let frames = payloadFrames(report.crashedThread.frames, innermostCount: record.frames.count)
        // Symbolicated when every module a frame points into had a matching binary or debug file
        // here, and the app's own modules had debug info (a stripped binary at its recorded path
        // matches, but names none of its frames: the server must finish that report).
        let used = Set(report.crashedThread.frames.compactMap(\.module))
        let usedImages = report.images.filter { used.contains($0.path) }
        let payloadImages = report.images.map {
            DiagnosticsPayload.Image(path: $0.path, build_id: $0.buildID.hex, start: $0.start.description, end: $0.end.description,
                                     bias: $0.bias.description)
        }
        let appModules = Set(frames.filter { CrashGrouping.isInApp($0, images: payloadImages) }.compactMap(\.module))
        let symbolicated = !frames.isEmpty && usedImages.allSatisfy {
            switch $0.symbols {
            case .recordedPath?, .debugFile?: return true
            default: return false
            }
        } && usedImages.filter { appModules.contains(fileName(of: $0.path)) }.allSatisfy(\.hasDebugInfo)

        let type: String
        var message: String
        switch kind {
        case "non_fatal":
            let error = record.nonFatalError!
            (type, message) = ("\(error.domain) \(error.code)", error.message)
        case "abnormal_termination":
            type = "abnormal_termination"
            switch record.termination?.kind {
            case "crash_without_record":
                message = "The process crashed but its crash record could not be read"
            case "oom_kill":
                let limit = record.memory?.limitBytes.map { " (memory limit \(Self.mebibytes($0)))" } ?? ""
                let last = record.memory?.samples.last.flatMap { $0.residentBytes }.map { "; last RSS sampled \(Self.mebibytes($0))" } ?? ""
                message = "The process was killed by the OOM killer\(limit)\(last)"
            default:
                message = "The process ended without a clean exit or a crash record (SIGKILL, the OOM killer, power loss)"
            }
        case "hang":
            let hang = record.hang!
            type = "hang"
            let lasted = hang.durationMilliseconds.map { "; it resumed after \(CrashReport.seconds($0))" }
                ?? "; still hung when the process ended"
            message = "\(hang.name) did not respond for \(CrashReport.seconds(hang.ageMilliseconds))\(lasted)"
        case "diagnostics":
            (type, message) = ("diagnostics", "Diagnostics snapshot (\(record.diagnosticsTrigger ?? "manual"))")
        default:
            type = record.signal?.name ?? "unknown"
            // The reason reads "SIGSEGV: invalid memory access…" as a headline; the entry has the
            // type in its own field.
            message = report.reason.hasPrefix(type + ": ") ? String(report.reason.dropFirst(type.count + 2)) : report.reason
        }
        if kind == "abnormal_termination", let afterHang = record.terminationAfterHang {
            message += ", after \(afterHang.name) stopped responding (hang report \(afterHang.reportID))"
        }
        let thread = DiagnosticsPayload.ThreadInfo(
            id: Int(report.crashedThread.id), name: report.crashedThread.name, crashed: kind == "crash",
            is_main: report.crashedThread.isMain, frames: frames)
        // The crashed thread first, then every other thread the record lists (seed 000's
        // thread_info is an array; each keeps at most 50 frames).
        let others = report.otherThreads.map {
            DiagnosticsPayload.ThreadInfo(id: Int($0.id), name: $0.name, crashed: false, is_main: $0.isMain,
                                          frames: payloadFrames($0.frames), state: $0.crashedToo != nil ? "crashed_too" : $0.state)
        }
        return .init(
            timestamp: Timestamp.iso8601(record.timestamp), exception_type: type, exception_message: message,
            stack_trace: frames.map(Self.line(of:)), thread_info: frames.isEmpty && kind != "crash" ? [] : [thread] + others,
            report_id: record.id, kind: kind, symbolicated: symbolicated, is_partial: record.isPartial,
            images: payloadImages,
            signal: record.signal.map {
                .init(number: Int($0.number), name: $0.name, code: Int($0.code), code_name: $0.codeName,
                      fault_address: ($0.faultAddress ?? Address(0)).description)   // required by the wire schema
            },
            error: record.nonFatalError.map {
                .init(domain: $0.domain, code: $0.code, message: $0.message,
                      user_info: JSONValue(json: $0.userInfoJSON) ?? .object([:]),
                      underlying: $0.underlying.map { error in
                          .object(error.reduce(into: [:]) { object, field in
                              object[field.key] = field.key == "code" ? Int(field.value).map(JSONValue.int) ?? .string(field.value) : .string(field.value)
                          })
                      })
            },
            termination: record.termination.map { termination in
                .init(kind: termination.kind, memory: record.memory.map { memory in
                    .init(cgroup: memory.cgroup, limit_bytes: memory.limitBytes, samples: memory.samples.map {
                        .init(timestamp: Timestamp.iso8601($0.timestamp), rss_bytes: $0.residentBytes, cgroup_bytes: $0.cgroupBytes)
                    })
                })
            },
            requests_in_flight: record.requests.isEmpty ? nil : record.requests.map {
                .init(method: $0.method, route: $0.route, request_id: $0.requestID, trace_id: $0.traceID, thread_id: Int($0.threadID),
                      age_ms: Int(clamping: $0.ageMilliseconds), crashed_thread: $0.startedOnCrashedThread)
            })
    }

    /// The frame's stack_trace line (the model's spelling, shared with the collector's symbolication).
    static func line(of frame: DiagnosticsPayload.Frame) -> String {
        frame.stackTraceLine
    }

    static func mebibytes(_ bytes: Int) -> String {
        String(format: "%.1f MiB", Double(bytes) / 1_048_576)
    }
}
