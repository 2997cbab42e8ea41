// Grouping lives in the model (CrashReportModel/CrashGrouping.swift), shared with the runtime's
// Sentry transport so that a collector issue and a Sentry fingerprint mean the same crash.
import CrashReportModel

typealias Grouping = CrashGrouping
