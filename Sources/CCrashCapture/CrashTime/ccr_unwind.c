// Stack walking at crash time: libunwind first, saved frame pointers as the watchdog's fallback.
// Why UNW_INIT_SIGNAL_FRAME: swiftc places `ud2` right after a function's `ret`, so plain
// unw_init_local on the ucontext looks up the wrong function and yields 2 frames for -O traps.
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include <errno.h>
#include <link.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "../include/CCrashCapture.h"
#include "ccr_crashtime.h"
#include "ccr_modules_live.h"

/// Reads one word of this process's memory without risking a fault. Async-signal-safe.
static int read_word(uintptr_t address, uintptr_t *out);
/// A stack word as a code address (aarch64: without a pointer-authentication signature).
static uintptr_t code_address(uintptr_t word);

// The crashing thread's outermost frames beyond `max`: a ring of the last CCR_OUTER_FRAMES seen.
static uintptr_t outer_ring[CCR_OUTER_FRAMES];
static uintptr_t outer_ordered[CCR_OUTER_FRAMES];
static int outer_seen;        // frames pushed into the ring
static int outer_first_index; // true index of outer_ordered[0]

static void outer_push(uintptr_t ip) {
    outer_ring[outer_seen % CCR_OUTER_FRAMES] = ip;
    outer_seen++;
}

// A recursion cut by the frame limit (a stack overflow): its entry, found as the first frame
// beyond the kept ones that breaks the kept frames' repeating pattern (see ccr_crashtime.h). The
// outermost 10 show it only when the recursion began within 10 frames of the thread's start; a
// server's handler runs under its framework's frames.
enum { RECENT_FRAMES = 16 };
_Static_assert(RECENT_FRAMES >= CCR_RECURSION_PERIOD_MAX, "a period's frames are kept");
static uintptr_t entry_frames[CCR_ENTRY_FRAMES];
static int entry_count, entry_first_index;
static int recursion_period;   // of the kept frames' end; 0: none
static int entry_state;        // 0 still in the pattern (or none), 1 taking frames, 2 done
static uintptr_t recent[RECENT_FRAMES];   // the frames beyond the kept ones, by true index % RECENT_FRAMES

/// The smallest period p (1…CCR_RECURSION_PERIOD_MAX) with which the last 3p of the `n` kept
/// frames repeat the p before them (four rounds at least), else 0. Async-signal-safe.
static int find_period(const uintptr_t *frames, int n) {
    for (int p = 1; p <= CCR_RECURSION_PERIOD_MAX && 4 * p <= n; p++) {
        int same = 1;
        for (int k = n - 3 * p; same && k < n; k++) same = frames[k] == frames[k - p];
        if (same) return p;
    }
    return 0;
}

/// Takes the frame at true index `index` (beyond the `max` kept in `frames`) for the recursion's
/// entry. Async-signal-safe.
static void entry_push(uintptr_t ip, int index, const uintptr_t *frames, int max) {
    if (index == max) recursion_period = find_period(frames, max);
    if (entry_state == 0 && recursion_period > 0) {
        int back = index - recursion_period;
        uintptr_t earlier = back < max ? frames[back] : recent[back % RECENT_FRAMES];
        if (ip != earlier) {
            entry_state = 1;
            entry_first_index = index;
        }
    }
    if (entry_state == 1) {
        entry_frames[entry_count++] = ip;
        if (entry_count == CCR_ENTRY_FRAMES) entry_state = 2;
    }
    recent[index % RECENT_FRAMES] = ip;
}

int ccr_unwind_entry_frames(const uintptr_t **frames, int *first_index) {
    *frames = entry_frames;
    *first_index = entry_first_index;
    return entry_count;
}

// The crashing thread's Swift async callers (see ccr_crashtime.h).
static uintptr_t async_frames[CCR_ASYNC_FRAMES];
static int async_count;
static uintptr_t async_context;   // the first async frame's context, 0 when none was seen

int ccr_unwind_async_frames(const uintptr_t **frames) {
    *frames = async_frames;
    return async_count;
}

#if defined(__x86_64__)
// Swift async functions on Linux x86_64 begin `push %rbp; push %r14; lea 8(%rsp), %rbp`: their
// async context (r14) is at [fp - 8]. Their frames carry no tag (bit 60 is Darwin's), so the
// async function is found by where it was called from: the executor in libswift_Concurrency.so
// (swift_job_run → runJobInEstablishedExecutorContext) runs a job by calling its resume function,
// so the frame just inside the first libswift_Concurrency frame is an async function's.
static uintptr_t concurrency_start, concurrency_end;

static int ends_with(const char *text, const char *suffix) {
    size_t n = 0, m = 0;
    while (text[n]) n++;
    while (suffix[m]) m++;
    if (m > n) return 0;
    for (size_t i = 0; i < m; i++) if (text[n - m + i] != suffix[i]) return 0;
    return 1;
}

/// libswift_Concurrency.so's range in `table`, or 0 and 0.
static void scan_for_concurrency(const ccr_module *table, int count, uintptr_t *start, uintptr_t *end) {
    *start = *end = 0;
    for (int i = 0; i < count && table != NULL; i++) {
        if (ends_with(table[i].path, "/libswift_Concurrency.so")) {
            *start = table[i].start;
            *end = table[i].end;
            return;
        }
    }
}

