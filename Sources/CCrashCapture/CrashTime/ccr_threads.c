// Other threads at a crash. /proc/self/task is listed with getdents64 on a descriptor opened with
// open(2) (opendir/readdir allocate and lock); names and signal masks come from one read of
// /proc/self/task/TID/status (open+read+close). Each thread that does not block the chosen
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
#include <sys/stat.h>
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

enum { LISTED_ASKED, LISTED_BLOCKED, LISTED_EXITED, LISTED_REPORTER, LISTED_NOT_ASKED, LISTED_STOPPED };

// MARK: - The answering side

static void answer(ccr_collection *c, void *ucontext);

/// An asked thread stays in its handler while the process dies, like a debugger's all-stop.
/// Returning would end its interrupted call early (sleep, nanosleep, poll and sem_wait are never
/// restarted), and a thread that takes that for its cue to exit() ends the process before the
/// record is durable (seen: a fixture's main thread in sleep(20) printed "did not crash" and
/// exited). Bounded like wait_for_other_crash in the handler, in case the process lives on.
/// While it stays, its own signal is blocked, so a crash's ask would never reach it: it looks for
/// one every 10 ms (a thread that was answering a hang capture when the crash came answers the
/// crash from here). `ucontext` NULL: it only stays. Async-signal-safe: poll.
static void stay_until_the_process_ends(void *ucontext) {
    // 10 s, and longer by the crash-sender's wait when delivery at crash time is on: a thread let
    // go while the crashed process waits for the sender would go back to work (see above).
    int rounds = (100 + (ccr_sender.enabled ? ccr_sender.wait_ms / 100 + 1 : 0)) * 10;
    for (int i = 0; i < rounds; i++) {
        if (ucontext != NULL && atomic_load(&ccr_threads.crash.active)) answer(&ccr_threads.crash, ucontext);
        poll(NULL, 0, 10);
    }
}

/// Lists the calling thread among those in their answer handler; returns its entry or NULL.
static atomic_int *enter_handler(int tid) {
    for (int i = 0; i < CCR_THREADS_MAX; i++) {
        int expected = 0;
        if (atomic_compare_exchange_strong(&ccr_threads.staying[i], &expected, tid)) return &ccr_threads.staying[i];
    }
    return NULL;
}

/// Whether `tid` is in its answer handler (and so looks for a crash's ask). Async-signal-safe.
static int is_staying(int tid) {
    for (int i = 0; i < CCR_THREADS_MAX; i++) {
        if (atomic_load_explicit(&ccr_threads.staying[i], memory_order_relaxed) == tid) return 1;
    }
    return 0;
}

// Set while this thread is in its answer (ccr_threads_answer): a fault there, or a signal sent to
// the process that lands on it then, is not a crash of the app's code (ccr_threads_wait_crashed_too).
static __thread volatile sig_atomic_t in_answer __attribute__((tls_model("initial-exec")));

void ccr_threads_answer(int signo, siginfo_t *info, void *ucontext) {
    (void)signo;
    int saved_errno = errno;
    int crash = atomic_load(&ccr_threads.crash.active), hang = atomic_load(&ccr_threads.hang.active);
    if ((!crash && !hang) || ucontext == NULL ||
        (info && (info->si_code != SI_TKILL || info->si_pid != ccr_global.pid))) {
        errno = saved_errno;
        return;   // not ours: only the crashing thread (or the hang monitor) of this process asks, with tgkill
    }
    // Listed while in here: a crash that comes meanwhile asks this thread though its signal is
    // blocked (its mask says so), and the thread answers from stay_until_the_process_ends.
    atomic_int *entry = enter_handler(ccr_gettid());
    in_answer = 1;
    answer(crash ? &ccr_threads.crash : &ccr_threads.hang, ucontext);
    // test: a thread that answered a hang capture stays in its handler until a crash begins (at
    // most 10 s), so that the crash asks it while its own signal is blocked
    for (int i = 0; !crash && ccr_global.test_misbehaviour == 7 && i < 1000 && atomic_load(&ccr_global.crashing_tid) == 0; i++) {
        poll(NULL, 0, 10);
    }
    // At a crash the thread stays (see stay_until_the_process_ends); for a hang it goes back to
    // what it was doing, like after a profiler's signal.
    if (crash || atomic_load(&ccr_global.crashing_tid) != 0) stay_until_the_process_ends(ucontext);
    in_answer = 0;
    if (entry != NULL) atomic_store(entry, 0);
    errno = saved_errno;
}

