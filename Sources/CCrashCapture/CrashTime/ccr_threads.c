// Other threads at a crash. /proc/self/task is listed with getdents64 on a descriptor opened with
// open(2) (opendir/readdir allocate and lock); names come from /proc/self/task/TID/comm and signal
// masks from .../status, both with open+read. Each thread that does not block the chosen
// real-time signal is sent it with tgkill and unwinds itself in ccr_threads_answer: frame
// pointers first (validated reads, no lock, cannot stall), then libunwind (exact through code
// without frame pointers, such as glibc, but it may wait on the loader lock). The crashing thread
// takes the best walk each thread finished before its deadline. Why not ptrace or a helper
// process: see Docs/Decisions/0010-all-threads.md.
#include <errno.h>
#include <linux/futex.h>
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "ccr_crashtime.h"
#include "ccr_threads.h"
#include "ccr_sender.h"

ccr_threads_state ccr_threads;

/// The kernel's record for getdents64(2); glibc declares no such type without <dirent.h>'s
/// allocation-based API, so it is mirrored here and pinned.
struct ccr_dirent64 {
    uint64_t d_ino;
    int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};
_Static_assert(offsetof(struct ccr_dirent64, d_reclen) == 16, "linux_dirent64 layout");
_Static_assert(offsetof(struct ccr_dirent64, d_name) == 19, "linux_dirent64 layout");

/// What the crashing thread learned about one other thread. Used by the crashing thread only.
typedef struct listed_thread {
    int tid;
    int state;           // one of the LISTED_* below
    int slot;            // index in ccr_threads.slots when asked, else -1
    char name[17];
} listed_thread;

enum { LISTED_ASKED, LISTED_BLOCKED, LISTED_EXITED, LISTED_REPORTER, LISTED_NOT_ASKED };

static listed_thread listed[CCR_THREADS_MAX];
static char dirents[4096];
static char status_text[4096];

// MARK: - The answering side

/// An asked thread stays in its handler while the process dies, like a debugger's all-stop.
/// Returning would end its interrupted call early (sleep, nanosleep, poll and sem_wait are never
/// restarted), and a thread that takes that for its cue to exit() ends the process before the
/// record is durable (seen: a fixture's main thread in sleep(20) printed "did not crash" and
/// exited). Bounded like wait_for_other_crash in the handler, in case the process lives on.
/// Async-signal-safe: poll.
static void stay_until_the_process_ends(void) {
    // 10 s, and longer by the crash-sender's wait when delivery at crash time is on: a thread let
    // go while the crashed process waits for the sender would go back to work (see above).
    int rounds = 100 + (ccr_sender.enabled ? ccr_sender.wait_ms / 100 + 1 : 0);
    for (int i = 0; i < rounds; i++) poll(NULL, 0, 100);
}

static void answer(void *ucontext);

void ccr_threads_answer(int signo, siginfo_t *info, void *ucontext) {
    (void)signo;
    int saved_errno = errno;
    int mode = atomic_load(&ccr_threads.active);
    if (!mode || ucontext == NULL ||
        (info && (info->si_code != SI_TKILL || info->si_pid != ccr_global.pid))) {
        errno = saved_errno;
        return;   // not ours: only the crashing thread (or the hang monitor) of this process asks, with tgkill
    }
    atomic_fetch_add(&ccr_threads.in_answer, 1);
    answer(ucontext);
    atomic_fetch_sub(&ccr_threads.in_answer, 1);
    // At a crash the thread stays (see stay_until_the_process_ends); for a hang it goes back to
    // what it was doing, like after a profiler's signal.
    if (mode == CCR_COLLECTING_CRASH || atomic_load(&ccr_threads.active) == CCR_COLLECTING_CRASH) stay_until_the_process_ends();
    errno = saved_errno;
}

