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
    /// header is written; 2 = hang inside the handler before unwinding (the watchdog must finish);
    /// 3 = the crash-time walk of the loader's list fails (the install-time table is written);
    /// 4 = asked threads store their frame-pointer walk but never finish libunwind's; 5 = asked
    /// threads never answer; 9 = libunwind is treated as missing; 10 = the crash-time module walk
    /// does not use its pipe (reads by process_vm_readv); 11 = an asked thread sends itself SIGABRT
    /// in the middle of its libunwind walk, while libunwind holds its cache lock.
    int test_misbehaviour;
    /// Other threads listed at a crash, each asked to unwind itself (Docs/Decisions/0010):
    /// at most this many (0: 256, the most; negative: the crashing thread only), ...
    int thread_limit;
    /// ... with this many frames each (0: 32; at most 64), ...
    int thread_frames;
    /// ... waiting at most this long for all answers together (milliseconds; 0: 250). The wait
    /// never exceeds half of what is left of the watchdog's timeout.
    int thread_wait_ms;
    /// 1: do not load libunwind or make the watchdog thread here; the caller runs
    /// `ccr_watchdog_start_deferred` and `ccr_libunwind_load_deferred` on a thread of its own soon
    /// after. A crash before that finishes waits for it (at most 50 ms), then falls
    /// back to frame pointers. 0: loaded here, and a missing libunwind fails the install.
    int defer_libunwind;
} ccr_install_options;

/// Makes the watchdog thread for an install made with `defer_libunwind` (which made its pipe
/// only). Returns 0, or -1 with a message in `error`: crashes are then recorded without a
/// watchdog (a handler that stalls is not finished by it). Call once, off the app's thread, before
/// `ccr_libunwind_load_deferred`; not async-signal-safe.
int ccr_watchdog_start_deferred(char *error, size_t error_capacity);

/// Waits (at most `max_ms`) until the watchdog thread has run its first lines: before that it
/// carries its creator's name and a crash lists it as an app thread (blocking the asking
/// signal). Call after `ccr_libunwind_load_deferred`, so that the load is not delayed.
void ccr_watchdog_wait_started(int max_ms);

/// 1 once a crash's handler has claimed the crash in this process. For a test that makes the
/// deferred watchdog only after a crash began.
int ccr_crash_started(void);

/// Loads and warms up libunwind for an install made with `defer_libunwind`. Returns 0, or -1 with
/// a message in `error` (crashes then record frame-pointer stacks). Call once, off the app's
/// thread; not async-signal-safe.
int ccr_libunwind_load_deferred(char *error, size_t error_capacity);
/// `ccr_libunwind_load_deferred` in two steps, for a caller that reports a failure before a crash
/// may go on without libunwind: the load, whose result a crash keeps waiting for (at most 50 ms)
/// until `ccr_libunwind_publish_deferred(result)`.
int ccr_libunwind_load_deferred_unpublished(char *error, size_t error_capacity);
void ccr_libunwind_publish_deferred(int loaded);

/// Waits (at most `max_ms`) until a deferred libunwind load and module table are done; 1 when
/// libunwind is ready. For tests that change the loaded libraries "after start's table".
int ccr_wait_for_deferred_setup(int max_ms);

/// Whether an AArch64 instruction word is a call: BL, BLR, or the pointer-authenticating BLRAA,
/// BLRAAZ, BLRAB, BLRABZ. The stack scan of a thread that blocks the asking signal keeps a word
/// that follows one. Built on every architecture (tests run it on x86_64); async-signal-safe.
int ccr_aarch64_instruction_is_call(uint32_t instruction);

/// For a test: 1 once a crash has claimed the handler in this process.
int ccr_test_crash_begun(void);

/// The watchdog pipe's read end (a test replaces that number with a pipe of its own).
int ccr_test_watchdog_read_fd(void);
/// 1 once the watchdog has given its read end up (closed, or no longer its pipe).
int ccr_test_watchdog_gave_up_pipe(void);
/// The watchdog thread's id (0 before it runs).
int ccr_test_watchdog_tid(void);