// Its range in start's table, found with that table (ccr_unwind_prefault): the crash's table is
// start's in nearly every crash, and the scan reads each entry's path, ~600 bytes apart, all cold.
static uintptr_t install_concurrency_start, install_concurrency_end;
static _Atomic int install_concurrency_modules = -1;   // start's module count when found, -1 while none

static void find_concurrency_module(void) {
    const ccr_module *table = NULL;
    int count = ccr_modules_written(&table);
    if (table == ccr_global.modules && atomic_load_explicit(&install_concurrency_modules, memory_order_acquire) == count) {
        concurrency_start = install_concurrency_start;
        concurrency_end = install_concurrency_end;
        return;
    }
    scan_for_concurrency(table, count, &concurrency_start, &concurrency_end);
}

/// `ip` is the current frame's; `inner_fp` the frame pointer of the frame inside it.
static void note_async_frame(uintptr_t ip, uintptr_t inner_fp) {
    uintptr_t context = 0;
    if (async_context != 0 || inner_fp == 0 || (inner_fp & 7) != 0) return;
    if (ip < concurrency_start || ip >= concurrency_end) return;
    if (read_word(inner_fp - sizeof(uintptr_t), &context) != 0 || context == 0 || (context & 7) != 0) return;
    async_context = context;
}

/// Follows the context chain from the first async frame: each parent's resume function is an
/// awaiting caller. Every read goes through process_vm_readv; a loop or a bad pointer ends it.
static void follow_async_chain(void) {
    uintptr_t context = async_context;
    for (int i = 0; i < CCR_ASYNC_FRAMES && context != 0; i++) {
        uintptr_t parent = 0, resume = 0;
        if (read_word(context, &parent) != 0 || read_word(context + sizeof(uintptr_t), &resume) != 0) break;
        if (resume == 0) break;
        async_frames[async_count++] = resume;
        if (parent == context || (parent & 7) != 0) break;
        context = parent;
    }
}
#endif

// libunwind blocks every signal around each of its locks and its dl_iterate_phdr call: a pair of
// sigprocmask system calls each time, three to four pairs a frame, ~80 % of a crash's walk (52
// frames: 52 us with them, 10 us without, in a C program on this VM). Its slot for sigprocmask is
// pointed here at load (Setup/ccr_libunwind.c). While a signal handler of ours walks a stack,
// every signal but the crash signals is already blocked by the handler's own mask, so the calls
// would change nothing: they are skipped. Elsewhere (a non-fatal report's walk) they go to libc.
static __thread int walking_in_handler __attribute__((tls_model("initial-exec")));
static __thread unsigned long masks_passed __attribute__((tls_model("initial-exec")));   // this thread's calls that went to libc

int ccr_unwind_sigprocmask(int how, const sigset_t *set, sigset_t *old) {
    // test: an asked thread's walk gets SIGABRT at libunwind's second mask call, made while it
    // holds its cache lock (the first is that lock's); as a SIGABRT sent to the process would
    static __thread int test_calls __attribute__((tls_model("initial-exec")));
    if (walking_in_handler == 2 && ccr_global.test_misbehaviour == 11 && ++test_calls == 2) {
        sigset_t abort_only;   // a process started by a thread that blocks everything inherits that
        sigemptyset(&abort_only);
        sigaddset(&abort_only, SIGABRT);
        pthread_sigmask(SIG_UNBLOCK, &abort_only, NULL);
        syscall(SYS_tgkill, (long)ccr_getpid(), (long)ccr_gettid(), (long)SIGABRT);
    }
    if (walking_in_handler) {
        // libunwind gives `old` back as the mask to restore, and that call is skipped too.
        if (old != NULL) sigemptyset(old);
        return 0;
    }
    masks_passed++;
    return sigprocmask(how, set, old);   // the slot is redirected only when it held this function
}

unsigned long ccr_unwind_masks_passed(void) {
    return masks_passed;
}

// libunwind checks a page before its first read of it in a step (src/x86_64/Ginit.c, validate_mem):
// mincore(page, 1 or 2 pages), then a read of one byte from its pipe and a write of the page's
// first byte into it (EFAULT when unreadable; syscall(SYS_write) on x86_64, write() on aarch64):
// three system calls a page. In the crashing thread's
// walk, when a fault there comes back to our handler (ccr_safe_copy_recoverable, asked once a
// crash), the check is a guarded copy of one byte of each page instead, and the pipe's read and
// write that follow it are answered without the kernel (Decision 0056).
enum { CHECK_NONE = 0, CHECK_COPIED = 1, CHECK_READ_ANSWERED = 2 };
static int check_state;              // where the current check is: mincore copied, then read, then write
static int copy_checks_allowed;      // this walk may check with guarded copies
static int copy_checks, copy_faults; // checks made so, and those that faulted (the crash's `stack` line)
// This walk makes its checks by copies and never hands libunwind's pipe to the kernel, so the
// pipe's identity is not checked first (two fstat calls): every one-byte read libunwind makes is
// answered "empty" and every one-byte write a guarded copy of that byte (Decision 0064), whatever
// the descriptor's number (libunwind opens a new pipe under other numbers when a read of its pipe
// fails; in a walk its only one-byte reads and writes are its checks). Only when every slot it
// could reach the pipe through is ours (ccr_libunwind.pipe_calls_redirected).
static int pipe_kept_from_kernel;

