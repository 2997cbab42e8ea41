// The watchdog thread: created at install, asleep in poll(2) on its pipe, looking every timeout
// (2 s by default) at whether a crash is under way. The crash handler does not wake it: a wake-up
// cost the handler ~17 us of its work before the sync (Decision 0057). It bounds the handler's time
// (libunwind can block on the loader lock held by another thread): if the handler has not made
// its record durable within the timeout from the crash's start, the watchdog writes the
// frame-pointer walk from the saved context (after the fixed facts and modules the handler had
// in its buffer before unwinding) and the end line, makes the record durable and ends the process by the crash
// signal. Runs during a crash, so it is held to the same async-signal-safe rules.
#include <errno.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ccr_crashtime.h"

static char watchdog_buffer[8192];

/// Set by the crash handler once its record is durable: the watchdog then leaves the crash alone
/// (the handler goes on to the crash line, the sender and the previous handler, which may take
/// longer than the timeout).
static atomic_int stood_down;
/// The watchdog gave its read end up (closed by the app, or another file under its number).
static atomic_int gave_up_pipe;

void ccr_watchdog_stand_down(void) {
    atomic_store(&stood_down, 1);
}

/// Whether `fd` is still the pipe made at install (the app may have closed it, and its number may
/// now be a file of the app's, whose bytes are not ours to read).
static int pipe_is_ours(int fd) {
    struct stat now;
    return fstat(fd, &now) == 0 && S_ISFIFO(now.st_mode) && (unsigned long long)now.st_dev == ccr_global.watchdog_dev &&
           (unsigned long long)now.st_ino == ccr_global.watchdog_ino;
}

/// Sleeps `timeout_ms` in poll on the pipe's read end `*fd`. Returns 'E' when the pipe's write end
/// was closed (stop_watchdog at uninstall), else 0 once the time is up. Nothing else is written
/// into the pipe. A read end that is closed (POLLNVAL) or no longer the pipe is given up (`*fd`
/// set to -1): the watchdog then keeps time with poll alone, and never reads from that number.
static char wait_on_pipe(int *fd, int timeout_ms) {
    uint64_t deadline = ccr_now_ns(CLOCK_MONOTONIC) + (uint64_t)timeout_ms * 1000000ull;
    for (;;) {
        uint64_t now = ccr_now_ns(CLOCK_MONOTONIC);
        if (now >= deadline) return 0;
        uint64_t left_ms = (deadline - now) / 1000000ull + 1;
        int wait_ms = left_ms > 60000 ? 60000 : (int)left_ms;   // the deadline is checked again after each
        if (*fd < 0) {
            poll(NULL, 0, wait_ms);
            continue;
        }
        struct pollfd p = {.fd = *fd, .events = POLLIN};
        int ready = poll(&p, 1, wait_ms);
        if (ready < 0 && errno == EINTR) continue;
        if (ready == 0) continue;
        if (ready < 0 || (p.revents & POLLNVAL) || !pipe_is_ours(*fd)) {
            *fd = -1;
            atomic_store(&gave_up_pipe, 1);
            continue;
        }
        char byte = 0;
        ssize_t n = read(*fd, &byte, 1);
        if (n == 0) return 'E';   // write end closed
        if (n < 0 && errno != EINTR && errno != EAGAIN) {
            *fd = -1;
            atomic_store(&gave_up_pipe, 1);
        }
    }
}

void ccr_watchdog_finish_record(int facts_wait_ms) {
    const ccr_crash_context *c = &ccr_global.context;
    // The handler keeps its record in memory until it is whole (Decision 0064): its fixed facts
    // and modules first.
    (void)ccr_handler_flush_facts_for_watchdog(facts_wait_ms);
    ccr_writer w;
    ccr_writer_init(&w, ccr_global.record_fd, watchdog_buffer, sizeof watchdog_buffer);
    uint64_t waited_ms = (ccr_now_ns(CLOCK_MONOTONIC) - c->started_ns) / 1000000ull;
    // The handler's last line may be cut short: start on a fresh line.
    ccr_writer_text(&w, "\n{\"type\":\"watchdog\"");
    ccr_writer_key(&w, "stage", 0);
    ccr_writer_int(&w, atomic_load(&ccr_global.stage));
    ccr_writer_key(&w, "waited_ms", 0);
    ccr_writer_uint(&w, waited_ms);
    ccr_writer_text(&w, "}\n");
    uintptr_t frames[CCR_MAX_FRAMES];
    int depth = 0;
    int kept = ccr_unwind_frame_pointers_from(c->pc, c->sp, c->fp, frames, CCR_MAX_FRAMES, &depth);
    ccr_record_write_frames(&w, frames, kept);
    ccr_record_write_stack(&w, "frame-pointer", kept, depth, 0, 0, 0, 0, 0, 0, 0);
    ccr_record_finish(&w, c->started_ns);
}

void *ccr_watchdog_main(void *unused) {
    (void)unused;
    // Named so that gdb, top -H and the record say whose it is; a crash writes this name for it.
    syscall(SYS_prctl, (long)PR_SET_NAME, (long)CCR_WATCHDOG_THREAD_NAME, 0L, 0L, 0L);
    __atomic_store_n(&ccr_global.watchdog_tid, ccr_gettid(), __ATOMIC_RELEASE);
    // Off the caller's thread: get the prefilled record file's blocks onto the disk now, so a
    // crash later pays for a data-only flush. Harmless if a crash is already writing.
    fdatasync(ccr_global.record_fd);
    int fd = ccr_global.watchdog_fd[0];
    int timeout_ms = ccr_global.watchdog_timeout_ms > 0 ? ccr_global.watchdog_timeout_ms : 2000;
    for (;;) {
        // A look at most `timeout` after the last: a crash under way is seen by then, and its
        // deadline counts from its start (the handler stores the stage after the start time), so
        // a stalled handler is finished `timeout` after its crash began, as when it woke us. A
        // crash that came before this thread existed (a deferred start) is seen at once.
        if (atomic_load(&ccr_global.stage) > 0 && !atomic_load(&stood_down)) {
            uint64_t due = ccr_global.context.started_ns + (uint64_t)timeout_ms * 1000000ull;
            uint64_t now = ccr_now_ns(CLOCK_MONOTONIC);
            uint64_t left_ms = now < due ? (due - now) / 1000000ull + 1 : 0;
            if (left_ms > 0 && wait_on_pipe(&fd, left_ms > 0x7fffffff ? 0x7fffffff : (int)left_ms) == 'E') return NULL;
            if (atomic_load(&stood_down)) continue;   // the handler made it; the process ends on its own
            int claim = CCR_FINISHER_NONE;
            if (atomic_compare_exchange_strong(&ccr_global.finisher, &claim, CCR_FINISHER_WATCHDOG)) {
                // A handler still putting its facts in (a starved thread) gets another timeout.
                ccr_watchdog_finish_record(timeout_ms);
            } else {
                // The handler was finishing: another timeout for it to make the record durable.
                if (wait_on_pipe(&fd, timeout_ms) == 'E') return NULL;
                if (atomic_load(&stood_down)) continue;
            }
            ccr_die(ccr_global.context.signo);
            return NULL;
        }
        if (wait_on_pipe(&fd, timeout_ms) == 'E') return NULL;
    }
}

int ccr_test_watchdog_read_fd(void) {
    return ccr_global.watchdog_fd[0];
}

int ccr_test_watchdog_tid(void) {
    return __atomic_load_n(&ccr_global.watchdog_tid, __ATOMIC_ACQUIRE);
}

int ccr_test_watchdog_gave_up_pipe(void) {
    return atomic_load(&gave_up_pipe);
}