/// For a test, once libunwind is ready: whether libunwind's slot for sigprocmask was pointed at
/// ours, then this thread's stack walked twice, as a handler of ours walks it (signals blocked)
/// and as a non-fatal report does, with how many of libunwind's sigprocmask calls reached libc in
/// each. -1 when libunwind is not ready.
int ccr_test_unwind_masks(int *redirected, int *frames_in_handler, unsigned long *passed_in_handler,
                          int *steps_plain, unsigned long *passed_plain);

/// Installs the crash handlers and everything they need. Returns 0 on success; otherwise a
/// non-zero code, a message in `error` (NUL-terminated), and nothing left installed.
/// Not async-signal-safe: allocates, opens files, loads libunwind, creates the watchdog thread.
int ccr_install(const ccr_install_options *options, char *error, size_t error_capacity);

/// 1 once `ccr_install` has succeeded in this process. Async-signal-safe.
int ccr_is_installed(void);

/// Number of modules in the table recorded at install time. Async-signal-safe.
int ccr_module_count(void);

/// The real-time signal that asks a thread to unwind itself at a crash; 0 when threads are not
/// captured (turned off, or no free real-time signal at install). Async-signal-safe.
int ccr_thread_capture_signal(void);

/// Marks the calling thread as one of this library's own (the upload pipeline, the memory
/// sampler) under `name` (at most 15 bytes; "crash-…"): a crash lists it as `crash_reporter`
/// without asking it to unwind itself, as it does the watchdog, and writes that name without
/// reading /proc. With `rename`, the thread's own name becomes `name` too (gdb and top -H show
/// it); only for a thread that makes no threads and hands no work to a pool, because Linux
/// threads inherit their creator's name: libdispatch's workers made while this thread queued
/// work would carry "crash-…" while they run the app's work. At most 8; later calls are
/// ignored. Lock-free.
void ccr_threads_mark_reporter(const char *name, int rename);

/// The calling thread's id (gettid(2)). Async-signal-safe.
int ccr_gettid(void);

/// A hang report's body into `fd` (the caller wrote the header and hang lines): the module table
/// and every thread's stack, `hung_tid`'s first, each thread asked to unwind itself as at a crash
/// and then let go. 0, or -1 when threads are not captured, a crash began, or another capture
/// holds the slots. `elapsed_ns` gets how long it took. For the hang monitor's thread.
int ccr_write_hang_record(int fd, int hung_tid, uint64_t *elapsed_ns);

/// Gives the calling thread an alternate signal stack if it has none (threads created after
/// install get one automatically). Returns 0 on success. Not async-signal-safe: calls mmap.
int ccr_ensure_alternate_signal_stack(void);

/// Writes a random version-4 UUID in lower-case text (36 characters and a NUL) into `out`, which
/// must hold 37 bytes. Not async-signal-safe only in that it is never needed there: getrandom(2).
void ccr_make_record_id(char *out);

/// Delivery at crash time (opt-in): once a crash record is durable, the handler runs
/// `sender_path --config <config_path> --record <pending record>` and waits for it at most
/// `wait_ms` before the process ends by its signal. Copies the environment as it is now for the
/// sender. Returns 0, or non-zero with a message in `error`. Not async-signal-safe.
int ccr_sender_configure(const char *sender_path, const char *config_path, int wait_ms, char *error, size_t error_capacity);

/// Nanoseconds `ccr_install` took in its last successful call (for the start-cost benchmark).
uint64_t ccr_last_install_duration_ns(void);

/// Writes the calling thread's thread line, frames (skipping `skip` callers of this function),
/// stack summary and the module table to `fd`, in the record format. 0 on success.
/// Not async-signal-safe: for non-fatal error reports on app threads.
int ccr_write_current_stack(int fd, int skip);

// MARK: - Session file (breadcrumbs, custom keys, user id)

