// Install and roll back. Everything the handler will need is prepared here, on the caller's
// thread: the record file (opened in new/ in advance), libunwind (loaded and prewarmed), the
// module table, the watchdog thread, alternate signal stacks, and finally the signal actions,
// with the previous ones saved for chaining. A failure at any step undoes the earlier ones.
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "CCrashCapture.h"
#include "../CrashTime/ccr_crashtime.h"
#include "ccr_setup.h"

/// libswiftCore's "Fatal error: …" buffer. Weak so that programs without it (or with a static
/// stdlib that lacks it) still link; resolved once here, only loaded at crash time.
extern _Atomic(const char *) *swift_getFatalErrorMessageBuffer(void) __attribute__((weak));

static const int crash_signals[CCR_SIGNAL_COUNT] = {SIGSEGV, SIGABRT, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS};
static uint64_t last_install_ns;
static pthread_t watchdog_thread;
/// 1 from an install with `defer_libunwind` until ccr_watchdog_start_deferred makes the thread.
static _Atomic int watchdog_deferred;
static int create_watchdog_thread(char *error, size_t capacity);

static int copy_text(char *destination, size_t capacity, const char *source, const char *what, char *error, size_t error_capacity) {
    size_t length = strlen(source);
    if (length >= capacity) {
        snprintf(error, error_capacity, "%s is too long (%zu bytes, at most %zu)", what, length, capacity - 1);
        return -1;
    }
    memcpy(destination, source, length + 1);
    return 0;
}

static void close_fd(int *fd) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
}

