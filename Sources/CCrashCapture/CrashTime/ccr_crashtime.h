// Crash-time entry points shared by the handler, the watchdog and Setup/.
// Every function declared here is async-signal-safe unless it says otherwise.
#ifndef CCR_CRASHTIME_H
#define CCR_CRASHTIME_H

#include <signal.h>
#include <stdint.h>
#include <sys/uio.h>

#include "ccr_state.h"
#include "ccr_writer.h"

/// The SA_SIGINFO handler installed for every crash signal. Async-signal-safe.
void ccr_signal_handler(int signo, siginfo_t *info, void *ucontext);

/// Body of the watchdog thread: looks every timeout at whether a crash is under way (the handler
/// does not wake it), then bounds the handler's time from the crash's start and finishes the
/// record itself if the handler stalls. Async-signal-safe once a crash began.
void *ccr_watchdog_main(void *unused);
/// The crash handler's record is durable: the watchdog leaves this crash alone. Async-signal-safe.
void ccr_watchdog_stand_down(void);

/// Writes the handler's buffered facts and modules (waiting up to `facts_wait_ms` for them to be
/// all in), the watchdog line, the frame-pointer walk from the saved context and the end line, and
/// makes the record durable: the rest of a record whose handler stalled. Async-signal-safe.
void ccr_watchdog_finish_record(int facts_wait_ms);