void ccr_threads_wait_crashed_too(int signo, const siginfo_t *info, void *ucontext) {
    int tid = ccr_gettid();
    // A fault inside this thread's own answer (its walk of its stack for the crash), or a signal
    // sent to the process that lands on it meanwhile, is not the app crashing again: the thread is
    // already listed and answering (or its answer is what failed); it only waits.
    if (in_answer) {
        stay_until_the_process_ends(NULL);
        return;
    }
    // Listed as staying first, then noted: the crash asks a staying thread though its mask (the
    // crash handler's) blocks the signal, and it answers from here, with the context of its own
    // crash. Noted before it stays, it could be listed in between as blocking the signal.
    atomic_int *staying = ccr_threads.enabled && ucontext != NULL ? enter_handler(tid) : NULL;
    for (int i = 0; i < CCR_CRASHED_TOO_MAX; i++) {
        int expected = 0;
        if (!atomic_compare_exchange_strong(&ccr_threads.crashed_too[i].tid, &expected, tid)) continue;
        ccr_crashed_too *entry = &ccr_threads.crashed_too[i];
        entry->signo = signo;
        entry->code = info ? info->si_code : 0;
        entry->fault_address = info && info->si_code > 0 ? (uintptr_t)info->si_addr : 0;
        // abort() and raise() send the signal to the thread itself (SI_TKILL from our own pid): a
        // crash of its own. Any other sent signal (kill from another process, from outside its pid
        // namespace with si_pid 0, or kill(getpid()) from another thread) is "received".
        entry->received = info != NULL && info->si_code <= 0 &&
                          !(info->si_code == SI_TKILL && (int)info->si_pid == ccr_global.pid);
        entry->sender_pid = entry->received ? (int)info->si_pid : 0;
        atomic_store(&entry->ready, 1);
        break;
    }
    // Answers only when listed as staying (else it may be asked as blocking the signal, and its
    // stack scanned).
    stay_until_the_process_ends(staying != NULL ? ucontext : NULL);
    if (staying != NULL) atomic_store(staying, 0);
}

/// The signal of `tid`'s own crash, if it crashed while another thread's was recorded, else NULL.
/// Async-signal-safe.
static const ccr_crashed_too *crashed_too(int tid) {
    for (int i = 0; i < CCR_CRASHED_TOO_MAX; i++) {
        const ccr_crashed_too *entry = &ccr_threads.crashed_too[i];
        if (atomic_load(&entry->tid) == tid && atomic_load(&entry->ready)) return entry;
    }
    return NULL;
}

/// Unwinds the calling thread into the slot `c` armed for it, if any. Async-signal-safe.
static void answer(ccr_collection *c, void *ucontext) {
    int tid = ccr_gettid();
    ccr_thread_slot *slot = NULL;
    int asked = atomic_load(&c->asked);
    for (int i = 0; i < asked; i++) {
        if (c->slots[i].tid == tid && atomic_load(&c->slots[i].state) == CCR_SLOT_ASKED) {
            slot = &c->slots[i];
            break;
        }
    }
    if (slot != NULL && ccr_global.test_misbehaviour == 5) {   // test: no thread answers
        stay_until_the_process_ends(NULL);
        return;
    }
    int expected = CCR_SLOT_ASKED;
    if (slot == NULL || !atomic_compare_exchange_strong(&slot->state, &expected, CCR_SLOT_WRITING_FP)) return;
    // Between the look above and the claim, the slot may have been closed and armed again for
    // another thread (this one descheduled across captures): give it back.
    if (slot->tid != tid) {
        expected = CCR_SLOT_WRITING_FP;
        atomic_compare_exchange_strong(&slot->state, &expected, CCR_SLOT_ASKED);
        return;
    }
    // From here until the state leaves WRITING_*, only this thread changes the slot's state, and
    // no collection arms the slot again.
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
        // Wake the collecting thread at once rather than at its next look.
        atomic_fetch_add(&c->answers, 1);
        syscall(SYS_futex, &c->answers, (long)FUTEX_WAKE_PRIVATE, 1L, NULL, NULL, 0L);
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

/// Whether `text` (`used` bytes) holds a whole line that starts with `key`. Async-signal-safe.
static int has_line(const char *text, size_t used, const char *key) {
    for (size_t i = 0; i < used; i++) {
        if (i > 0 && text[i - 1] != '\n') continue;
        size_t k = 0;
        while (key[k] && i + k < used && text[i + k] == key[k]) k++;
        if (key[k] != '\0') continue;
        for (size_t j = i + k; j < used; j++) {
            if (text[j] == '\n') return 1;
        }
        return 0;
    }
    return 0;
}

/// Reads up to `capacity - 1` bytes of a small /proc file, NUL-terminated. Returns the length or -1.
/// With `until`, stops once a whole line starting with it was read: a /proc file's first read
/// usually gives all of it, and the read that would say so costs a system call per thread.
/// Async-signal-safe: open, read, close.
static int read_small_file(const char *path, char *buffer, size_t capacity, const char *until) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    size_t used = 0;
    while (used + 1 < capacity) {
        ssize_t n = read(fd, buffer + used, capacity - 1 - used);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        used += (size_t)n;
        if (until != NULL && has_line(buffer, used, until)) break;
    }
    close(fd);
    buffer[used] = '\0';
    return (int)used;
}