/// Creates and maps the session file at `path` (see Shared/ccr_session.h). Returns 0 on success.
/// Not async-signal-safe: open, ftruncate, mmap.
int ccr_session_open(const char *path, const char *session_id, const char *app_id, const char *app_version,
                     char *error, size_t error_capacity);
/// fsyncs the session file once: its creation then no longer rides along with (and slows) the
/// crash-time fdatasync of the record under ext4's ordered journal. Called off the caller's thread.
void ccr_session_sync(void);
/// Marks the session ended cleanly and removes its file. Not async-signal-safe: unlink.
void ccr_session_end(void);
/// The GNU build-id in `size` bytes of notes aligned to `alignment` (a PT_NOTE segment), as the
/// module table reads it at install and at crash time: its length (0 when there is none), at most
/// `capacity` bytes copied. For tests, which feed it crafted segments.
size_t ccr_build_id_from_notes(const uint8_t *_Nonnull notes, size_t size, size_t alignment,
                               uint8_t *_Nonnull build_id, size_t capacity);
/// 1 with the sidecar lock held when the session is running in this process (create or rename a
/// sidecar, then call ccr_session_sidecar_end); 0, lock not held, once it has ended.
int ccr_session_sidecar_begin(void);
void ccr_session_sidecar_end(void);

/// Appends a breadcrumb: lock-free, wait-free, no allocation. `level` 0 debug … 4 fatal; `kind`
/// 0 log, 1 screen view, 2 action, 3 error, 4 network. `metadata` is a compact JSON object or empty.
/// Meant for app threads. Async-signal-safe once the calling thread has logged before (a
/// handler interrupting an append on its thread takes the next index of the same ring); a
/// thread's first breadcrumb claims a ring with pthread_setspecific, which POSIX does not list as
/// safe.
void ccr_breadcrumb_append(uint8_t level, uint8_t kind, const char *_Nullable tag, size_t tag_length,
                           const char *_Nullable message, size_t message_length,
                           const char *_Nullable metadata, size_t metadata_length);
/// ccr_breadcrumb_append(1 /* info */, 0 /* log */, no tag, `message`, no metadata): the call
/// behind CrashReporter.log(_:), with two arguments instead of eight and the empty tag and
/// metadata folded away.
void ccr_breadcrumb_log(const char *_Nullable message, size_t message_length);
/// The "http" breadcrumb of a finished request (tag "http", kind log; level error for a status
/// of 500 or more, warning for 400 or more, else info): the message "METHOD route status", the
/// metadata {"method", "route", "status", "duration_ms" ("N.N" from tenths of a millisecond),
/// "request_id", then "trace_id" when `has_trace` and "span_id" when `has_span` too}, JSON-escaped
/// here. A negative duration is written as 0. Returns 0 (and appends nothing) when the whole does not fit in 1 KiB or
/// the message is longer than `message_max` bytes; else 1. No allocation, no lock.
/// With `started_ns` (a request's start, from ccr_breadcrumb_request or ccr_request_clock_ns) not
/// 0, the duration is now − started_ns, read here, and the breadcrumb is ordered as
/// ccr_breadcrumb_request orders its own; `duration_tenths_ms` is then ignored. `duration_out`,
/// when not NULL, gets the duration written (or that would have been: for a caller that writes it
/// another way when this returns 0).
int ccr_breadcrumb_http(const char *_Nullable method, size_t method_length, const char *_Nullable route, size_t route_length,
                        int64_t status, int64_t duration_tenths_ms, uint64_t started_ns, const char *_Nullable request_id,
                        size_t request_id_length, const char *_Nullable trace_id, size_t trace_id_length, int has_trace,
                        const char *_Nullable span_id, size_t span_id_length, int has_span, size_t message_max,
                        int64_t *_Nullable duration_out);