/// Unwinds the calling thread into its slot, if it has one. Async-signal-safe.
static void answer(void *ucontext) {
    int tid = ccr_gettid();
    ccr_thread_slot *slot = NULL;
    int asked = ccr_threads.asked;
    for (int i = 0; i < asked; i++) {
        if (ccr_threads.slots[i].tid == tid) {
            slot = &ccr_threads.slots[i];
            break;
        }
    }
    if (slot != NULL && ccr_global.test_misbehaviour == 5) {   // test: no thread answers
        stay_until_the_process_ends();
        slot = NULL;
    }
    int expected = CCR_SLOT_ASKED;
    if (slot == NULL || !atomic_compare_exchange_strong(&slot->state, &expected, CCR_SLOT_WRITING_FP)) return;
    const ucontext_t *uc = (const ucontext_t *)ucontext;
#if defined(__x86_64__)
    uintptr_t pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP], fp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
    uintptr_t sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
#elif defined(__aarch64__)
    uintptr_t pc = (uintptr_t)uc->uc_mcontext.pc, fp = (uintptr_t)uc->uc_mcontext.regs[29];
    uintptr_t sp = 0;
#endif
    slot->fp_count = ccr_unwind_frame_pointers_from(pc, sp, fp, slot->fp_frames, ccr_threads.frames, &slot->fp_depth);
    atomic_store(&slot->state, CCR_SLOT_FP_DONE);

    expected = CCR_SLOT_FP_DONE;
    if (ccr_global.test_misbehaviour == 4) expected = -1;   // test: libunwind never finishes
    if (atomic_compare_exchange_strong(&slot->state, &expected, CCR_SLOT_WRITING_LU)) {
        int depth = 0, lower_bound = 0;
        int kept = ccr_unwind_libunwind(ucontext, slot->lu_frames, ccr_threads.frames, &depth, &lower_bound, NULL);
        slot->lu_count = kept;
        slot->lu_depth = depth;
        slot->lu_lower_bound = lower_bound;
        atomic_store(&slot->state, kept > 0 ? CCR_SLOT_LU_DONE : CCR_SLOT_LU_FAILED);
        // Wake the crashing thread at once rather than at its next look.
        atomic_fetch_add(&ccr_threads.answers, 1);
        syscall(SYS_futex, &ccr_threads.answers, (long)FUTEX_WAKE_PRIVATE, 1L, NULL, NULL, 0L);
    }
}

// MARK: - The crashing side

/// "/proc/self/task/<tid>/<leaf>" into `out` (at least 64 bytes). Async-signal-safe.
static void task_path(char *out, int tid, const char *leaf) {
    static const char prefix[] = "/proc/self/task/";
    size_t n = 0;
    for (; prefix[n]; n++) out[n] = prefix[n];
    char digits[12];
    int count = 0;
    unsigned value = (unsigned)tid;
    do {
        digits[count++] = (char)('0' + value % 10);
        value /= 10;
    } while (value && count < (int)sizeof digits);
    while (count) out[n++] = digits[--count];
    out[n++] = '/';
    for (size_t i = 0; leaf[i] && n < 62; i++) out[n++] = leaf[i];
    out[n] = '\0';
}

/// Reads up to `capacity - 1` bytes of a small /proc file, NUL-terminated. Returns the length or -1.
/// Async-signal-safe: open, read, close.
static int read_small_file(const char *path, char *buffer, size_t capacity) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    size_t used = 0;
    while (used + 1 < capacity) {
        ssize_t n = read(fd, buffer + used, capacity - 1 - used);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        used += (size_t)n;
    }
    close(fd);
    buffer[used] = '\0';
    return (int)used;
}

/// The thread's name from its comm file (15 bytes at most). Async-signal-safe.
static void read_name(int tid, char name[17]) {
    char path[64];
    task_path(path, tid, "comm");
    memset(name, 0, 17);
    int n = read_small_file(path, name, 17);
    if (n > 0 && name[n - 1] == '\n') name[n - 1] = '\0';
}

/// 1 when the thread blocks `signo` (SigBlk in its status), 0 when not, -1 when unreadable (gone).
/// Async-signal-safe.
static int blocks_signal(int tid, int signo) {
    char path[64];
    task_path(path, tid, "status");
    int n = read_small_file(path, status_text, sizeof status_text);
    if (n <= 0) return -1;
    static const char key[] = "\nSigBlk:";
    for (int i = 0; i + (int)sizeof key - 1 <= n; i++) {
        if (memcmp(status_text + i, key, sizeof key - 1) != 0) continue;
        const char *p = status_text + i + sizeof key - 1;
        while (*p == ' ' || *p == '\t') p++;
        uint64_t mask = 0;
        for (;; p++) {
            int digit;
            if (*p >= '0' && *p <= '9') digit = *p - '0';
            else if (*p >= 'a' && *p <= 'f') digit = *p - 'a' + 10;
            else if (*p >= 'A' && *p <= 'F') digit = *p - 'A' + 10;
            else break;
            mask = (mask << 4) | (uint64_t)digit;
        }
        return (mask >> (signo - 1)) & 1 ? 1 : 0;
    }
    return 0;
}