static int open_record_file(const ccr_install_options *o, char *error, size_t capacity) {
    int n1 = snprintf(ccr_global.new_path, sizeof ccr_global.new_path, "%s/new/%s.crash", o->reports_directory, o->record_id);
    int n2 = snprintf(ccr_global.pending_path, sizeof ccr_global.pending_path, "%s/pending/%s.crash", o->reports_directory, o->record_id);
    if (n1 < 0 || n2 < 0 || (size_t)n1 >= sizeof ccr_global.new_path || (size_t)n2 >= sizeof ccr_global.pending_path) {
        snprintf(error, capacity, "reports directory path is too long: %s", o->reports_directory);
        return -1;
    }
    ccr_global.record_fd = open(ccr_global.new_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (ccr_global.record_fd < 0) {
        snprintf(error, capacity, "cannot create the crash record file %s: %s", ccr_global.new_path, strerror(errno));
        return -1;
    }
    // Held until the process ends: tells a later launch that this file's writer is still alive.
    flock(ccr_global.record_fd, LOCK_EX | LOCK_NB);
    // Prefill with newlines (blank lines to a reader) so the blocks exist before any crash; the
    // watchdog thread syncs them in the background. The handler writes from offset 0 over them.
    // One pwritev of one page of newlines repeated: a write per page cost start() ~45 us more.
    static const char newlines[4096] = {[0 ... 4095] = '\n'};
    enum { pages = CCR_RECORD_PREFILL / sizeof newlines };
    _Static_assert(CCR_RECORD_PREFILL % 4096 == 0 && CCR_RECORD_PREFILL / 4096 <= 1024, "whole pages, at most IOV_MAX");
    struct iovec pieces[pages];
    for (int i = 0; i < pages; i++) pieces[i] = (struct iovec){.iov_base = (void *)newlines, .iov_len = sizeof newlines};
    size_t done = 0;
    while (done < CCR_RECORD_PREFILL) {   // a short write (a signal, a full disk) goes on or fails
        int first = (int)(done / sizeof newlines);
        size_t into = done % sizeof newlines;
        pieces[first].iov_base = (void *)(newlines + into);
        pieces[first].iov_len = sizeof newlines - into;
        ssize_t n = pwritev(ccr_global.record_fd, &pieces[first], pages - first, (off_t)done);
        if (n > 0) {
            done += (size_t)n;
        } else if (!(n < 0 && errno == EINTR)) {
            if (n == 0) errno = ENOSPC;
            snprintf(error, capacity, "cannot write the crash record file %s: %s", ccr_global.new_path, strerror(errno));
            close_fd(&ccr_global.record_fd);
            unlink(ccr_global.new_path);
            return -1;
        }
    }
    struct stat identity;
    if (fstat(ccr_global.record_fd, &identity) == 0) {
        ccr_global.record_dev = identity.st_dev;
        ccr_global.record_ino = identity.st_ino;
    }
    return 0;
}

static void close_record_file(void) {
    close_fd(&ccr_global.record_fd);
    unlink(ccr_global.new_path);
}

/// pthread_atfork's prepare handler: lets a pending deferred libunwind load finish, so that a
/// child does not inherit a load no thread of its own will finish.
static void wait_for_deferred_libunwind(void) {
    ccr_libunwind_wait_deferred(100);
}

int ccr_wait_for_deferred_setup(int max_ms) {
    return ccr_libunwind_wait_deferred(max_ms);
}

/// The watchdog's pipe. Its thread is made here or, for an install with `defer_libunwind`, by
/// ccr_watchdog_start_deferred on the caller's background thread: a thread costs start() ~100 us.
/// A crash before it runs is seen by its first look, and timed from the crash's start.
static int start_watchdog(int deferred, char *error, size_t capacity) {
    if (pipe2(ccr_global.watchdog_fd, O_CLOEXEC) != 0) {
        snprintf(error, capacity, "cannot create the watchdog pipe: %s", strerror(errno));
        return -1;
    }
    struct stat identity;
    if (fstat(ccr_global.watchdog_fd[1], &identity) == 0) {
        ccr_global.watchdog_dev = identity.st_dev;
        ccr_global.watchdog_ino = identity.st_ino;
    }
    if (deferred) {
        atomic_store(&watchdog_deferred, 1);
        return 0;
    }
    if (create_watchdog_thread(error, capacity) != 0) {
        close_fd(&ccr_global.watchdog_fd[0]);
        close_fd(&ccr_global.watchdog_fd[1]);
        return -1;
    }
    return 0;
}

int ccr_watchdog_start_deferred(char *error, size_t capacity) {
    if (capacity > 0) error[0] = '\0';
    int expected = 1;
    if (!atomic_compare_exchange_strong(&watchdog_deferred, &expected, 0)) {
        snprintf(error, capacity, "watchdog: no deferred start is pending");
        return -1;
    }
    // Installed in another process (the child of a fork before this ran): its crashes have
    // their own watchdog (ccr_fork.c); the parent's pipe is not its to read.
    if (getpid() != ccr_global.pid) return 0;
    return create_watchdog_thread(error, capacity);
}

void ccr_watchdog_wait_started(int max_ms) {
    if (ccr_global.watchdog_fd[1] < 0 || getpid() != ccr_global.pid) return;
    for (int i = 0; i < max_ms * 20 && __atomic_load_n(&ccr_global.watchdog_tid, __ATOMIC_ACQUIRE) == 0; i++) {
        struct timespec pause = {.tv_sec = 0, .tv_nsec = 50000};
        nanosleep(&pause, NULL);
    }
}

static int create_watchdog_thread(char *error, size_t capacity) {
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setstacksize(&attributes, 64 * 1024);
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    // The watchdog inherits a mask of every signal but SIGPROF, so process-directed signals
    // (SIGTERM, SIGINT, an app's SIGUSR1…) land on the app's threads, never on it. SIGPROF stays
    // open because Swift's backtracer, chained after our record, suspends every other thread
    // with SIGUSR1, SIGUSR2 or SIGPROF (the first one the thread leaves unblocked) and prints
    // "failed to suspend thread" for a thread that blocks all three.
    sigset_t mask, previous;
    sigfillset(&mask);
    sigdelset(&mask, SIGPROF);
    pthread_sigmask(SIG_SETMASK, &mask, &previous);
    // Past the wrapper that gives new threads an alternate stack and opens the asking signal
    // (ccr_altstack.c): made after install (deferred), it would otherwise leave that signal open,
    // and a crash before the thread publishes its tid would ask it to unwind.
    int result = ccr_pthread_create_unwrapped(&watchdog_thread, &attributes, ccr_watchdog_main, NULL);
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    pthread_attr_destroy(&attributes);
    if (result != 0) {
        snprintf(error, capacity, "cannot start the watchdog thread: %s", strerror(result));
        return -1;
    }
    return 0;
}

static void stop_watchdog(void) {
    // Closing the write end makes the watchdog's read return 0, and the thread ends.
    atomic_store(&watchdog_deferred, 0);
    close_fd(&ccr_global.watchdog_fd[1]);
}

static void restore_signal_actions(int count) {
    for (int i = 0; i < count; i++) sigaction(ccr_global.signals[i], &ccr_global.previous[i], NULL);
}

static int install_signal_actions(char *error, size_t capacity) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = ccr_signal_handler;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    // Every signal but the crash signals is blocked while the handler runs, so an app's SIGTERM
    // or SIGINT handler cannot run on the crashing thread (and exit(0)) in the middle of a crash;
    // a fault inside the handler still re-enters it (SA_NODEFER, crash signals open).
    sigfillset(&action.sa_mask);
    for (int i = 0; i < CCR_SIGNAL_COUNT; i++) sigdelset(&action.sa_mask, crash_signals[i]);
    for (int i = 0; i < CCR_SIGNAL_COUNT; i++) {
        ccr_global.signals[i] = crash_signals[i];
        if (sigaction(crash_signals[i], &action, &ccr_global.previous[i]) != 0) {
            snprintf(error, capacity, "sigaction(%d) failed: %s", crash_signals[i], strerror(errno));
            restore_signal_actions(i);
            return -1;
        }
    }
    return 0;
}

