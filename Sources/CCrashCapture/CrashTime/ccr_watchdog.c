// The watchdog thread: created at install, asleep in read(2) until a crash starts. It bounds the
// handler's time (libunwind can block on the loader lock held by another thread): if the handler
// has not finished within the timeout, the watchdog writes the frame-pointer walk from the saved
// context (the handler wrote the fixed facts and modules before unwinding) and the end line,
// makes the record durable and ends the process by the crash signal. Runs during a crash, so it is held to the same async-signal-safe rules.
#include <errno.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ccr_crashtime.h"

static char watchdog_buffer[8192];

/// Waits up to `timeout_ms` for a byte on the watchdog pipe. Returns the byte, or 0 on timeout.
static char wait_for_byte(int fd, int timeout_ms) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    uint64_t deadline = ccr_now_ns(CLOCK_MONOTONIC) + (uint64_t)timeout_ms * 1000000ull;
    for (;;) {
        uint64_t now = ccr_now_ns(CLOCK_MONOTONIC);
        if (timeout_ms >= 0 && now >= deadline) return 0;
        int wait_ms = timeout_ms < 0 ? -1 : (int)((deadline - now) / 1000000ull) + 1;
        int ready = poll(&p, 1, wait_ms);
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) return ready == 0 ? 0 : 'E';
        char byte = 0;
        ssize_t n = read(fd, &byte, 1);
        if (n == 1) return byte;
        if (n == 0) return 'E';   // pipe closed
    }
}

void ccr_watchdog_finish_record(void) {
    const ccr_crash_context *c = &ccr_global.context;
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
    ccr_record_write_stack(&w, "frame-pointer", kept, depth, 0, 0, 0, 0);
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
    for (;;) {
        char byte = wait_for_byte(fd, -1);
        if (byte == 'E') return NULL;
        if (byte != 'S') continue;
        byte = wait_for_byte(fd, ccr_global.watchdog_timeout_ms);
        if (byte == 'D') continue;   // the handler finished; the process ends on its own
        int claim = CCR_FINISHER_NONE;
        if (atomic_compare_exchange_strong(&ccr_global.finisher, &claim, CCR_FINISHER_WATCHDOG)) {
            ccr_watchdog_finish_record();
        } else if (wait_for_byte(fd, ccr_global.watchdog_timeout_ms) == 'D') {
            continue;   // the handler was finishing and made it
        }
        ccr_die(ccr_global.context.signo);
        return NULL;
    }
}
