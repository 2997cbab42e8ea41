// Where the one-line crash summary goes (standard error by default when on), for log pipelines
// that see every crash even with no collector: set at start, read at crash time.
#ifndef CCR_CRASH_LINE_H
#define CCR_CRASH_LINE_H

/// The descriptor the crash line is written to, or -1 (off, the default). Written before a crash
/// can happen (at start); read lock-free at crash time.
extern int ccr_crash_line_fd;

#endif