/// At a normal exit the record file opened in advance was not needed: remove it, and end the
/// session cleanly. Only in the process that installed (a forked child shares the descriptor but
/// not the file's purpose): a child that exits leaves the parent's record file alone. After a
/// daemonising fork (the parent exits, the child goes on) this runs in the parent, removes the
/// record file and ends the session; the child keeps running, and a crash in it is not recorded
/// (its pid is not the installer's: the handler writes nothing and the child dies by the signal).
static void remove_unused_record_file(void) {
    if (ccr_global.installed && getpid() == ccr_global.pid && atomic_load(&ccr_global.crashing_tid) == 0) {
        unlink(ccr_global.new_path);
        ccr_session_end();
    }
}

int ccr_install(const ccr_install_options *o, char *error, size_t capacity) {
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (capacity > 0) error[0] = '\0';
    if (ccr_global.installed) {
        snprintf(error, capacity, "crash reporting is already installed in this process");
        return 1;
    }
    if (copy_text(ccr_global.record_id, sizeof ccr_global.record_id, o->record_id, "record id", error, capacity) ||
        copy_text(ccr_global.app_id, sizeof ccr_global.app_id, o->app_id, "app id", error, capacity) ||
        copy_text(ccr_global.app_version, sizeof ccr_global.app_version, o->app_version, "app version", error, capacity)) {
        return 2;
    }
    ccr_global.pid = getpid();
    ccr_global.watchdog_timeout_ms = o->watchdog_timeout_ms > 0 ? o->watchdog_timeout_ms : 2000;
    ccr_global.test_misbehaviour = o->test_misbehaviour;
    atomic_store(&ccr_global.crashing_tid, 0);
    atomic_store(&ccr_global.finisher, CCR_FINISHER_NONE);
    atomic_store(&ccr_global.stage, 0);

    if (open_record_file(o, error, capacity) != 0) return 3;
    static int reader_hook_registered;   // a forked child's thread forgets its parent thread's reading id
    if (!reader_hook_registered) reader_hook_registered = pthread_atfork(NULL, NULL, ccr_unwind_forget_reader_in_child) == 0;
    if (o->defer_libunwind) {
        ccr_libunwind_defer();   // loaded on the caller's background thread (ccr_libunwind_load_deferred)
        // A child forked before that load finishes would have no thread to finish it: fork waits
        // for it first (at most 100 ms).
        static int fork_hook_registered;
        if (!fork_hook_registered) fork_hook_registered = pthread_atfork(wait_for_deferred_libunwind, NULL, NULL) == 0;
    } else if (ccr_libunwind_load(error, capacity) != 0) {
        close_record_file();
        return 4;
    }
    ccr_global.fatal_message = swift_getFatalErrorMessageBuffer ? swift_getFatalErrorMessageBuffer() : NULL;
    // The module table is made after libunwind is loaded (so it lists libunwind and what it
    // brought): here, or with the deferred load.
    ccr_modules_prepare_live_walk();
    if (!o->defer_libunwind) ccr_modules_record();
    if (start_watchdog(o->defer_libunwind, error, capacity) != 0) {
        ccr_libunwind_unload();
        close_record_file();
        return 5;
    }
    if (ccr_altstacks_enable(error, capacity) != 0) {
        stop_watchdog();
        ccr_libunwind_unload();
        close_record_file();
        return 6;
    }
    if (install_signal_actions(error, capacity) != 0) {
        ccr_altstacks_disable();
        stop_watchdog();
        ccr_libunwind_unload();
        close_record_file();
        return 7;
    }
    ccr_threads_install(o);   // optional: without a free real-time signal, the crashing thread only
    ccr_global.installed = 1;
    static int exit_hook_registered;
    if (!exit_hook_registered) exit_hook_registered = atexit(remove_unused_record_file) == 0;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    last_install_ns = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000ull + (uint64_t)(t1.tv_nsec - t0.tv_nsec);
    return 0;
}

int ccr_crash_started(void) {
    return atomic_load(&ccr_global.crashing_tid) != 0;
}

int ccr_is_installed(void) {
    return ccr_global.installed;
}

int ccr_module_count(void) {
    return ccr_global.module_count;
}

uint64_t ccr_last_install_duration_ns(void) {
    return last_install_ns;
}