/// A server request's breadcrumb (the middlewares' screen view as a request starts), appended as
/// ccr_breadcrumb_append appends it, but ordered without an atomic add on the session's counter:
/// it reads the counter and CLOCK_MONOTONIC, and comes after every breadcrumb that happened before
/// it and before every one that happened after it (Decision 0058, which says where that does not
/// hold: a clock that repeats values, where the add is taken instead; the shared ring 0). Returns
/// that clock read (the request's start, for ccr_request_begin and ccr_breadcrumb_http).
uint64_t ccr_breadcrumb_request(uint8_t level, uint8_t kind, const char *_Nullable tag, size_t tag_length,
                                const char *_Nullable message, size_t message_length);
/// Sets (length > 0) or clears (length 0) the user id. Not async-signal-safe: takes a mutex.
void ccr_set_user_id(const char *_Nullable id, size_t length);
/// Sets a custom key. `type`: 1 bool, 2 int, 3 double (value is its JSON text), 4 string,
/// 5 JSON. Returns 1 if another key was evicted (its name in `evicted`), else 0.
/// Not async-signal-safe: takes a mutex.
int ccr_set_custom_key(const char *name, size_t name_length, uint8_t type, const char *_Nullable value, size_t value_length,
                       char *_Nullable evicted, size_t evicted_capacity);
/// Copies this session's user id into `buffer`; its length (0: none). Not async-signal-safe.
size_t ccr_current_user_id(char *buffer, size_t capacity);
/// Number of custom keys set. Not async-signal-safe: takes a mutex.
int ccr_custom_key_count(void);
/// Breadcrumbs appended to this process's session so far (0 without a session).
/// Async-signal-safe.
uint64_t ccr_breadcrumb_total(void);

typedef struct ccr_session_info {
    int alive;   // its process still holds the file's lock
    int state;   // 1 running, 2 ended, 3 crashed
    int pid;
    uint64_t started_ns;
    uint64_t breadcrumbs_written;
    char session_id[40];
    char app_id[128];
    char app_version[64];
} ccr_session_info;

/// Reads the header of a session file left by an earlier process. 0 on success, -1 unreadable,
/// -2 not a session file. Not async-signal-safe.
int ccr_session_inspect(const char *path, ccr_session_info *info);
/// Writes the session's user, custom_key and breadcrumb lines (record format) to `out_fd`.
/// 0 on success. Not async-signal-safe.
int ccr_session_export(const char *path, int out_fd);

/// Where the one-line JSON crash summary is written at a crash (e.g. 2, standard error), or -1 for
/// none (the default). Call before a crash can happen; the descriptor must stay open.
/// Async-signal-safe (one store).
void ccr_set_crash_line_fd(int fd);

// MARK: - Requests in flight (servers)

/// Records that the calling thread started serving a request; a crash report lists the requests in
/// flight with their route, method, request id, trace id, age and starting thread. Returns a token
/// for `ccr_request_end` (0 when all 128 slots are taken: the request is counted as dropped).
/// `started_ns`: when it started, on CLOCK_MONOTONIC (ccr_request_clock_ns; the caller keeps it to
/// time the request, so the clock is read once). Lock-free, no allocation after a thread's first
/// call (which reads its thread id and, once per process, registers a fork hook);
/// async-signal-safe then (memcpy).
int ccr_request_begin(const char *_Nullable method, size_t method_length, const char *_Nullable route, size_t route_length,
                      const char *_Nullable request_id, size_t request_id_length,
                      const char *_Nullable trace_id, size_t trace_id_length, uint64_t started_ns);
/// CLOCK_MONOTONIC in nanoseconds: the requests' clock (their age at a crash is read on it).
/// Async-signal-safe.
uint64_t ccr_request_clock_ns(void);
/// Ends what `ccr_request_begin` started (a token of 0 is ignored). Async-signal-safe.
void ccr_request_end(int token);
/// Requests begun and not yet ended. Async-signal-safe.
int ccr_requests_in_flight(void);

#pragma clang assume_nonnull end

#ifdef __cplusplus
}
#endif

#endif