/// The value of the status line `key` ("\nState:"): past the key and its blanks, or NULL when the
/// `n` bytes of `text` have no such line. Async-signal-safe.
static const char *status_field(const char *text, int n, const char *key) {
    int length = 0;
    while (key[length]) length++;
    for (int i = 0; i + length <= n; i++) {
        int same = 1;
        for (int k = 0; same && k < length; k++) same = text[i + k] == key[k];
        if (!same) continue;
        const char *p = text + i + length;
        while (*p == ' ' || *p == '\t') p++;
        return p;
    }
    return NULL;
}

/// The thread's name and whether it blocks `signo` (0: not asked), from one read of its status
/// file (its comm is the "Name:" line, where the kernel writes a newline as "\n" and a backslash as
/// "\\"; undone here). Returns 1 when it blocks `signo` (SigBlk), 0 when not, -1 when the file
/// is unreadable (the thread is gone; `name` is then empty) or the thread is a zombie or dying,
/// 2 when it is stopped (SIGSTOP and the like: state T). Async-signal-safe.
static int read_status(ccr_collection *c, int tid, char name[17], int signo) {
    char path[64];
    task_path(path, tid, "status");
    char *status_text = c->status_text;
    memset(name, 0, 17);
    int n = read_small_file(path, status_text, sizeof c->status_text, signo > 0 ? "SigBlk:" : "Name:");
    if (n <= 0) return -1;
    static const char name_key[] = "Name:";
    int starts_with_name = n > (int)sizeof name_key - 1;
    for (int k = 0; starts_with_name && k < (int)sizeof name_key - 1; k++) starts_with_name = status_text[k] == name_key[k];
    if (starts_with_name) {   // the first line
        const char *p = status_text + sizeof name_key - 1;
        if (*p == '\t') p++;   // the kernel's one separator; a name may itself start with a space or a tab
        int length = 0;
        for (; *p && *p != '\n' && length < 15; p++) {
            char ch = *p;
            if (ch == '\\' && p[1] == 'n') { ch = '\n'; p++; }
            else if (ch == '\\' && p[1] == '\\') p++;
            name[length++] = ch;
        }
    }
    if (signo <= 0) return 0;
    // A zombie (a main thread that called pthread_exit) or a thread on its way out never runs a
    // handler, nor does a stopped one until it is continued: not asked (the crash would wait its
    // whole budget for them).
    const char *state = status_field(status_text, n, "\nState:");
    if (state != NULL && (*state == 'Z' || *state == 'X')) return -1;
    if (state != NULL && *state == 'T') return 2;   // not 't': a tracer's stop is brief (strace -f), and the ask waits for it
    const char *p = status_field(status_text, n, "\nSigBlk:");
    if (p != NULL) {
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
/// listed; `*total` gets how many other threads exist (the listing stops at the limit);
/// `*list_errno` why /proc/self/task could not be opened, else 0.
/// Async-signal-safe: open, getdents64, close.
static int list_threads(ccr_collection *c, int crashed_tid, int *total, int *list_errno) {
    char *dirents = c->dirents;
    *total = 0;
    *list_errno = 0;
    int count = 0;
    int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        *list_errno = errno;   // said in the record: not "one thread"
        return 0;
    }
    for (;;) {
        long n = syscall(SYS_getdents64, (long)fd, dirents, (long)sizeof c->dirents);
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
            if (count < ccr_threads.limit) c->listed[count++].tid = tid;
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
    case LISTED_STOPPED: return "stopped";
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
static int scan_blocked_thread(ccr_collection *c, int tid, int max) {
    uintptr_t *scan_frames = c->scan_frames, *scan_words = c->scan_words;
    char path[64], text[256];
    task_path(path, tid, "syscall");
    int n = read_small_file(path, text, sizeof text, "");   // one line: no second read to see the end
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
    // At most 32 KiB of stack in one system call, as eight 4 KiB pieces: the read stops short at
    // the end of the stack's mapping (process_vm_readv(2) promises a partial read at the
    // granularity of pieces at least), and each window of it is then checked with one read of the
    // code bytes before its candidates.
    enum { PIECES = 8 };
    _Static_assert(sizeof c->scan_words % PIECES == 0, "whole pieces");
    int pid = ccr_getpid();
    uintptr_t at = sp & ~(uintptr_t)(sizeof(uintptr_t) - 1);
    struct iovec local = {.iov_base = scan_words, .iov_len = sizeof c->scan_words};
    struct iovec remote[PIECES];
    for (int i = 0; i < PIECES; i++) {
        remote[i] = (struct iovec){.iov_base = (void *)(at + (uintptr_t)i * (sizeof c->scan_words / PIECES)),
                                   .iov_len = sizeof c->scan_words / PIECES};
    }
    long got = ccr_read_own_memory(pid, &local, 1L, remote, (long)PIECES);
    int words = got > 0 ? (int)(got / (long)sizeof(uintptr_t)) : 0;
    for (int window = 0; window < words && kept < max; window += CCR_SCAN_BATCH) {
        int length = words - window < CCR_SCAN_BATCH ? words - window : CCR_SCAN_BATCH;
        int found = ccr_keep_return_addresses(scan_words + window, length, &c->scan_scratch, pid);
        for (int i = 0; i < found && kept < max; i++) scan_frames[kept++] = scan_words[window + i];
    }
    return kept;
}

/// Writes one thread section; returns 1 when the thread answered with a complete walk.
/// Async-signal-safe.
static int write_thread(ccr_collection *c, ccr_writer *w, const ccr_listed_thread *t) {
    int slot_state = CCR_SLOT_FREE;
    ccr_thread_slot *slot = t->slot >= 0 ? &c->slots[t->slot] : NULL;
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
    const ccr_crashed_too *too = crashed_too(t->tid);
    if (too != NULL) {   // it crashed too, while this crash was being recorded
        ccr_writer_text(w, ",\"crashed_too\":{\"signo\":");
        ccr_writer_int(w, too->signo);
        ccr_writer_key(w, "code", 0);
        ccr_writer_int(w, too->code);
        if (too->code > 0) {
            ccr_writer_key(w, "fault_address", 0);
            ccr_writer_hex(w, too->fault_address);
        } else if (too->received) {   // sent, not raised by the thread itself (a supervisor's kill)
            ccr_writer_key(w, "sender_pid", 0);
            ccr_writer_int(w, too->sender_pid);
        }
        ccr_writer_text(w, "}");
    }
    ccr_writer_text(w, "}\n");
    // Not asked, or asked and silent (it never ran its handler in time): its stack scanned, if it
    // waits in a system call.
    int silent = t->state == LISTED_ASKED && (slot_state == CCR_SLOT_CLOSED || slot_state == CCR_SLOT_ASKED);
    if (t->state == LISTED_BLOCKED || t->state == LISTED_NOT_ASKED || t->state == LISTED_STOPPED || silent) {
        int scanned = scan_blocked_thread(c, t->tid, ccr_threads.frames);
        if (scanned > 0) {
            ccr_record_write_frames(w, c->scan_frames, scanned);
            ccr_record_write_stack(w, "stack-scan", scanned, scanned, 1, 0, 0, 0, 0, 0, 0);
        }
        return 0;
    }
    if (slot == NULL) return 0;
    if (slot_state == CCR_SLOT_LU_DONE) {
        ccr_record_write_frames(w, slot->lu_frames, slot->lu_count);
        ccr_record_write_stack(w, "libunwind", slot->lu_count, slot->lu_depth, slot->lu_lower_bound, 0, 0, 0, 0, 0, 0);
    } else if (slot_state == CCR_SLOT_FP_DONE || slot_state == CCR_SLOT_WRITING_LU || slot_state == CCR_SLOT_LU_FAILED) {
        ccr_record_write_frames(w, slot->fp_frames, slot->fp_count);
        ccr_record_write_stack(w, "frame-pointer", slot->fp_count, slot->fp_depth, 0, 0, 0, 0, 0, 0, 0);
    } else {
        return 0;
    }
    return 1;
}

/// A slot whose thread may still store a walk. Async-signal-safe.
/// One of this library's own threads (marked by ccr_threads_mark_reporter): idle or sending,
/// never what a crash is about, so not worth a round trip. Async-signal-safe.
/// Its name, as it set it when marked, or NULL when `tid` is not one of them. Async-signal-safe.
static const char *reporter_thread_name(int tid) {
    if (tid == __atomic_load_n(&ccr_global.watchdog_tid, __ATOMIC_ACQUIRE)) return CCR_WATCHDOG_THREAD_NAME;
    for (int i = 0; i < CCR_REPORTER_THREADS; i++) {
        if (atomic_load_explicit(&ccr_threads.reporter_tids[i], memory_order_acquire) == tid) return ccr_threads.reporter_names[i];
    }
    return NULL;
}

static int still_pending(int state) {
    return state == CCR_SLOT_ASKED || state == CCR_SLOT_WRITING_FP || state == CCR_SLOT_FP_DONE || state == CCR_SLOT_WRITING_LU;
}

/// A slot whose thread is inside its answer and may still store into it: not armed again.
static int being_written(int state) {
    return state == CCR_SLOT_WRITING_FP || state == CCR_SLOT_WRITING_LU;
}

static void collect_and_write(ccr_collection *c, ccr_writer *w, int crashed_tid, uint64_t started_ns, int first_tid);

/// Closes the descriptor held since install, if it is still ours (the app may have closed it and
/// reused the number: then it is left alone), so the listing's opens have a free number even in
/// a process that ran out of them. Once. Async-signal-safe: fstat, close.
static void release_spare_descriptor(void) {
    int held = 1;
    if (ccr_global.test_misbehaviour == 20) return;   // test: as if no descriptor were held
    if (!atomic_compare_exchange_strong(&ccr_threads.spare_held, &held, 0)) return;
    struct stat now;
    if (fstat(ccr_threads.spare_fd, &now) == 0 && (uint64_t)now.st_dev == ccr_threads.spare_dev &&
        (uint64_t)now.st_ino == ccr_threads.spare_ino) {
        close(ccr_threads.spare_fd);
    }
}

void ccr_threads_write(ccr_writer *w, int crashed_tid, uint64_t started_ns) {
    if (!ccr_threads.enabled) return;
    // test: another thread crashes at the same moment; the collection waits (at most 5 s) until
    // that crash is noted, so the record is made with it, whatever the scheduler does
    for (int i = 0; ccr_global.test_misbehaviour == 19 && i < 5000; i++) {
        int noted = 0;
        for (int k = 0; k < CCR_CRASHED_TOO_MAX; k++) noted |= atomic_load(&ccr_threads.crashed_too[k].ready);
        if (noted) break;
        poll(NULL, 0, 1);
    }
    // The crash's own collection: a hang capture under way keeps its own and is not waited for.
    collect_and_write(&ccr_threads.crash, w, crashed_tid, started_ns, 0);
}

void ccr_threads_prefault(void) {
    // Written by the collecting thread at every crash (and only then): ~70 KiB of .bss. The
    // slots are not touched: each asked thread writes its own, in parallel with the others.
    ccr_collection *c = &ccr_threads.crash;
    ccr_touch_pages(ccr_threads.crashed_too, sizeof ccr_threads.crashed_too);   // read for every thread written
    ccr_touch_pages(c->listed, sizeof c->listed);
    ccr_touch_pages(c->dirents, sizeof c->dirents);
    ccr_touch_pages(c->status_text, sizeof c->status_text);
    ccr_touch_pages(c->scan_frames, sizeof c->scan_frames);
    ccr_touch_pages(c->scan_words, sizeof c->scan_words);
    ccr_touch_pages(&c->scan_scratch, sizeof c->scan_scratch);
}

static void reset_collection(ccr_collection *c) {
    atomic_store(&c->active, 0);
    atomic_store(&c->asked, 0);
    for (int i = 0; i < CCR_THREADS_MAX; i++) atomic_store(&c->slots[i].state, CCR_SLOT_FREE);
}

void ccr_threads_reset_after_fork(void) {
    reset_collection(&ccr_threads.crash);
    reset_collection(&ccr_threads.hang);
    atomic_store(&ccr_threads.hang_capturing, 0);
    for (int i = 0; i < CCR_THREADS_MAX; i++) atomic_store(&ccr_threads.staying[i], 0);
    for (int i = 0; i < CCR_CRASHED_TOO_MAX; i++) {   // the parent's, not this child's
        atomic_store(&ccr_threads.crashed_too[i].ready, 0);
        atomic_store(&ccr_threads.crashed_too[i].tid, 0);
    }
}

int ccr_threads_begin_hang_capture(void) {
    if (!ccr_threads.enabled || atomic_load(&ccr_global.crashing_tid) != 0) return -1;
    int expected = 0;
    return atomic_compare_exchange_strong(&ccr_threads.hang_capturing, &expected, 1) ? 0 : -1;
}

int ccr_threads_write_for_hang(ccr_writer *w, int hung_tid) {
    collect_and_write(&ccr_threads.hang, w, ccr_gettid(), ccr_now_ns(CLOCK_MONOTONIC), hung_tid);
    atomic_store(&ccr_threads.hang_capturing, 0);
    // A crash began meanwhile: the process is ending, and the crash record is what matters.
    return atomic_load(&ccr_global.crashing_tid) != 0 ? -1 : 0;
}

static void collect_and_write(ccr_collection *c, ccr_writer *w, int crashed_tid, uint64_t started_ns, int first_tid) {
    uint64_t began = ccr_now_ns(CLOCK_MONOTONIC);
    if (c == &ccr_threads.crash) release_spare_descriptor();
    int total = 0, list_errno = 0;
    int count = list_threads(c, crashed_tid, &total, &list_errno);
    // Someone may have taken the signal since start (a handler installed later replaces ours):
    // then sending it would run their handler in every thread. List the threads, ask none.
    struct sigaction current;
    int signal_ours = sigaction(ccr_threads.signo, NULL, &current) == 0 && (current.sa_flags & SA_SIGINFO) &&
                      current.sa_sigaction == ccr_threads_answer;

    // Arm every slot before the first signal: an answer may arrive while later ones are armed.
    // A slot an earlier capture's late answer is still writing into is passed over; with none
    // left, the thread is listed without being asked.
    int asked = 0, next_slot = 0;
    for (int i = 0; i < count; i++) {
        ccr_listed_thread *t = &c->listed[i];
        t->slot = -1;
        const char *reporter = reporter_thread_name(t->tid);
        int blocked = 0;
        if (reporter == NULL) {
            blocked = read_status(c, t->tid, t->name, signal_ours ? ccr_threads.signo : 0);
            // Looked up again after the name: a thread of ours publishes itself before it renames
            // itself (ccr_threads_mark_reporter), so a "crash-" name read here is found now.
            reporter = reporter_thread_name(t->tid);
        }
        if (reporter != NULL) {   // named by this library: never asked
            int b = 0;
            for (; b < 15 && reporter[b]; b++) t->name[b] = reporter[b];
            for (; b < 17; b++) t->name[b] = '\0';
            t->state = LISTED_REPORTER;
            continue;
        }
        if (blocked == 1 && is_staying(t->tid)) blocked = 0;   // in our handler: it looks for its slot
        if (blocked == 2) {   // stopped: it cannot answer until continued
            t->state = LISTED_STOPPED;
            continue;
        }
        // Take a slot no late answer is writing into: a compare-and-swap from the state seen, so
        // that a thread of an earlier capture cannot move it to WRITING_LU in between.
        int taken = -1;
        while (signal_ours && blocked == 0 && taken < 0 && next_slot < CCR_THREADS_MAX) {
            int seen = atomic_load(&c->slots[next_slot].state);
            if (!being_written(seen) && seen != CCR_SLOT_ARMING &&
                atomic_compare_exchange_strong(&c->slots[next_slot].state, &seen, CCR_SLOT_ARMING)) {
                taken = next_slot;
            }
            next_slot++;
        }
        if (!signal_ours || (blocked == 0 && taken < 0)) {
            t->state = LISTED_NOT_ASKED;
        } else if (blocked < 0) {
            t->state = LISTED_EXITED;
        } else if (blocked) {
            t->state = LISTED_BLOCKED;
        } else {
            t->state = LISTED_ASKED;
            t->slot = taken;
            ccr_thread_slot *slot = &c->slots[taken];
            slot->tid = t->tid;
            slot->fp_count = slot->lu_count = 0;
            atomic_store(&slot->state, CCR_SLOT_ASKED);   // release: tid and counts before the state
            asked++;
        }
    }
    atomic_store(&c->asked, next_slot);
    atomic_store(&c->active, 1);
    for (int i = 0; i < count; i++) {
        ccr_listed_thread *t = &c->listed[i];
        if (t->state != LISTED_ASKED) continue;
        if (syscall(SYS_tgkill, (long)ccr_global.pid, (long)t->tid, (long)ccr_threads.signo) != 0) {
            // EAGAIN: the real-time signal queue is full, the thread is alive: scan its stack.
            int gone = errno != EAGAIN, armed = CCR_SLOT_ASKED;
            atomic_compare_exchange_strong(&c->slots[t->slot].state, &armed, CCR_SLOT_CLOSED);
            t->state = gone ? LISTED_EXITED : LISTED_NOT_ASKED;
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
        int seen = atomic_load(&c->answers);
        int pending = 0;
        for (int i = 0; i < count; i++) {
            if (c->listed[i].slot >= 0) pending += still_pending(atomic_load(&c->slots[c->listed[i].slot].state));
        }
        uint64_t at = ccr_now_ns(CLOCK_MONOTONIC);
        if (pending == 0 || at >= deadline) break;
        // Sleep until an answer bumps the counter (a wake, or EAGAIN if one came since `seen`),
        // at most 1 ms: a thread that answered only with frame pointers (libunwind stalled)
        // bumps nothing, and its state is seen at the next look.
        uint64_t nap = deadline - at < 1000000ull ? deadline - at : 1000000ull;
        struct timespec timeout = {.tv_sec = 0, .tv_nsec = (long)nap};
        syscall(SYS_futex, &c->answers, (long)FUTEX_WAIT_PRIVATE, (long)seen, &timeout, NULL, 0L);
    }
    uint64_t waited = ccr_now_ns(CLOCK_MONOTONIC) - now;   // from the last signal sent

    int answered = 0;
    // A hang record's first thread is the one that stopped beating: the record's main thread.
    for (int i = 0; i < count; i++) if (first_tid && c->listed[i].tid == first_tid) answered += write_thread(c, w, &c->listed[i]);
    for (int i = 0; i < count; i++) if (!first_tid || c->listed[i].tid != first_tid) answered += write_thread(c, w, &c->listed[i]);
    atomic_store(&c->active, 0);

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
    if (list_errno != 0) {   // /proc/self/task could not be opened: the other threads are unknown
        ccr_writer_key(w, "list_errno", 0);
        ccr_writer_int(w, list_errno);
    }
    ccr_writer_key(w, "wait_ns", 0);
    ccr_writer_uint(w, waited);
    ccr_writer_key(w, "elapsed_ns", 0);
    ccr_writer_uint(w, ccr_now_ns(CLOCK_MONOTONIC) - began);
    ccr_writer_text(w, "}\n");
    ccr_writer_flush(w);
}
