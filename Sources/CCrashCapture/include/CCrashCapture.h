// CCrashCapture: the C half of crash capture, the one header Swift imports.
// Install-time entry points (may allocate) and the few values the facade reads back.
// Everything that runs inside the signal handler is in ../CrashTime/ and is not declared here.
#ifndef CCRASHCAPTURE_H
#define CCRASHCAPTURE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#pragma clang assume_nonnull begin

/// What `ccr_install` needs. Strings are copied into preallocated storage; the caller keeps ownership.
typedef struct ccr_install_options {
    /// Absolute path of the reports directory; `new/` and `pending/` must already exist in it.
    const char *reports_directory;
    /// Record id: the file name (without `.crash`) of the record this process would write.
    const char *record_id;
    const char *app_id;
    const char *app_version;
    /// Upper bound on the time spent in the handler before the watchdog takes over (milliseconds).
    int watchdog_timeout_ms;
    /// Test knobs, read once here and never at crash time: 1 = fault inside the handler after the
    /// header is written; 2 = hang inside the handler before unwinding (the watchdog must finish).
    int test_misbehaviour;
} ccr_install_options;

/// Installs the crash handlers and everything they need. Returns 0 on success; otherwise a
/// non-zero code, a message in `error` (NUL-terminated), and nothing left installed.
/// Not async-signal-safe: allocates, opens files, loads libunwind, creates the watchdog thread.
int ccr_install(const ccr_install_options *options, char *error, size_t error_capacity);

/// 1 once `ccr_install` has succeeded in this process. Async-signal-safe.
int ccr_is_installed(void);

/// Number of modules in the table recorded at install time. Async-signal-safe.
int ccr_module_count(void);

/// Gives the calling thread an alternate signal stack if it has none (threads created after
/// install get one automatically). Returns 0 on success. Not async-signal-safe: calls mmap.
int ccr_ensure_alternate_signal_stack(void);

/// Writes a random version-4 UUID in lower-case text (36 characters and a NUL) into `out`, which
/// must hold 37 bytes. Not async-signal-safe only in that it is never needed there: getrandom(2).
void ccr_make_record_id(char *out);

/// Nanoseconds `ccr_install` took in its last successful call (for the start-cost benchmark).
uint64_t ccr_last_install_duration_ns(void);

#pragma clang assume_nonnull end

#ifdef __cplusplus
}
#endif

#endif