int ccr_unwind_mincore(void *start, size_t length, unsigned char *vec) {
    // test: as libunwind 1.8 checks, through its pipe alone (mincore goes to the kernel)
    if (walking_in_handler == 1 && copy_checks_allowed && length > 0 && length <= 2 * 4096 &&
        ((uintptr_t)start & 4095) == 0 && ccr_global.test_misbehaviour != 21) {
        copy_checks++;
        for (size_t offset = 0; offset < length; offset += 4096) {
            unsigned char byte;
            // test: the walk's first check is of page 0, which is never mapped: the copy faults
            const char *page = ccr_global.test_misbehaviour == 16 && copy_checks == 1 ? (const char *)16 : (const char *)start + offset;
            if (ccr_safe_copy(&byte, page, 1) != 0) {
                copy_faults++;
                check_state = CHECK_NONE;
                errno = ENOMEM;   // libunwind then takes the page as unreadable
                return -1;
            }
            vec[offset / 4096] = 1;
        }
        check_state = CHECK_COPIED;
        return 0;
    }
    if (walking_in_handler == 1) check_state = CHECK_NONE;   // the state is the crashing thread's alone
    return (int)syscall(SYS_mincore, start, length, vec);
}

ssize_t ccr_unwind_read(int fd, void *buffer, size_t count) {
    const ccr_libunwind *u = &ccr_global.unwind;
    if (walking_in_handler == 1 && ((check_state == CHECK_COPIED && (u->pipe_fd[0] < 0 || fd == u->pipe_fd[0])) ||
                                    (pipe_kept_from_kernel && count == 1))) {
        check_state = check_state == CHECK_COPIED ? CHECK_READ_ANSWERED : CHECK_NONE;
        errno = EAGAIN;   // an empty pipe: libunwind goes on to its write
        return -1;
    }
    if (walking_in_handler == 1) check_state = CHECK_NONE;
    return read(fd, buffer, count);
}

/// A one-byte write into libunwind's pipe in the crashing thread's walk: after an answered read,
/// answered (the copy already read the byte); else, when the pipe is kept from the kernel, made a
/// guarded copy of that byte (1, or -1 with EFAULT as the kernel would give). Returns 1 when it
/// was answered, with the call's result in `*result`; 0 when the call must go to the kernel.
static int answer_pipe_write(long fd, const void *buffer, size_t count, long *result) {
    const ccr_libunwind *u = &ccr_global.unwind;
    if (walking_in_handler != 1) return 0;
    int after_copy = check_state == CHECK_READ_ANSWERED && count == 1 && (u->pipe_fd[1] < 0 || fd == u->pipe_fd[1]);
    check_state = CHECK_NONE;
    if (after_copy) {
        errno = 0;
        *result = 1;
        return 1;
    }
    if (pipe_kept_from_kernel && count == 1) {
        unsigned char byte;
        copy_checks++;
        if (ccr_safe_copy(&byte, buffer, 1) == 0) {
            errno = 0;
            *result = 1;
        } else {
            copy_faults++;
            errno = EFAULT;
            *result = -1;
        }
        return 1;
    }
    return 0;
}