/// Brings the pages of [start, start + length) into memory without changing a byte: a
/// compare-and-swap of each page's first byte with itself (a write access, so the kernel gives the
/// page now rather than at the first write), safe while a crash that began meanwhile writes them.
/// For set-up code (the table is made on a background thread after the handlers are installed).
static inline void ccr_touch_pages(void *start, size_t length) {
    uintptr_t first = (uintptr_t)start, end = first + length;
    for (uintptr_t page = first & ~(uintptr_t)4095; page < end; page += 4096) {
        char *byte = (char *)(page < first ? first : page);
        char seen = __atomic_load_n(byte, __ATOMIC_RELAXED);
        __atomic_compare_exchange_n(byte, &seen, seen, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    }
}

/// Touches the handler's record buffer and the crash context (ccr_touch_pages), so that a crash
/// takes no page fault on them. Called with the module table; not for crash time.
void ccr_handler_prefault(void);
/// The watchdog's call, once it has claimed the finish: writes out the crash handler's buffered fixed
/// facts, modules and requests, waiting up to `wait_ms` for the handler to put them in. Returns 1
/// when it did. Async-signal-safe.
int ccr_handler_flush_facts_for_watchdog(int wait_ms);
/// Whether the crash handler has its fixed facts, modules and requests in its buffer (and leaves the
/// buffer alone until it claims the finish). Async-signal-safe.
int ccr_handler_facts_are_buffered(void);
/// The same for the crashing thread's walk's statics (CrashTime/ccr_unwind.c).
void ccr_unwind_prefault(void);

/// In a forked child's first crash (getpid() differs from the pid saved at install): gives the
/// child its own record id, pid, record file, no session, no parent's watchdog, and starts an
/// alarm(2) watchdog. Returns 0, or -1 when no record file could be made (write nothing then).
/// Async-signal-safe.
int ccr_fork_adopt(void);
/// Cancels the forked child's alarm once its record is durable. Async-signal-safe.
void ccr_fork_stop_watchdog(void);

/// Unwinds from a signal's ucontext with libunwind (UNW_INIT_SIGNAL_FRAME). Keeps the innermost
/// `max` addresses and counts the rest (at most CCR_MAX_COUNTED_FRAMES). Returns the number kept,
/// or -1 if libunwind could not start. Async-signal-safe: libunwind's local unwinder does not
/// allocate after its first use (install prewarms it), but it may take the loader lock.
/// `step_error` (may be NULL) gets unw_step's error when it failed (< 0), else 0: the frames after
/// it then come from the saved frame pointers of the last good frame, and the depth is a lower bound.
int ccr_unwind_libunwind(void *ucontext, uintptr_t *frames, int max, int *depth, int *depth_is_lower_bound, int *step_error);
/// libunwind's sigprocmask (its slot for it is pointed here at load): a no-op while a handler of
/// ours walks a stack with ccr_unwind_libunwind (the handler's mask already blocks every signal
/// but the crash signals), libc's otherwise. Async-signal-safe.
int ccr_unwind_sigprocmask(int how, const sigset_t *set, sigset_t *old);
/// How many of this thread's calls to ccr_unwind_sigprocmask went to libc (for a test).
unsigned long ccr_unwind_masks_passed(void);
/// libunwind's mincore, read and syscall (its slots for them pointed here at load): in the crashing
/// thread's walk, its memory check of a page is a guarded copy of a byte of each page, and the
/// pipe read and write that follow it are answered here; everything else goes to the kernel.
/// Async-signal-safe.
int ccr_unwind_mincore(void *start, size_t length, unsigned char *vec);
ssize_t ccr_unwind_read(int fd, void *buffer, size_t count);
long ccr_unwind_syscall(long number, ...);   // x86_64's libunwind writes the page's byte with syscall(SYS_write)
ssize_t ccr_unwind_write(int fd, const void *buffer, size_t count);   // aarch64's with write()
/// The crashing thread's last walk: checks made by guarded copies, and how many of them faulted.
void ccr_unwind_copy_checks(int *checks, int *faults);
/// libunwind's dl_iterate_phdr slot points here (Setup/ccr_libunwind.c): in a walk of ours in a
/// handler, the objects come from the module table written for the record, without the loader's
/// lock; elsewhere it is libc's. Async-signal-safe in a handler's walk.
struct dl_phdr_info;
int ccr_unwind_dl_iterate_phdr(int (*callback)(struct dl_phdr_info *, size_t, void *), void *data);
/// How many of the crashing thread's walk's look-ups the table answered, how many of those only
/// after the first object offered (found by the ranges) declined, and how many it did not answer.
void ccr_unwind_table_lookups(int *answered, int *scanned, int *missed);
/// 0 when libunwind's memory-check pipe, found at load, is no longer that pipe (closed, or another
/// file under its numbers): libunwind is then not used, since it would read from, close and write
/// to those descriptors. 1 when it is intact or was never known. Async-signal-safe (fstat).
int ccr_libunwind_pipe_intact(void);
/// The watchdog thread's name (it sets it; a crash writes it without reading /proc).
#define CCR_WATCHDOG_THREAD_NAME "crash-watchdog"
/// 1 when libunwind is loaded and usable; with `may_wait`, a load deferred to a background thread
/// and not yet done is waited for (at most 50 ms). Async-signal-safe.
int ccr_libunwind_ready(int may_wait);
/// The `stack` line's unwinder when the crashing thread's stack came from frame pointers instead
/// of libunwind: which of its conditions failed. Async-signal-safe.
const char *ccr_libunwind_fallback_reason(void);

/// The outermost frames of the crashing thread's last libunwind walk, when it was deeper than the
/// frames kept: up to CCR_OUTER_FRAMES addresses, outermost last, and the true index of the
/// first. Filled only by the walk that passes a `step_error` (the crashing thread's).
#define CCR_OUTER_FRAMES 10
int ccr_unwind_outer_frames(const uintptr_t **frames, int *first_index);
/// When the kept frames end in a repeating pattern (a recursion cut by the limit: the same
/// 1…CCR_RECURSION_PERIOD_MAX frames over and over), the frames where that pattern ends farther
/// out, i.e. where the recursion was entered and from where: up to CCR_ENTRY_FRAMES addresses and
/// the true index of the first. 0 when the walk saw no such end (no recursion at the cut, or the
/// recursion reaches the outermost frames). Filled only by the crashing thread's walk.
#define CCR_ENTRY_FRAMES 10
#define CCR_RECURSION_PERIOD_MAX 12
int ccr_unwind_entry_frames(const uintptr_t **frames, int *first_index);

/// Swift async callers of the crashing thread's last libunwind walk: when one of its frames is a
/// Swift async function (its saved frame pointer has bit 60 set, x86_64), the async context at
/// [fp - 8] is followed (parent at +0, the parent's resume function at +8), each read checked,
/// at most CCR_ASYNC_FRAMES, stopping at a loop. Filled only by the walk that passes a `step_error`.
#define CCR_ASYNC_FRAMES 64
int ccr_unwind_async_frames(const uintptr_t **frames);

/// `async_frame` lines: the awaiting callers, innermost first, indices from `first_index`.
void ccr_record_write_async_frames(ccr_writer *w, const uintptr_t *frames, int count, int first_index);

/// `outer_frame` lines: the outermost frames (entry of a deep recursion and its callers), with
/// their true indices.
void ccr_record_write_outer_frames(ccr_writer *w, const uintptr_t *frames, int count, int first_index);

/// Walks saved frame pointers from (pc, fp), reading memory through process_vm_readv so a bad
/// pointer ends the walk instead of faulting. Async-signal-safe.
int ccr_unwind_frame_pointers(uintptr_t pc, uintptr_t fp, uintptr_t *frames, int max, int *depth);
/// The same from an interrupted context: also takes the return address at [sp] (x86_64) when the
/// innermost function is a frameless leaf — the word there lies inside a module, follows a call
/// instruction, and is not what the first frame record gives. Async-signal-safe.
int ccr_unwind_frame_pointers_from(uintptr_t pc, uintptr_t sp, uintptr_t fp, uintptr_t *frames, int max, int *depth);

/// Whether `address` lies in a module of the record's table just after a call instruction
/// (x86_64 and aarch64; always 0 elsewhere): what a return address looks like. Async-signal-safe.
int ccr_looks_like_return_address(uintptr_t address);

/// Scratch memory for ccr_keep_return_addresses (one per collection: a crash and a hang capture
/// may scan at the same time).
#define CCR_SCAN_BATCH 512
typedef struct ccr_scan_scratch {
    struct iovec local[CCR_SCAN_BATCH];
    struct iovec remote[CCR_SCAN_BATCH];
    uint8_t code[CCR_SCAN_BATCH][8];
} ccr_scan_scratch;

/// Keeps, in place and in order, the words that look like return addresses (as
/// ccr_looks_like_return_address decides), reading the code before all candidates in one
/// process_vm_readv of process `pid` (this process's id, from getpid(2) by the caller: not the
/// saved one, which a forked child has not yet adopted); returns how many. At most CCR_SCAN_BATCH
/// words. Async-signal-safe.
int ccr_keep_return_addresses(uintptr_t *words, int count, ccr_scan_scratch *scratch, int pid);

/// Line writers shared by the handler and the watchdog. Async-signal-safe.
void ccr_record_write_frames(ccr_writer *w, const uintptr_t *frames, int count);
/// `step_error`: libunwind's error when a step failed (written as `unwind_error`), else 0.
/// `copy_checks` (> 0: written): libunwind's memory checks made by guarded copies in the crashing
/// thread's walk, `copy_check_faults` of them faulted (ccr_unwind_mincore); `table_lookups`,
/// `table_scans` and `table_misses` (> 0: written): its look-ups of the object an address is in
/// that the module table answered, those answered only after the ranges' object declined, and
/// those it did not answer (ccr_unwind_dl_iterate_phdr).
void ccr_record_write_stack(ccr_writer *w, const char *unwinder, int kept, int depth, int lower_bound, int step_error,
                            int copy_checks, int copy_check_faults, int table_lookups, int table_scans, int table_misses);
/// The install-time module table (dl_iterate_phdr at start).
void ccr_record_write_modules(ccr_writer *w);
/// One line per request in flight (Shared/ccr_requests.h), then a summary line when there were
/// any, or when some were dropped for want of a slot. Async-signal-safe.
void ccr_record_write_requests(ccr_writer *w, int crashing_tid, uint64_t now_ns);
/// Any module table: one `module` line per entry.
void ccr_record_write_module_table(ccr_writer *w, const ccr_module *table, int count);
/// The one-line crash summary (Shared/ccr_crash_line.h) to its descriptor when it is on: record id,
/// signal (with the fault address, or the sender's pid, and whether it was a stack overflow), thread,
/// the stack's depth and the innermost 16 frames as module + offset with build-ids. Async-signal-safe.
void ccr_crash_line_write(int signo, const siginfo_t *info, int tid, const uintptr_t *frames, int count, int depth,
                          int depth_is_lower_bound, int stack_overflow);
/// Writes the end line, fdatasyncs, renames new/ → pending/, then appends the timing line.
/// Async-signal-safe.
void ccr_record_finish(ccr_writer *w, uint64_t started_ns);

/// Delivery at crash time: starts the crash-sender (when configured) for the durable record and
/// waits for it at most the configured time. `exit_status`: its exit status (128 + signal when
/// killed), or -1 when it did not end within the wait or could not start; `waited_ns`: the wait.
/// Async-signal-safe: clone, execve, wait4, nanosleep.
void ccr_sender_run(int *exit_status, uint64_t *waited_ns);

/// Resets `signo` to its default action and sends it to the calling thread (tgkill with the raw
/// getpid(), right in a forked child too), so the process ends by its own signal. Async-signal-safe.
void ccr_die(int signo);

/// Ends the calling thread's crash by `signo` after the record: a fault that will happen again
/// (si_code > 0 from the CPU, not abort or an x86 trap) gets the default action back and the
/// function returns, so the caller returns from the handler and the fault re-fires with its
/// original siginfo and context; anything else is re-raised with ccr_die. Async-signal-safe.
void ccr_end_by_signal(int signo, const siginfo_t *info);

/// Copies `length` bytes from `from` to `to` (CrashTime/ccr_safe_copy.c): 0, or -1 when reading
/// `from` faulted (the copy stops there; `to` holds a part). Only where ccr_safe_copy_recoverable()
/// said yes, in our crash handler: the fault comes back through it. Async-signal-safe.
int ccr_safe_copy(void *to, const void *from, size_t length) __attribute__((visibility("hidden")));
/// Whether a fault in ccr_safe_copy on this thread now reaches ccr_signal_handler: SIGSEGV and
/// SIGBUS not blocked, and both actions ours with SA_NODEFER. Async-signal-safe (three calls).
int ccr_safe_copy_recoverable(void);
/// The same, asked once a crash (the crash handler's thread only): the module read and libunwind's
/// checks share the answer.
int ccr_safe_copy_recoverable_in_crash(void);
/// Touches that answer's page at install (ccr_touch_pages), as ccr_unwind_prefault does.
void ccr_safe_copy_prefault(void);
/// A forked child's first crash: the answer inherited from a parent in its handler is not the
/// child's. Async-signal-safe.
void ccr_safe_copy_forget_crash_answer(void);
/// Called first by the handler: 1 when the fault is ccr_safe_copy's read, in which case the
/// context now resumes at its failure exit and the handler returns. Async-signal-safe.
int ccr_safe_copy_recover(int signo, const siginfo_t *info, void *ucontext);

/// Async-signal-safe: the raw getpid(2) system call.
int ccr_getpid(void);
/// Async-signal-safe: clock_gettime(2).
uint64_t ccr_now_ns(int clock_id);
/// Async-signal-safe: raw gettid(2).
int ccr_gettid(void);
/// process_vm_readv(2) of this process's own memory: `pid` first, then, if that id names no live
/// task (ESRCH: the main thread, whose id is the process's, exited with pthread_exit while the
/// process lives on), the calling thread's own id, which names the same memory; that thread's
/// later reads by `pid` go to its id at once. Async-signal-safe.
struct iovec;
long ccr_read_own_memory(int pid, const struct iovec *local, long local_count, const struct iovec *remote, long remote_count);
/// pthread_atfork's child handler: the forked thread forgets its parent thread's reading id.
void ccr_unwind_forget_reader_in_child(void);

#endif