/// Fills `listed` from /proc/self/task, leaving out the crashing thread. Returns how many were
/// listed; `*total` gets how many other threads exist (the listing stops at the limit).
/// Async-signal-safe: open, getdents64, close.
static int list_threads(int crashed_tid, int *total) {
    *total = 0;
    int count = 0;
    int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return 0;
    for (;;) {
        long n = syscall(SYS_getdents64, (long)fd, dirents, (long)sizeof dirents);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        for (long offset = 0; offset < n;) {
            const struct ccr_dirent64 *entry = (const struct ccr_dirent64 *)(dirents + offset);
            offset += entry->d_reclen;
            if (entry->d_reclen == 0) break;
            int tid = 0;
            const char *p = entry->d_name;
            if (*p < '0' || *p > '9') continue;   // "." and ".."
            for (; *p >= '0' && *p <= '9'; p++) tid = tid * 10 + (*p - '0');
            if (tid == crashed_tid) continue;
            (*total)++;
            if (count < ccr_threads.limit) listed[count++].tid = tid;
        }
    }
    close(fd);
    return count;
}

/// The record's word for a thread's answer. Async-signal-safe.
static const char *state_name(int listed_state, int slot_state) {
    switch (listed_state) {
    case LISTED_BLOCKED: return "blocked_signal";
    case LISTED_EXITED: return "exited";
    case LISTED_REPORTER: return "crash_reporter";
    case LISTED_NOT_ASKED: return "not_asked";
    default: break;
    }
    switch (slot_state) {
    case CCR_SLOT_LU_DONE:
    case CCR_SLOT_LU_FAILED:
    case CCR_SLOT_FP_DONE:
    case CCR_SLOT_WRITING_LU: return "answered";
    default: return "no_answer";
    }
}

static uintptr_t scan_frames[CCR_THREAD_FRAMES_MAX];
static uintptr_t scan_words[64];

/// A hexadecimal field ("0x7ffd…") at `*p`, moving past it. Async-signal-safe.
static uintptr_t parse_hex(const char **p) {
    const char *q = *p;
    if (q[0] == '0' && q[1] == 'x') q += 2;
    uintptr_t value = 0;
    for (;; q++) {
        int digit;
        if (*q >= '0' && *q <= '9') digit = *q - '0';
        else if (*q >= 'a' && *q <= 'f') digit = *q - 'a' + 10;
        else break;
        value = (value << 4) | (uintptr_t)digit;
    }
    *p = q;
    return value;
}

/// A thread that cannot be asked (it blocks the signal: libdispatch's workers, which run Swift's
/// cooperative pool, block every signal): while it waits in a system call the kernel gives its
/// stack pointer and pc in /proc/self/task/TID/syscall ("nr a1…a6 sp pc"); the words above sp
/// that look like return addresses (in a module, after a call) are its callers, as a stack scan
/// finds them (possibly with stale ones: the stack line says "stack-scan"). Returns the frames
/// found, 0 when it was not in a system call. Async-signal-safe: open, read, process_vm_readv.
static int scan_blocked_thread(int tid, int max) {
    char path[64], text[256];
    task_path(path, tid, "syscall");
    int n = read_small_file(path, text, sizeof text);
    if (n <= 0 || !((text[0] >= '0' && text[0] <= '9') || text[0] == '-')) return 0;   // "running"
    // The last two fields are sp and pc.
    const char *fields[9];
    int count = 0;
    for (const char *p = text; *p && count < 9;) {
        while (*p == ' ') p++;
        if (!*p || *p == '\n') break;
        fields[count++] = p;
        while (*p && *p != ' ' && *p != '\n') p++;
    }
    if (count < 3) return 0;
    const char *p = fields[count - 2];
    uintptr_t sp = parse_hex(&p);
    p = fields[count - 1];
    uintptr_t pc = parse_hex(&p);
    if (sp == 0 || pc == 0) return 0;
    int kept = 0;
    scan_frames[kept++] = pc;
    uintptr_t at = sp & ~(uintptr_t)(sizeof(uintptr_t) - 1);
    for (int chunk = 0; chunk < 64 && kept < max; chunk++) {   // at most 32 KiB of stack
        struct iovec local = {.iov_base = scan_words, .iov_len = sizeof scan_words};
        struct iovec remote = {.iov_base = (void *)at, .iov_len = sizeof scan_words};
        long got = syscall(SYS_process_vm_readv, (long)ccr_getpid(), &local, 1L, &remote, 1L, 0L);
        if (got <= 0) break;
        for (long i = 0; i < got / (long)sizeof(uintptr_t) && kept < max; i++) {
            if (ccr_looks_like_return_address(scan_words[i])) scan_frames[kept++] = scan_words[i];
        }
        if (got < (long)sizeof scan_words) break;   // the end of the stack's mapping
        at += (uintptr_t)got;
    }
    return kept;
}

