// Delivery at crash time (opt-in, Docs/Decisions/0028): once the record is durable, the handler
// starts the crash-sender program (which symbolicates, redacts and uploads the record as the next
// launch would) and waits for it, bounded, before the process ends by its signal. If the sender
// fails or the wait runs out, the record stays in pending/ for the next launch, which sends it
// under the same idempotency key.
//
// The child is made with clone(CLONE_VM | CLONE_VFORK) on a small static stack, as posix_spawn
// does: no atfork handlers (which may take locks), no copy of the page tables (a fork-style copy of
// a large process can fail with ENOMEM near a memory limit, and takes time proportional to its
// mappings), and this thread waits until the child has called execve. That wait is outside the
// `wait` bound (and the watchdog's, which the handler has already stood down): a filesystem that hangs on the
// sender's binary holds the dying process; its record is durable by then. The child runs nothing but
// system calls before execve, and its descriptor table is its own (no CLONE_FILES). It closes every descriptor above 2, so that no
// listening socket or lock of the app outlives it in the sender, and keeps the handler's signal
// mask through execve (crash-sender unblocks its signals itself). Threads held in their handlers
// stay held for the sender's wait too (ccr_threads.c).
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   // clone(2)
#endif
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ccr_crashtime.h"
#include "ccr_sender.h"

static char argument_flag_config[] = "--config";
static char argument_flag_record[] = "--record";

static void close_descriptors_above_stderr(void) {
#ifdef SYS_close_range
    if (syscall(SYS_close_range, 3L, (long)~0U, 0L) == 0) return;
#endif
    // The raw call: the child runs on the parent's thread-local storage (no CLONE_SETTLS), and
    // close() is a cancellation point that reads it.
    for (int fd = 3; fd < 65536; fd++) syscall(SYS_close, (long)fd);
}

/// The child's stack: it shares this process's memory, so it needs its own while this thread is
/// suspended in clone (CLONE_VFORK). 64 KiB: close_range, execve and their wrappers need far less.
static _Alignas(16) char child_stack[65536];
static char *child_argv[6];

/// The child: system calls only. The mask stays as the handler has it (almost everything blocked)
/// through execve, which resets the app's handlers: a SIGTERM to the group now cannot run an app
/// handler in this copy of the crashed process. crash-sender unblocks its signals first thing.
static int sender_child(void *unused) {
    (void)unused;
    // First, the crash signals back to their default action (the child's table of actions is its
    // own copy): a fault here must not run the crash handler, which would take the child for a
    // forked process and rewrite the crashed process's state, shared with this child's memory.
    struct sigaction default_action;
    memset(&default_action, 0, sizeof default_action);
    default_action.sa_handler = SIG_DFL;
    for (int i = 0; i < CCR_SIGNAL_COUNT; i++) sigaction(ccr_global.signals[i], &default_action, NULL);
    close_descriptors_above_stderr();
    execve(ccr_sender.path, child_argv, ccr_sender.envp);
    syscall(SYS_exit_group, 127L);
    return 127;
}

void ccr_sender_run(int *exit_status, uint64_t *waited_ns) {
    *exit_status = -1;
    *waited_ns = 0;
    if (!ccr_sender.enabled) return;
    child_argv[0] = ccr_sender.path;
    child_argv[1] = argument_flag_config;
    child_argv[2] = ccr_sender.config;
    child_argv[3] = argument_flag_record;
    child_argv[4] = ccr_global.pending_path;
    child_argv[5] = NULL;
    uint64_t started = ccr_now_ns(CLOCK_MONOTONIC);
    // The record is durable and in pending/: let go of its lock (taken at install so that no
    // other process's start moves the file while it is written), or the sender could not take it.
    syscall(SYS_flock, (long)ccr_global.record_fd, (long)LOCK_UN);
    // The stack grows down on the architectures this builds for: pass its top.
    int child = clone(sender_child, child_stack + sizeof child_stack, CLONE_VM | CLONE_VFORK | SIGCHLD, NULL);
    if (child < 0) return;
    uint64_t deadline = started + (uint64_t)ccr_sender.wait_ms * 1000000ull;
    for (;;) {
        int status = 0;
        long reaped = syscall(SYS_wait4, child, &status, (long)WNOHANG, 0L);
        if (reaped == child) {
            *exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            break;
        }
        // SIGCHLD ignored by the app: children are reaped by the kernel, and wait4 says ECHILD once it is gone.
        if (reaped < 0 && errno != EINTR) break;
        if (ccr_now_ns(CLOCK_MONOTONIC) >= deadline) break;   // the sender goes on alone; the record stays if it fails
        struct timespec pause = {.tv_sec = 0, .tv_nsec = 1000000};
        nanosleep(&pause, NULL);
    }
    *waited_ns = ccr_now_ns(CLOCK_MONOTONIC) - started;
}