long ccr_unwind_syscall(long number, ...) {
    va_list rest;
    va_start(rest, number);
    long a[6];
    for (int i = 0; i < 6; i++) a[i] = va_arg(rest, long);
    va_end(rest);
    long result;
    if (number == SYS_write && answer_pipe_write(a[0], (const void *)a[1], (size_t)a[2], &result)) return result;
    if (walking_in_handler == 1) check_state = CHECK_NONE;
    return syscall(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}

// libunwind finds the object an address is in with dl_iterate_phdr, at each step whose unwind
// info it has not cached (src/dwarf/Gfind_proc_info-lsb.c): the loader's lock taken, the caller's
// namespace looked for, and its callback called for each object in turn until one holds the
// address. In a walk of ours in a handler, the objects come from the module table written for the
// record instead (ccr_modules_lookup_table): the one whose executable segments hold the address
// first, found by a binary search over the table's sorted ranges, then, if the callback did not
// take it, every other in the table's order, as dl_iterate_phdr would. No loader lock: a crash while
// another thread holds it (a dlopen under way) no longer waits for it, and the 13 look-ups of the
// deep-stack fixture's walk took ~12 us through the loader (Decision 0059). The address is the
// first word of libunwind's callback data (`ip` in its struct dwarf_callback_data, first in every
// version); were it not, the candidate would be wrong and the rest of the table still searched.
// Each object's program headers are copied first, by a read that cannot fault (a guarded copy in
// the crashing thread's walk, else process_vm_readv), and the callback reads the copy: an object
// unmapped since the table was written (a dlclose under way: the loader unmaps before it unlinks)
// is passed over instead of faulting in the handler (threads asked to answer a crash: see
// program_headers). An asked thread of a hang capture uses start's
// table, not the capture's, which the next capture rewrites in place. Outside our handlers (a
// non-fatal report's walk on the app's thread) it is the loader's, as libunwind would call it; in
// a handler with no table yet, nothing is found, and the walk goes on by frame pointers from there.
// The crashing thread's walk: look-ups the table answered, those of them answered only by an object
// other than the first offered (the ranges missed it), and those it did not answer.
static int table_lookups, table_scans, table_misses;

/// `m`'s program headers for libunwind's callback: copied into `out` (room for `capacity`) without
/// risking a fault, or, for a thread asked to answer a crash, in place when the crash checked the
/// object (see below). NULL when they could not be read. Async-signal-safe.
static const ElfW(Phdr) *program_headers(const ccr_module *m, int crash_checked, ElfW(Phdr) *out, int capacity) {
    if (m->phdr == 0 || m->phnum == 0 || m->phnum > capacity || m->end <= m->start) return NULL;
    size_t length = (size_t)m->phnum * sizeof out[0];
    if (walking_in_handler == 1 && ccr_safe_copy_recoverable_in_crash()) {
        return ccr_safe_copy(out, (const void *)m->phdr, length) == 0 ? out : NULL;
    }
    // A thread asked to answer a crash, reading the table the crash wrote, takes the headers of an
    // object the crash has just read from memory (its build-id read again, or the object read
    // whole) in place: a system call a look-up in each of up to 255 threads cost more than it
    // guards (20 threads: 1839 -> 1968 us of work before the sync with it, in
    // tools/bench-capture-ab). An object unmapped in the moments since would fault that thread
    // into our handler, where it waits for the crash to end, holding libunwind's cache lock: the
    // threads asked after it keep their frame-pointer walks. Objects without a build-id (never
    // read again) and any other table (start's, before the crash wrote its own; a late answer of a
    // hang capture) are copied.
    if (walking_in_handler == 2 && crash_checked && m->build_id_length > 0) return (const ElfW(Phdr) *)m->phdr;
    struct iovec local = {.iov_base = out, .iov_len = length};
    struct iovec remote = {.iov_base = (void *)m->phdr, .iov_len = length};
    return ccr_read_own_memory(ccr_global.pid, &local, 1L, &remote, 1L) == (long)length ? out : NULL;
}

int ccr_unwind_dl_iterate_phdr(int (*callback)(struct dl_phdr_info *, size_t, void *), void *data) {
    const ccr_module *table = NULL;
    int count = 0;
    if (!walking_in_handler) return dl_iterate_phdr(callback, data);
    if (data == NULL) return 0;
    int crash_checked = 0;
    int first = ccr_modules_lookup_table(*(const uintptr_t *)data, walking_in_handler == 1, &table, &count, &crash_checked);
    int result = 0, scanned = 0;
    if (table != NULL) {
        // The size of the structure before dlpi_adds: this table has no load and unload counts.
        const size_t size = offsetof(struct dl_phdr_info, dlpi_adds);
        ElfW(Phdr) headers[64];
        for (int turn = -1; turn < count && result == 0; turn++) {
            int i = turn < 0 ? first : turn;
            if (i < 0 || (turn >= 0 && i == first)) continue;
            const ccr_module *m = &table[i];
            const ElfW(Phdr) *phdr = program_headers(m, crash_checked, headers, (int)(sizeof headers / sizeof headers[0]));
            if (phdr == NULL) continue;
            struct dl_phdr_info info;
            memset(&info, 0, sizeof info);
            info.dlpi_addr = m->bias;
            info.dlpi_name = m->name_address != 0 ? (const char *)m->name_address : m->path;
            info.dlpi_phdr = phdr;
            info.dlpi_phnum = m->phnum;
            result = callback(&info, size, data);
            scanned = turn >= 0;
        }
    }
    if (walking_in_handler == 1) {
        if (result > 0) {
            table_lookups++;
            table_scans += scanned;
        } else {
            table_misses++;
        }
    }
    return result;
}

void ccr_unwind_table_lookups(int *answered, int *scanned, int *missed) {
    *answered = table_lookups;
    *scanned = table_scans;
    *missed = table_misses;
}

ssize_t ccr_unwind_write(int fd, const void *buffer, size_t count) {
    long result;
    if (answer_pipe_write(fd, buffer, count, &result)) return (ssize_t)result;
    return write(fd, buffer, count);
}

void ccr_unwind_copy_checks(int *checks, int *faults) {
    *checks = copy_checks;
    *faults = copy_faults;
}

void ccr_unwind_prefault(void) {
    // The crashing thread's walk writes these statics first (.bss, never touched before a crash):
    // touched now, without changing a byte (ccr_touch_pages), as the handler's buffer is.
    ccr_touch_pages(&outer_seen, sizeof outer_seen);
    ccr_touch_pages(&outer_first_index, sizeof outer_first_index);
    ccr_touch_pages(outer_ring, sizeof outer_ring);
    ccr_touch_pages(outer_ordered, sizeof outer_ordered);
    ccr_touch_pages(entry_frames, sizeof entry_frames);
    ccr_touch_pages(recent, sizeof recent);
    ccr_touch_pages(&entry_count, sizeof entry_count);
    ccr_touch_pages(&entry_first_index, sizeof entry_first_index);
    ccr_touch_pages(&recursion_period, sizeof recursion_period);
    ccr_touch_pages(&entry_state, sizeof entry_state);
    ccr_touch_pages(async_frames, sizeof async_frames);
    ccr_touch_pages(&async_count, sizeof async_count);
    ccr_touch_pages(&async_context, sizeof async_context);
    ccr_touch_pages(&check_state, sizeof check_state);
    ccr_touch_pages(&copy_checks_allowed, sizeof copy_checks_allowed);
    ccr_touch_pages(&pipe_kept_from_kernel, sizeof pipe_kept_from_kernel);
    ccr_touch_pages(&copy_checks, sizeof copy_checks);
    ccr_touch_pages(&copy_faults, sizeof copy_faults);
    ccr_safe_copy_prefault();
    ccr_touch_pages(&table_lookups, sizeof table_lookups);
    ccr_touch_pages(&table_misses, sizeof table_misses);
    ccr_touch_pages(&table_scans, sizeof table_scans);
#if defined(__x86_64__)
    ccr_touch_pages(&concurrency_start, sizeof concurrency_start);
    ccr_touch_pages(&concurrency_end, sizeof concurrency_end);
    // Called with start's table just made (Setup/ccr_modules.c).
    atomic_store_explicit(&install_concurrency_modules, -1, memory_order_release);
    scan_for_concurrency(ccr_global.modules, ccr_global.module_count, &install_concurrency_start, &install_concurrency_end);
    atomic_store_explicit(&install_concurrency_modules, ccr_global.module_count, memory_order_release);
#endif
}

int ccr_unwind_outer_frames(const uintptr_t **frames, int *first_index) {
    int count = outer_seen < CCR_OUTER_FRAMES ? outer_seen : CCR_OUTER_FRAMES;
    int start = outer_seen - count;   // ring position of the oldest kept
    for (int i = 0; i < count; i++) outer_ordered[i] = outer_ring[(start + i) % CCR_OUTER_FRAMES];
    *frames = outer_ordered;
    *first_index = outer_first_index + start;
    return count;
}

int ccr_libunwind_pipe_intact(void) {
    const ccr_libunwind *u = &ccr_global.unwind;
    // Not known (another thread opened a file while libunwind took its pipe): as before, except
    // in a forked child, which may have closed it and reused its numbers.
    if (u->pipe_fd[0] < 0) return ccr_global.forked_from_pid == 0;
    for (int i = 0; i < 2; i++) {
        struct stat now;
        if (fstat(u->pipe_fd[i], &now) != 0 || !S_ISFIFO(now.st_mode) ||
            (unsigned long long)now.st_dev != u->pipe_dev || (unsigned long long)now.st_ino != u->pipe_ino) {
            return 0;
        }
    }
    return 1;
}

int ccr_libunwind_ready(int may_wait) {
    int state = atomic_load_explicit(&ccr_global.unwind.state, memory_order_acquire);
    // Loaded on a background thread after start (defer_libunwind): a crash before that finishes
    // waits for it, at most 50 ms (the thread may be the one crashing, or absent in a child).
    for (int waited = 0; may_wait && state == CCR_UNWIND_PENDING && waited < 50; waited++) {
        poll(NULL, 0, 1);
        state = atomic_load_explicit(&ccr_global.unwind.state, memory_order_acquire);
    }
    return state == CCR_UNWIND_READY;
}

// Set when a crash came while a walk of ours on the same thread was under way
// (ccr_unwind_libunwind).
static volatile sig_atomic_t walk_interrupted;

const char *ccr_libunwind_fallback_reason(void) {
    if (atomic_load_explicit(&ccr_global.unwind.state, memory_order_acquire) != CCR_UNWIND_READY) {
        return "frame-pointer (libunwind not loaded)";
    }
    if (ccr_global.unwind.pipe_fd[0] < 0 && ccr_global.forked_from_pid != 0) {
        return "frame-pointer (libunwind's pipe unknown in a forked child)";
    }
    if (walk_interrupted) return "frame-pointer (crash during a libunwind walk)";
    return ccr_libunwind_pipe_intact() ? "frame-pointer" : "frame-pointer (libunwind's pipe was replaced)";
}

static int walk(void *ucontext, uintptr_t *frames, int max, int *depth, int *depth_is_lower_bound, int *step_error);

int ccr_unwind_libunwind(void *ucontext, uintptr_t *frames, int max, int *depth, int *depth_is_lower_bound, int *step_error) {
    // Called from the crash handler and the asking signal's handler only: both block every
    // signal but the crash signals while they run (see ccr_unwind_sigprocmask). A crash signal
    // can still come in the middle of a walk (a fault, or a SIGABRT sent to the process while an
    // asked thread walks), and its handler would wait forever for the lock that walk holds:
    // libunwind is not entered again on this thread, and the caller walks frame pointers.
    if (walking_in_handler) {
        *depth = 0;
        *depth_is_lower_bound = 0;
        if (step_error) {
            *step_error = 0;
            walk_interrupted = 1;
        }
        return -1;
    }
    walking_in_handler = step_error != NULL ? 1 : 2;   // the crashing thread's walk, or an asked thread's
    if (step_error != NULL) {
        check_state = CHECK_NONE;
        copy_checks = copy_faults = 0;
        table_lookups = table_scans = table_misses = 0;
        copy_checks_allowed = ccr_global.unwind.checks_redirected && ccr_global.test_misbehaviour != 17 &&
                              ccr_safe_copy_recoverable_in_crash();
        pipe_kept_from_kernel = copy_checks_allowed && ccr_global.unwind.pipe_calls_redirected;
    }
    int kept = walk(ucontext, frames, max, depth, depth_is_lower_bound, step_error);
    walking_in_handler = 0;
    if (step_error != NULL) {
        check_state = CHECK_NONE;
        pipe_kept_from_kernel = 0;
    }
    return kept;
}

static int walk(void *ucontext, uintptr_t *frames, int max, int *depth, int *depth_is_lower_bound, int *step_error) {
    const ccr_libunwind *u = &ccr_global.unwind;
    unw_cursor_t cursor;
    *depth = 0;
    *depth_is_lower_bound = 0;
    if (step_error) {
        *step_error = 0;
        outer_seen = 0;
        outer_first_index = max;
        entry_count = entry_first_index = recursion_period = entry_state = 0;
        async_count = 0;
        async_context = 0;
#if defined(__x86_64__)
        find_concurrency_module();
#endif
    }
#if defined(__x86_64__)
    uintptr_t inner_fp = 0;   // the frame pointer of the frame inside the current one (async frames)
#endif
    // No wait here: the crashing thread waited for a deferred load before its module walk, and an
    // answering thread has its frame-pointer walk already.
    if (!ccr_libunwind_ready(0) || u->init_local2 == NULL) return -1;
    if (!(step_error && pipe_kept_from_kernel) && !ccr_libunwind_pipe_intact()) return -1;
    int kept = 0;
    int counted = 0;
    // A call through a NULL function pointer faults at pc 0, where no unwind info exists. The
    // call left the caller's return address at [sp] (x86_64) or in lr (aarch64): record frame 0
    // as 0 and unwind from that return address, as if the callee had already returned.
    ucontext_t caller;
    const ucontext_t *uc = (const ucontext_t *)ucontext;
#if defined(__x86_64__)
    if (uc->uc_mcontext.gregs[REG_RIP] == 0) {
        uintptr_t return_address = 0;
        if (read_word((uintptr_t)uc->uc_mcontext.gregs[REG_RSP], &return_address) == 0 && return_address != 0) {
            caller = *uc;
            caller.uc_mcontext.gregs[REG_RIP] = (greg_t)return_address;
            caller.uc_mcontext.gregs[REG_RSP] += (greg_t)sizeof(uintptr_t);
            if (max > 0) frames[kept++] = 0;
            counted++;
            ucontext = &caller;
        }
    }
#elif defined(__aarch64__)
    if (uc->uc_mcontext.pc == 0 && uc->uc_mcontext.regs[30] != 0) {
        caller = *uc;
        caller.uc_mcontext.pc = uc->uc_mcontext.regs[30];
        if (max > 0) frames[kept++] = 0;
        counted++;
        ucontext = &caller;
    }
#endif
    if (u->init_local2(&cursor, ucontext, UNW_INIT_SIGNAL_FRAME) < 0) return -1;
    for (;;) {
        uintptr_t ip = 0;
        if (u->get_reg(&cursor, UNW_REG_IP, &ip) < 0 || ip == 0) break;
        if (kept < max) {
            frames[kept++] = ip;
        } else if (step_error) {
            outer_push(ip);
            entry_push(ip, counted, frames, max);
        }
#if defined(__x86_64__)
        const int fp_register = UNW_X86_64_RBP;
#elif defined(__aarch64__)
        const int fp_register = UNW_AARCH64_X29;
#endif
        // This frame's frame pointer: the async context's place, and where the walk goes on from
        // if the step goes wrong.
        uintptr_t fp = 0;
        int have_fp = u->get_reg(&cursor, fp_register, &fp) == 0;
#if defined(__x86_64__)
        if (step_error) {
            if (counted > 0) note_async_frame(ip, inner_fp);
            inner_fp = have_fp ? fp : 0;
        }
#endif
        counted++;
        if (counted >= CCR_MAX_COUNTED_FRAMES) {
            *depth_is_lower_bound = 1;
            break;
        }
        uintptr_t sp = 0;   // this frame's stack pointer: a "return address" just above it is a stack address
        int have_sp = u->get_reg(&cursor, UNW_REG_SP, &sp) == 0;
        // test: libunwind fails (-UNW_EBADFRAME, 7) at the third frame of the crashing thread,
        // the cursor left where it was, as a failed step leaves it
        int stepped = ccr_global.test_misbehaviour == 6 && step_error != NULL && counted == 3 ? -7 : u->step(&cursor);
        if (stepped == 0) break;   // the outermost frame
        if (stepped > 0 && have_sp) {
            // A step that lands on this thread's stack went wrong, whatever libunwind says: unwind
            // info that does not describe the code (hand-written assembly, a naked function that
            // pushes a frame) gives a saved frame pointer as the return address, and the walk
            // would end there as if the stack were complete. Taken as an error at this frame
            // (UNW_EINVALIDIP), so the frame-pointer walk below goes on from it. Only an address
            // in no module's code and within 16 MiB above this frame's stack pointer: code
            // outside every module (a JIT's, a uretprobe's trampoline) is left to libunwind. An
            // address of 0 is the stack's end (above); no table yet, no check.
            uintptr_t next = 0;
            if (u->get_reg(&cursor, UNW_REG_IP, &next) == 0 && next != 0 && next >= sp && next - sp < ((uintptr_t)16 << 20) &&
                ccr_modules_text_holds(code_address(next)) == 0) {
                stepped = -UNW_EINVALIDIP;
            }
        }
        if (stepped < 0) {
            // An error is not the end of the stack: say so, and go on from this frame's saved frame
            // pointer (what the frame-pointer walk would do), the depth then a lower bound.
            if (step_error) *step_error = stepped;
            *depth_is_lower_bound = 1;
            if (have_fp) {
                uintptr_t rest[CCR_MAX_FRAMES];
                int more = 0;
                ccr_unwind_frame_pointers(0, fp, rest, CCR_MAX_FRAMES, &more);
                for (int i = 0; i < more && counted < CCR_MAX_COUNTED_FRAMES; i++) {
                    if (kept < max) {
                        frames[kept++] = rest[i];
                    } else if (step_error) {
                        outer_push(rest[i]);
                        entry_push(rest[i], counted, frames, max);
                    }
                    counted++;
                }
            }
            break;
        }
    }
#if defined(__x86_64__)
    if (step_error) follow_async_chain();
#endif
    *depth = counted;
    return kept;
}

static int read_word(uintptr_t address, uintptr_t *out) {
    struct iovec local = {.iov_base = out, .iov_len = sizeof *out};
    struct iovec remote = {.iov_base = (void *)address, .iov_len = sizeof *out};
    long n = ccr_read_own_memory(ccr_global.pid, &local, 1L, &remote, 1L);
    return n == (long)sizeof *out ? 0 : -1;
}

// The calling thread's id, once a read by `gone_pid` failed with ESRCH and by that id worked: its
// later reads by that pid skip the failing call (a frame-pointer walk makes two reads a frame).
// Per thread, keyed by the pid asked for; reader_tid is stored before gone_pid, so a signal in
// between finds the cache empty. A forked child's one thread forgets it (pthread_atfork).
static __thread volatile sig_atomic_t gone_pid __attribute__((tls_model("initial-exec")));
static __thread volatile sig_atomic_t reader_tid __attribute__((tls_model("initial-exec")));

void ccr_unwind_forget_reader_in_child(void) {
    gone_pid = 0;
    reader_tid = 0;
}

long ccr_read_own_memory(int pid, const struct iovec *local, long local_count, const struct iovec *remote, long remote_count) {
    if (gone_pid != 0 && gone_pid == pid) {
        return syscall(SYS_process_vm_readv, (long)reader_tid, local, local_count, remote, remote_count, 0L);
    }
    long n = syscall(SYS_process_vm_readv, (long)pid, local, local_count, remote, remote_count, 0L);
    if (n < 0 && errno == ESRCH) {
        int tid = ccr_gettid();
        n = syscall(SYS_process_vm_readv, (long)tid, local, local_count, remote, remote_count, 0L);
        if (n >= 0) {
            reader_tid = tid;
            atomic_signal_fence(memory_order_seq_cst);
            gone_pid = pid;
        }
    }
    return n;
}

int ccr_aarch64_instruction_is_call(uint32_t instruction) {
    return (instruction & 0xfc000000u) == 0x94000000u ||   // BL imm26
           (instruction & 0xfffffc1fu) == 0xd63f0000u ||   // BLR Xn
           (instruction & 0xfffff81fu) == 0xd63f081fu ||   // BLRAAZ / BLRABZ Xn (pointer authentication)
           (instruction & 0xfffff800u) == 0xd73f0800u;     // BLRAA / BLRAB Xn, Xm
}

/// Whether the 8 bytes before a return address end in a call instruction (see below).
static int ends_in_call(const uint8_t code[8]) {
#if defined(__x86_64__)
    if (code[8 - 5] == 0xe8) return 1;
    static const int ff_at[] = {2, 3, 4, 6, 7};
    for (unsigned i = 0; i < sizeof ff_at / sizeof ff_at[0]; i++) {
        int k = ff_at[i];
        if (code[8 - k] == 0xff && (code[8 - k + 1] & 0x38) == 0x10) return 1;
    }
    return 0;
#elif defined(__aarch64__)
    // The last 4 bytes are the instruction before the return address (little-endian).
    uint32_t instruction = (uint32_t)code[4] | (uint32_t)code[5] << 8 | (uint32_t)code[6] << 16 | (uint32_t)code[7] << 24;
    return ccr_aarch64_instruction_is_call(instruction);
#else
    (void)code;
    return 0;
#endif
}

/// A stack word as a code address: on aarch64 a return address saved with pointer
/// authentication carries its signature in the bits above the 48-bit user address space.
static uintptr_t code_address(uintptr_t word) {
#if defined(__aarch64__)
    // XPACLRI (hint #7: a no-op on cores without pointer authentication) strips the signature
    // whatever the address size; the mask then clears anything above a 48-bit user address.
    register uintptr_t lr __asm__("x30") = word;
    __asm__("hint #7" : "+r"(lr));
    return lr & (((uintptr_t)1 << 48) - 1);
#else
    return word;
#endif
}

/// Whether `address` is in a module's executable segments and the bytes before it are a call
/// instruction (x86_64: e8 rel32, or ff /2 in its 2, 3, 4, 6 and 7-byte forms, prefixes aside;
/// aarch64: BL, BLR, BLRAA(Z), BLRAB(Z)): what a return address pushed by a call looks like.
/// Async-signal-safe.
int ccr_looks_like_return_address(uintptr_t address) {
#if defined(__x86_64__) || defined(__aarch64__)
    address = code_address(address);
    // In a module's executable segments first (a binary search, no system call): most stack
    // words are not, and only the rest cost a read of the bytes before them.
    if (address < 8 || !ccr_modules_text_contains(address)) return 0;
    uint8_t code[8];
    struct iovec local = {.iov_base = code, .iov_len = sizeof code};
    struct iovec remote = {.iov_base = (void *)(address - sizeof code), .iov_len = sizeof code};
    if (ccr_read_own_memory(ccr_getpid(), &local, 1L, &remote, 1L) != (long)sizeof code) return 0;
    return ends_in_call(code);   // code[8 - k] is the byte k before the return address
#else
    (void)address;
    return 0;
#endif
}

int ccr_keep_return_addresses(uintptr_t *words, int count, ccr_scan_scratch *scratch, int pid) {
#if defined(__x86_64__) || defined(__aarch64__)
    int n = 0;
    for (int i = 0; i < count; i++) {
        uintptr_t address = code_address(words[i]);
        if (address >= 8 && ccr_modules_text_contains(address)) words[n++] = address;
    }
    if (n > CCR_SCAN_BATCH) n = CCR_SCAN_BATCH;
    for (int i = 0; i < n; i++) {
        scratch->local[i] = (struct iovec){.iov_base = scratch->code[i], .iov_len = 8};
        scratch->remote[i] = (struct iovec){.iov_base = (void *)(words[i] - 8), .iov_len = 8};
    }
    long got = n > 0 ? ccr_read_own_memory(pid, scratch->local, (long)n, scratch->remote, (long)n) : 0;
    int kept = 0;
    for (int i = 0; i < n; i++) {
        // Read in order until a failing range: the ones after it are asked one at a time.
        int yes = got >= (long)(8 * (i + 1)) ? ends_in_call(scratch->code[i]) : ccr_looks_like_return_address(words[i]);
        if (yes) words[kept++] = words[i];
    }
    return kept;
#else
    (void)words; (void)count; (void)scratch; (void)pid;
    return 0;
#endif
}

int ccr_unwind_frame_pointers_from(uintptr_t pc, uintptr_t sp, uintptr_t fp, uintptr_t *frames, int max, int *depth) {
    int kept = 0;
    // From a context (sp given), frame 0 is the pc even when it is 0 (a call through a NULL
    // function pointer): the return address found below is then frame 1, looked up as a return
    // address, as libunwind's path does. Without one (pc 0, sp 0: the continuation after a failed
    // libunwind step), there is no pc to record.
    if (max > 0 && (pc != 0 || sp != 0)) frames[kept++] = pc;
    // A frameless leaf (no push of rbp: compiled without frame pointers, or stopped before its
    // prologue) leaves rbp at its caller's frame, so the walk below starts at the caller's caller
    // and the caller is lost. Its return address is then at [sp]: take it when it looks like one
    // and is not the address the first frame record would give anyway.
    if (sp != 0 && kept < max && (fp == 0 || sp < fp)) {
        uintptr_t at_sp = 0, first_return = 0;
        if (read_word(sp, &at_sp) == 0 && at_sp != 0 && at_sp != pc &&
            (fp == 0 || read_word(fp + sizeof(uintptr_t), &first_return) != 0 || first_return != at_sp) &&
            ccr_looks_like_return_address(at_sp)) {
            frames[kept++] = code_address(at_sp);
        }
    }
    while (kept < max && fp != 0 && (fp & (sizeof(uintptr_t) - 1)) == 0) {
        uintptr_t next_fp = 0, return_address = 0;
        if (read_word(fp, &next_fp) != 0 || read_word(fp + sizeof(uintptr_t), &return_address) != 0) break;
        if (return_address == 0) break;
        frames[kept++] = code_address(return_address);
        if (next_fp <= fp) break;   // frames grow towards higher addresses; anything else is garbage
        fp = next_fp;
    }
    *depth = kept;
    return kept;
}

int ccr_unwind_frame_pointers(uintptr_t pc, uintptr_t fp, uintptr_t *frames, int max, int *depth) {
    return ccr_unwind_frame_pointers_from(pc, 0, fp, frames, max, depth);
}