/// Writes one thread section; returns 1 when the thread answered with a complete walk.
/// Async-signal-safe.
static int write_thread(ccr_writer *w, const listed_thread *t) {
    int slot_state = CCR_SLOT_FREE;
    ccr_thread_slot *slot = t->slot >= 0 ? &ccr_threads.slots[t->slot] : NULL;
    if (slot) {
        // Close the slot unless a walk is complete or being written after a complete one: once
        // closed, the thread never writes into it, so the frames read below cannot change.
        slot_state = atomic_load(&slot->state);
        while (slot_state == CCR_SLOT_ASKED || slot_state == CCR_SLOT_FP_DONE) {
            int seen = slot_state;
            if (atomic_compare_exchange_strong(&slot->state, &slot_state, CCR_SLOT_CLOSED)) {
                slot_state = seen == CCR_SLOT_ASKED ? CCR_SLOT_CLOSED : CCR_SLOT_FP_DONE;
                break;
            }
        }
    }
    ccr_writer_text(w, "{\"type\":\"thread\"");
    ccr_writer_key(w, "tid", 0);
    ccr_writer_int(w, t->tid);
    ccr_writer_key(w, "name", 0);
    ccr_writer_json_string(w, t->name, 16);
    ccr_writer_key(w, "main", 0);
    ccr_writer_text(w, t->tid == ccr_global.pid ? "true" : "false");
    ccr_writer_text(w, ",\"crashed\":false,\"state\":");
    ccr_writer_json_string(w, state_name(t->state, slot_state), 32);
    ccr_writer_text(w, "}\n");
    if (t->state == LISTED_BLOCKED || t->state == LISTED_NOT_ASKED) {
        int scanned = scan_blocked_thread(t->tid, ccr_threads.frames);
        if (scanned > 0) {
            ccr_record_write_frames(w, scan_frames, scanned);
            ccr_record_write_stack(w, "stack-scan", scanned, scanned, 1, 0);
        }
        return 0;
    }
    if (slot == NULL) return 0;
    if (slot_state == CCR_SLOT_LU_DONE) {
        ccr_record_write_frames(w, slot->lu_frames, slot->lu_count);
        ccr_record_write_stack(w, "libunwind", slot->lu_count, slot->lu_depth, slot->lu_lower_bound, 0);
    } else if (slot_state == CCR_SLOT_FP_DONE || slot_state == CCR_SLOT_WRITING_LU || slot_state == CCR_SLOT_LU_FAILED) {
        ccr_record_write_frames(w, slot->fp_frames, slot->fp_count);
        ccr_record_write_stack(w, "frame-pointer", slot->fp_count, slot->fp_depth, 0, 0);
    } else {
        return 0;
    }
    return 1;
}

/// A slot whose thread may still store a walk. Async-signal-safe.
/// One of this library's own threads (marked by ccr_threads_mark_reporter): idle or sending,
/// never what a crash is about, so not worth a round trip. Async-signal-safe.
static int is_reporter_thread(int tid) {
    for (int i = 0; i < CCR_REPORTER_THREADS; i++) {
        if (atomic_load_explicit(&ccr_threads.reporter_tids[i], memory_order_relaxed) == tid) return 1;
    }
    return 0;
}

