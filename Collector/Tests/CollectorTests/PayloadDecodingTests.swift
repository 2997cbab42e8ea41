// The two ways from a body to a payload agree: the direct decode (one pass into the model, the
// collector's defaults applied after) gives what the checked way (a JSONValue tree, the defaults
// applied to the JSON, the model decoded from it) gives, for every body the direct one takes; and
// it declines the bodies only the checked way answers rightly.
@testable import Collector
import CrashReportModel
import Foundation
import Testing

@Suite struct PayloadDecodingTests {
    /// The sample payload's JSON object, changed by `edit`, as a body.
    static func body(_ edit: (inout [String: Any]) -> Void = { _ in }) throws -> [UInt8] {
        var object = try #require(try JSONSerialization.jsonObject(with: Fixtures.samplePayloadData()) as? [String: Any])
        edit(&object)
        return [UInt8](try JSONSerialization.data(withJSONObject: object))
    }

    static func editReports(_ object: inout [String: Any], _ edit: (inout [String: Any]) -> Void) {
        var reports = object["crash_reports"] as? [[String: Any]] ?? []
        for index in reports.indices { edit(&reports[index]) }
        object["crash_reports"] = reports
    }

    @Test func theDirectDecodeGivesWhatTheCheckedOneGives() throws {
        let bodies: [(String, [UInt8])] = [
            ("the sample", try Self.body()),
            ("seed 000's example", [UInt8](Fixtures.seedExample)),
            ("no report_id", try Self.body { Self.editReports(&$0) { $0["report_id"] = nil } }),
            ("report_id null", try Self.body { Self.editReports(&$0) { $0["report_id"] = NSNull() } }),
            ("report_id empty", try Self.body { Self.editReports(&$0) { $0["report_id"] = "" } }),
            ("no symbolicated", try Self.body { Self.editReports(&$0) { $0["symbolicated"] = nil } }),
            ("symbolicated null", try Self.body { Self.editReports(&$0) { $0["symbolicated"] = NSNull() } }),
            ("no symbolicated, no function anywhere", try Self.body {
                Self.editReports(&$0) { report in
                    report["symbolicated"] = nil
                    report["thread_info"] = (report["thread_info"] as? [[String: Any]] ?? []).map { thread in
                        var thread = thread
                        thread["frames"] = (thread["frames"] as? [[String: Any]] ?? []).map { frame in
                            var frame = frame
                            frame["function"] = nil
                            return frame
                        }
                        return thread
                    }
                }
            }),
            ("no crash reports", try Self.body { $0["crash_reports"] = nil }),
            ("crash_reports null", try Self.body { $0["crash_reports"] = NSNull() }),
            ("custom_data of every kind", try Self.body {
                $0["custom_data"] = ["n": 1, "f": 1.5, "s": "x", "b": true, "z": NSNull(), "a": [1, "2", [3]], "o": ["k": ["j": 1]]]
            }),
        ]
        for (name, body) in bodies {
            let checked = try PayloadDecoding.checked(body)
            let direct = try #require(PayloadDecoding.direct(body)?.payload, "\(name): the direct decode declined")
            #expect(direct == checked, "\(name)")
        }
    }

    @Test func theDirectDecodeDeclinesWhatOnlyTheCheckedOneAnswersRightly() throws {
        let declined: [(String, [UInt8])] = [
            ("test_run_id empty", try Self.body { $0["test_run_id"] = "" }),
            ("timestamp_collected empty", try Self.body { $0["timestamp_collected"] = "" }),
            ("app_metadata.bundle_id missing", try Self.body {
                var app = $0["app_metadata"] as? [String: Any] ?? [:]
                app["bundle_id"] = nil
                $0["app_metadata"] = app
            }),
            ("a report without stack_trace", try Self.body { Self.editReports(&$0) { $0["stack_trace"] = nil } }),
            ("logs an object", try Self.body { $0["logs"] = ["a": 1] }),
        ]
        for (name, body) in declined {
            #expect(PayloadDecoding.direct(body) == nil, "\(name)")
        }
        // The checked way still stores a report without stack_trace (an empty one) and names the rest.
        let noStack = try PayloadDecoding.decode(try Self.body { Self.editReports(&$0) { $0["stack_trace"] = nil } })
        #expect(noStack.crash_reports.allSatisfy { $0.stack_trace.isEmpty })
        #expect(throws: ValidationFailure(message: "test_run_id must be a non-empty string", details: ["test_run_id must be a non-empty string"])) {
            try PayloadDecoding.decode(try Self.body { $0["test_run_id"] = "" })
        }
        // A whole number sent as a float (a JavaScript sender) is an integer either way.
        let floats = try Self.body {
            var device = $0["device_metadata"] as? [String: Any] ?? [:]
            device["total_memory_mb"] = 2048.0
            $0["device_metadata"] = device
        }
        #expect(try PayloadDecoding.decode(floats).device_metadata.total_memory_mb == 2048)
    }
}
