// The text form of a report: what `crashtool symbolicate` prints, read like a good crash log —
// what crashed and why first (with the issue it groups into), then the crashed thread's frames —
// short Swift names, system and reporter frames tagged as Swift's backtracer tags them — the other
// threads, then the images.
import Foundation

extension CrashReport {
    public var text: String {
        var out: [String] = []
        // A crash line (standard error) is not a record cut short: it holds the innermost frames by design.
        let fromCrashLine = stack?.unwinder == "crash-line"
        let title = "Crash report \(recordID)" + (fromCrashLine ? "  (from a crash line: the innermost frames only)"
                                                  : isPartial ? "  (PARTIAL: the record was cut short)" : "")
        out.append(title)
        out.append(String(repeating: "=", count: title.count))
        if !appID.isEmpty {
            out.append("App:       \(appID)\(appVersion.isEmpty ? "" : " \(appVersion)")\(processID > 0 ? "  (pid \(processID))" : "")")
        }
        if let hang {
            let lasted = hang.durationMilliseconds.map { "resolved after \(Self.seconds($0))" } ?? "still hung when the process ended"
            out.append("Hang:      \(hang.name) did not respond for \(Self.seconds(hang.ageMilliseconds)) (threshold \(Self.seconds(hang.thresholdMilliseconds)); \(lasted)); thread \(hang.threadID) first")
        }
        if let afterHang = terminationAfterHang {
            out.append("After:     a hang of \(afterHang.name) (report \(afterHang.reportID))")
        }
        if let parent = forkedFromProcessID {
            out.append("Forked:    a child of pid \(parent)\(forkedFromRecordID.map { " (the parent's record \($0))" } ?? "")")
        }
        if timestamp.timeIntervalSince1970 > 0 {
            out.append("Time:      \(Timestamp.iso8601(timestamp))")
        }
        if !architecture.isEmpty { out.append("Arch:      \(architecture)") }
        if let signal {
            var line = "Signal:    \(signal.name) (\(signal.number))"
            if !signal.codeName.isEmpty { line += " \(signal.codeName)" }
            if ["SIGSEGV", "SIGBUS"].contains(signal.name), let address = signal.faultAddress { line += " at \(address)" }
            if let sender = signal.senderPID { line += ", sent by pid \(sender)" }
            out.append(line)
        }
        out.append("Reason:    \(reason)")
        if let issue = CrashGrouping.issueKey(for: groupingEntry) {
            out.append("Issue:     \(issue.title)")
            out.append("Signature: \(issue.signature)  (grouping rule \(issue.ruleVersion))")
        }
        if let fatalMessage, !reason.contains(fatalMessage.trimmingCharacters(in: .whitespacesAndNewlines)) {
            out.append("Message:   \(fatalMessage.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
        if let nestedCrash { out.append("Note:      the handler itself faulted (signal \(nestedCrash.signal)) at stage \(nestedCrash.stage); the record stops there") }
        if moduleTableSource == "install" {
            out.append("Note:      the module table is the one made at start (reading it at the crash failed): libraries opened or closed since are missing or stale")
        }
        if let watchdog { out.append("Note:      the handler stalled; the watchdog finished the record after \(watchdog.waitedMilliseconds) ms") }
        for problem in problems { out.append("Problem:   \(problem)") }
        out.append("")

        let thread = crashedThread
        var header = (hang != nil ? "Hung thread " : "Crashed thread ") + "\(thread.id)"
        if !thread.name.isEmpty { header += " \"\(thread.name)\"" }
        if thread.isMain { header += " (main)" }
        // Outer frames, when kept, follow the innermost after a gap in the indices: where a
        // recursion cut by the limit was entered (a second gap after them), then the outermost.
        let gaps = thread.frames.indices.dropFirst().filter { thread.frames[$0].index > thread.frames[$0 - 1].index + 1 }
        let innermost = gaps.first.map { Array(thread.frames[..<$0]) } ?? thread.frames
        if let stack {
            let outer = gaps.first.map { thread.frames.count - $0 } ?? 0
            let outerText = gaps.isEmpty ? "" : gaps.count > 1 ? " and \(outer) outer (where the recursion was entered, and the outermost)" : " and outermost \(outer)"
            header += ": \(stack.isTruncated ? "innermost \(innermost.last.map { $0.index + 1 } ?? 0)\(outerText) of \(stack.depthIsLowerBound ? "more than " : "")\(stack.depth)" : "\(stack.depth)") frames, unwound by \(stack.unwinder)"
                + (stack.unwindError.map { " (libunwind error \($0); the frames after it from frame pointers, the stack may be deeper)" } ?? "")
        }
        out.append(header)
        let allFrames = thread.frames + otherThreads.flatMap(\.frames)
        let moduleWidth = min(28, allFrames.map { fileName(of: $0.module ?? "?").count }.max() ?? 0)
        for (position, frame) in thread.frames.enumerated() {
            if gaps.contains(position) {
                let skipped = frame.index - thread.frames[position - 1].index - 1
                out.append("    … \(skipped) frames not kept …")
            }
            out.append(frameLine(frame, moduleWidth: moduleWidth))
        }
        // The other threads, in the record's order, after the one that crashed.
        for other in otherThreads {
            out.append("")
            var header = "Thread \(other.id)"
            if !other.name.isEmpty { header += " \"\(other.name)\"" }
            if other.isMain { header += " (main)" }
            let state = other.state ?? ""
            if let stack = other.stack, stack.unwinder == "stack-scan" {
                let why = switch state {
                case "no_answer": "did not unwind itself in time"
                case "stopped": "stopped (SIGSTOP: state T)"
                case "not_asked": "not asked (another handler had taken the signal that asks)"
                default: "blocks the signal that asks threads to unwind"
                }
                header += ": \(why); \(stack.depth) frames found by scanning its stack from the "
                    + "system call it waits in (may include stale return addresses)"
            } else if let stack = other.stack {
                header += ": \(stack.isTruncated ? "innermost \(other.frames.last.map { $0.index + 1 } ?? 0) of \(stack.depthIsLowerBound ? "more than " : "")\(stack.depth)" : "\(stack.depth)") frames, unwound by \(stack.unwinder)"
            } else {
                switch state {
                case "no_answer": header += ": did not unwind itself in time"
                case "blocked_signal": header += ": blocks the signal that asks threads to unwind"
                case "exited": header += ": exited during the crash"
                case "crash_reporter": header += ": the crash reporter's own (watchdog, uploads, memory sampler)"
                case "not_asked": header += ": not asked (another handler had taken the signal that asks)"
                case "stopped": header += ": stopped (SIGSTOP: state T)"
                default: header += state.isEmpty ? "" : ": \(state)"
                }
            }
            out.append(header)
            if let too = other.crashedToo {
                // Its own crash, which the handler (recording this one) did not record as a crash of its own.
                if let sender = too.senderPID {
                    out.append("  Received \(too.name) too, sent by \(sender == 0 ? "a process outside its pid namespace" : "pid \(sender)"), while this crash was being recorded; its frames are where it was")
                } else {
                    out.append("  Crashed too, while this crash was being recorded: \(too.name)"
                        + (["SIGSEGV", "SIGBUS"].contains(too.name) ? too.faultAddress.map { " at \($0)" } ?? "" : "")
                        + "; its frames are where it crashed")
                }
            }
            out += other.frames.map { frameLine($0, moduleWidth: moduleWidth) }
        }
        if let summary = record.threadsSummary, summary.listErrno == nil, summary.total > summary.listed {
            out.append("")
            out.append("Other threads: \(summary.total - summary.listed) more not listed (\(summary.total) in the process; the record lists at most \(summary.listed), the configured limit)")
        }
        if let listErrno = record.threadsSummary?.listErrno {
            out.append("")
            out.append("Other threads: unknown (/proc/self/task could not be opened at the crash: errno \(listErrno)\(listErrno == 24 ? ", EMFILE: the process had used up its file descriptors" : ""))")
        }
        out.append("")

        if let error = nonFatalError {
            out.append("Error:     \(error.domain) code \(error.code)")
            out.append("userInfo:  \(error.userInfoJSON)")
            for underlying in error.underlying {
                out.append("Underlying: \(underlying["domain"] ?? "?") \(underlying["code"] ?? "?"): \(underlying["message"] ?? "")")
            }
        }
        if let userID { out.append("User:      \(userID)") }
        if !customKeys.isEmpty {
            out.append("Custom keys:")
            for key in customKeys { out.append("  \(key.key) = \(key.jsonValue)") }
        }
        if let customDataJSON { out.append("Custom data: \(customDataJSON)") }
        if !breadcrumbs.isEmpty {
            out.append("Breadcrumbs (\(breadcrumbs.count), oldest first):")
            for crumb in breadcrumbs {
                var line = "  \(Timestamp.iso8601(crumb.timestamp)) \(padded(crumb.level, 7)) "
                if crumb.kind != "log" { line += "[\(crumb.kind)] " }
                if !crumb.tag.isEmpty && crumb.kind == "log" { line += "[\(crumb.tag)] " }
                line += crumb.message
                if let metadata = crumb.metadata, !metadata.isEmpty {
                    line += "  " + metadata.keys.sorted().map { "\($0)=\(metadata[$0]!)" }.joined(separator: " ")
                }
                out.append(line)
            }
        }
        if userID != nil || !customKeys.isEmpty || !breadcrumbs.isEmpty || customDataJSON != nil { out.append("") }

        out.append("Images:")
        for image in images {
            var line = "  \(fileName(of: image.path))  \(image.buildID.isEmpty ? "(no build-id)" : image.buildID.hex)  \(image.start)-\(image.end)  \(image.path)"
            switch image.symbols {
            case .recordedPath?: line += image.hasDebugInfo ? "  [debug info]" : "  [symbols only]"
            case .debugFile(let path)?: line += "  [symbols: \(path)]"
            case .buildIDMismatch(let onDisk)?: line += "  [CHANGED since the crash: file has build-id \(onDisk)]"
            case .notFound?: line += "  [no symbols found]"
            case nil: break
            }
            out.append(line)
        }
        return out.joined(separator: "\n") + "\n"
    }
}

/// One frame as a person reads it: index, module, function (or address), source location.
func frameLine(_ frame: CrashReport.Frame, moduleWidth: Int) -> String {
    let module = fileName(of: frame.module ?? "?")
    var line = padded("#\(frame.index)", 4) + " "
    line += padded(module, moduleWidth) + "  "
    if let function = frame.function {
        // Swift's backtracer's tags; the full name is in --format json.
        let origin = frame.origin ?? CrashGrouping.origin(function: function, file: frame.file, module: module, modulePath: frame.module)
        line += (frame.isInlined ? "[inlined] " : "") + (origin == .app ? "" : "[\(origin.rawValue)] ")
            + (frame.isAsync || SwiftNames.isAsync(function) ? "[async] " : "") + CrashGrouping.displayName(function)
    } else {
        line += (frame.isAsync ? "[async] " : "") + "\(frame.address)" + (frame.moduleOffset.map { " (\(module) + \($0))" } ?? "")
    }
    if let file = frame.file {
        var location = file
        if let number = frame.line { location += ":\(number)" }
        if let column = frame.column { location += ":\(column)" }
        line += "  (\(location))"
    }
    if let note = frame.note { line += "  ! \(note)" }
    return line
}

/// `text` followed by spaces up to `width` characters (no Foundation bridging).
func padded(_ text: String, _ width: Int) -> String {
    let count = text.count
    return count >= width ? text : text + String(repeating: " ", count: width - count)
}

extension CrashReport {
    /// "2.1 s" from milliseconds.
    public static func seconds(_ milliseconds: Int) -> String {
        String(format: "%.1f s", Double(milliseconds) / 1000)
    }
}
