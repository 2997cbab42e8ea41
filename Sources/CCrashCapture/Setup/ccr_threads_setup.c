// Install-time half of the all-threads capture: chooses the real-time signal that asks a thread
// to unwind itself and installs its handler. Runs after the crash handlers are installed; a
// failure here leaves crash capture working with the crashing thread only.
#include <fcntl.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "CCrashCapture.h"
#include "../CrashTime/ccr_crashtime.h"
#include "../CrashTime/ccr_threads.h"
#include "ccr_setup.h"

/// The highest real-time signal whose action is still the default one. Libraries that take a
/// real-time signal usually take the lowest (glibc keeps 32 and 33 for itself; timer_create and
/// most runtimes count up from SIGRTMIN), so counting down from SIGRTMAX avoids them.
/// Not async-signal-safe: only needed at install (SIGRTMIN/SIGRTMAX are glibc calls).
static int choose_signal(void) {
    for (int signo = SIGRTMAX; signo >= SIGRTMIN; signo--) {
        struct sigaction current;
        if (sigaction(signo, NULL, &current) != 0) continue;
        if (!(current.sa_flags & SA_SIGINFO) && current.sa_handler == SIG_DFL) return signo;
    }
    return -1;
}

void ccr_threads_install(const ccr_install_options *o) {
    ccr_threads.enabled = 0;
    if (o->thread_limit < 0) return;   // turned off
    int limit = o->thread_limit == 0 ? CCR_THREADS_MAX : o->thread_limit;
    int frames = o->thread_frames <= 0 ? CCR_THREAD_FRAMES_DEFAULT : o->thread_frames;
    ccr_threads.limit = limit > CCR_THREADS_MAX ? CCR_THREADS_MAX : limit;
    ccr_threads.frames = frames > CCR_THREAD_FRAMES_MAX ? CCR_THREAD_FRAMES_MAX : frames;
    ccr_threads.wait_ms = o->thread_wait_ms <= 0 ? CCR_THREAD_WAIT_MS_DEFAULT : o->thread_wait_ms;
    atomic_store(&ccr_threads.crash.active, 0);
    atomic_store(&ccr_threads.hang.active, 0);
    int signo = choose_signal();
    if (signo < 0) return;

    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = ccr_threads_answer;
    // SA_RESTART: the asked thread goes back to what it was doing, its system call restarted.
    // Everything but the crash signals is blocked while it unwinds; a fault in the unwind still
    // reaches the crash handler (a blocked SIGSEGV would kill the process before any record).
    action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigfillset(&action.sa_mask);
    for (int i = 0; i < CCR_SIGNAL_COUNT; i++) sigdelset(&action.sa_mask, ccr_global.signals[i]);
    if (sigaction(signo, &action, NULL) != 0) return;
    ccr_threads.signo = signo;
    // A descriptor for a crash in a process out of them (see spare_fd); once per process. A memfd:
    // no other open file has its inode (every open of /dev/null has the same), so the crash can
    // tell it is still ours.
    int held = atomic_load(&ccr_threads.spare_held);
    if (!held) {
        int fd = memfd_create("crash-reporting-spare", MFD_CLOEXEC);
        if (fd < 0) {   // no memfd (a seccomp filter, an old kernel): a pipe's read end, whose inode is its own too
            int ends[2];
            if (pipe2(ends, O_CLOEXEC) == 0) {
                close(ends[1]);
                fd = ends[0];
            }
        }
        struct stat identity;
        if (fd >= 0 && fstat(fd, &identity) == 0) {
            ccr_threads.spare_fd = fd;
            ccr_threads.spare_dev = (uint64_t)identity.st_dev;
            ccr_threads.spare_ino = (uint64_t)identity.st_ino;
            atomic_store(&ccr_threads.spare_held, 1);
        } else if (fd >= 0) {
            close(fd);
        }
    }
    ccr_threads.enabled = 1;
    ccr_threads_unblock_signal();
    // With the module table made later on a background thread, it touches the scratch there
    // (ccr_modules_record); made already, it was before threads were on.
    if (!o->defer_libunwind) ccr_threads_prefault();
}

void ccr_threads_unblock_signal(void) {
    // A process may start with real-time signals blocked (its parent's mask is inherited through
    // fork and exec, and test runners and process supervisors block them), and threads inherit
    // their creator's mask. The signal is only ever sent to one thread by this process, so
    // unblocking it does not change where process-directed signals land.
    if (!ccr_threads.enabled) return;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, ccr_threads.signo);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
}

int ccr_thread_capture_signal(void) {
    return ccr_threads.enabled ? ccr_threads.signo : 0;
}

void ccr_threads_mark_reporter(const char *name, int rename) {
    int tid = ccr_gettid();
    char short_name[16] = {0};
    strncpy(short_name, name ? name : "crash-reporter", sizeof short_name - 1);
    int marked = 0;
    for (int i = 0; i < CCR_REPORTER_THREADS && !marked; i++) {
        if (atomic_load(&ccr_threads.reporter_tids[i]) == tid) marked = 1;
    }
    for (int i = 0; i < CCR_REPORTER_THREADS && !marked; i++) {
        int expected = 0;
        // Claimed (-1, which no thread has), named, then published with the tid.
        if (!atomic_compare_exchange_strong(&ccr_threads.reporter_tids[i], &expected, -1)) continue;
        memcpy(ccr_threads.reporter_names[i], short_name, sizeof short_name);
        atomic_store(&ccr_threads.reporter_tids[i], tid);
        marked = 1;
    }
    // Renamed only once published: a crash that reads the new name finds the thread among ours
    // when it looks again (ccr_threads.c). Renamed first, a hang monitor starting as the process
    // crashed was listed as an app thread called "crash-hangs" (AllThreadsTests, 1 run in 4).
    // Not renamed when it queues work: a libdispatch worker the hang monitor's heartbeat made
    // inherited "crash-hangs" and was listed as an app thread of that name (fresh-clone CI,
    // 2026-11-27).
    if (rename) prctl(PR_SET_NAME, short_name, 0, 0, 0);
}