static int still_pending(int state) {
    return state == CCR_SLOT_ASKED || state == CCR_SLOT_WRITING_FP || state == CCR_SLOT_FP_DONE || state == CCR_SLOT_WRITING_LU;
}

static void collect_and_write(ccr_writer *w, int crashed_tid, uint64_t started_ns, int mode, int first_tid);

void ccr_threads_write(ccr_writer *w, int crashed_tid, uint64_t started_ns) {
    if (!ccr_threads.enabled) return;
    // A hang capture may hold the slots: give it a moment (it is bounded), then take them anyway;
    // it sees the crash and abandons its record.
    int expected = 0;
    for (int i = 0; i < 300 && !atomic_compare_exchange_strong(&ccr_threads.collecting, &expected, 1); i++) {
        expected = 0;
        struct timespec pause = {.tv_sec = 0, .tv_nsec = 1000000};
        nanosleep(&pause, NULL);
    }
    atomic_store(&ccr_threads.collecting, 1);
    collect_and_write(w, crashed_tid, started_ns, CCR_COLLECTING_CRASH, 0);
}

int ccr_threads_begin_hang_capture(void) {
    if (!ccr_threads.enabled || atomic_load(&ccr_threads.hang_unusable) || atomic_load(&ccr_global.crashing_tid) != 0) return -1;
    int expected = 0;
    return atomic_compare_exchange_strong(&ccr_threads.collecting, &expected, 1) ? 0 : -1;
}

int ccr_threads_write_for_hang(ccr_writer *w, int hung_tid) {
    collect_and_write(w, ccr_gettid(), ccr_now_ns(CLOCK_MONOTONIC), CCR_COLLECTING_HANG, hung_tid);
    int crashed = atomic_load(&ccr_threads.active) == CCR_COLLECTING_CRASH || atomic_load(&ccr_global.crashing_tid) != 0;
    if (crashed) return -1;   // a crash took over: the process is ending, the crash record is what matters
    // The slots are reused by the next capture: every thread must be out of its handler first.
    // One still in libunwind after the wait would write into a slot armed again; if that can
    // happen, hang captures stop asking threads for the rest of the process.
    int left = 0;
    for (int i = 0; i < 1000 && (left = atomic_load(&ccr_threads.in_answer)) > 0; i++) {
        struct timespec pause = {.tv_sec = 0, .tv_nsec = 1000000};
        nanosleep(&pause, NULL);
    }
    if (left > 0) atomic_store(&ccr_threads.hang_unusable, 1);
    atomic_store(&ccr_threads.active, 0);
    atomic_store(&ccr_threads.collecting, 0);
    return 0;
}

static void collect_and_write(ccr_writer *w, int crashed_tid, uint64_t started_ns, int mode, int first_tid) {
    uint64_t began = ccr_now_ns(CLOCK_MONOTONIC);
    int total = 0;
    int count = list_threads(crashed_tid, &total);
    // Someone may have taken the signal since start (a handler installed later replaces ours):
    // then sending it would run their handler in every thread. List the threads, ask none.
    struct sigaction current;
    int signal_ours = sigaction(ccr_threads.signo, NULL, &current) == 0 && (current.sa_flags & SA_SIGINFO) &&
                      current.sa_sigaction == ccr_threads_answer;

    // Arm every slot before the first signal: an answer may arrive while later ones are armed.
    int asked = 0;
    for (int i = 0; i < count; i++) {
        listed_thread *t = &listed[i];
        t->slot = -1;
        read_name(t->tid, t->name);
        if (t->tid == ccr_global.watchdog_tid || is_reporter_thread(t->tid)) {
            t->state = LISTED_REPORTER;
            continue;
        }
        int blocked = signal_ours ? blocks_signal(t->tid, ccr_threads.signo) : 0;
        if (!signal_ours) {
            t->state = LISTED_NOT_ASKED;
        } else if (blocked < 0) {
            t->state = LISTED_EXITED;
        } else if (blocked) {
            t->state = LISTED_BLOCKED;
        } else {
            t->state = LISTED_ASKED;
            t->slot = asked;
            ccr_thread_slot *slot = &ccr_threads.slots[asked++];
            slot->tid = t->tid;
            slot->fp_count = slot->lu_count = 0;
            atomic_store(&slot->state, CCR_SLOT_ASKED);
        }
    }
    ccr_threads.asked = asked;
    // A crash during a hang capture wins: its mode, once stored, is never lowered here.
    if (mode == CCR_COLLECTING_CRASH || atomic_load(&ccr_threads.active) != CCR_COLLECTING_CRASH) atomic_store(&ccr_threads.active, mode);
    for (int i = 0; i < count; i++) {
        listed_thread *t = &listed[i];
        if (t->state != LISTED_ASKED) continue;
        if (syscall(SYS_tgkill, (long)ccr_global.pid, (long)t->tid, (long)ccr_threads.signo) != 0) {
            atomic_store(&ccr_threads.slots[t->slot].state, CCR_SLOT_CLOSED);
            t->state = LISTED_EXITED;
            t->slot = -1;
        }
    }

    // The whole wait stays well inside the watchdog's budget: at most half of what is left.
    uint64_t now = ccr_now_ns(CLOCK_MONOTONIC);
    uint64_t budget_ns = (uint64_t)ccr_threads.wait_ms * 1000000ull;
    uint64_t watchdog_ns = (uint64_t)ccr_global.watchdog_timeout_ms * 1000000ull;
    uint64_t spent = now - started_ns;
    uint64_t left = watchdog_ns > spent ? (watchdog_ns - spent) / 2 : 0;
    if (budget_ns > left) budget_ns = left;
    uint64_t deadline = now + budget_ns;
    for (;;) {
        int seen = atomic_load(&ccr_threads.answers);
        int pending = 0;
        for (int i = 0; i < asked; i++) pending += still_pending(atomic_load(&ccr_threads.slots[i].state));
        uint64_t at = ccr_now_ns(CLOCK_MONOTONIC);
        if (pending == 0 || at >= deadline) break;
        // Sleep until an answer bumps the counter (a wake, or EAGAIN if one came since `seen`),
        // at most 1 ms: a thread that answered only with frame pointers (libunwind stalled)
        // bumps nothing, and its state is seen at the next look.
        uint64_t nap = deadline - at < 1000000ull ? deadline - at : 1000000ull;
        struct timespec timeout = {.tv_sec = 0, .tv_nsec = (long)nap};
        syscall(SYS_futex, &ccr_threads.answers, (long)FUTEX_WAIT_PRIVATE, (long)seen, &timeout, NULL, 0L);
    }
    uint64_t waited = ccr_now_ns(CLOCK_MONOTONIC) - now;   // from the last signal sent

    int answered = 0;
    // A hang record's first thread is the one that stopped beating: the record's main thread.
    for (int i = 0; i < count; i++) if (first_tid && listed[i].tid == first_tid) answered += write_thread(w, &listed[i]);
    for (int i = 0; i < count; i++) if (!first_tid || listed[i].tid != first_tid) answered += write_thread(w, &listed[i]);
    if (mode == CCR_COLLECTING_CRASH) atomic_store(&ccr_threads.active, 0);

    ccr_writer_text(w, "{\"type\":\"threads\"");
    ccr_writer_key(w, "total", 0);
    ccr_writer_int(w, total + 1);
    ccr_writer_key(w, "listed", 0);
    ccr_writer_int(w, count + 1);
    ccr_writer_key(w, "asked", 0);
    ccr_writer_int(w, asked);
    ccr_writer_key(w, "answered", 0);
    ccr_writer_int(w, answered);
    ccr_writer_key(w, "signo", 0);
    ccr_writer_int(w, ccr_threads.signo);
    ccr_writer_key(w, "signal_taken", 0);
    ccr_writer_text(w, signal_ours ? "false" : "true");
    ccr_writer_key(w, "wait_ns", 0);
    ccr_writer_uint(w, waited);
    ccr_writer_key(w, "elapsed_ns", 0);
    ccr_writer_uint(w, ccr_now_ns(CLOCK_MONOTONIC) - began);
    ccr_writer_text(w, "}\n");
    ccr_writer_flush(w);
}
