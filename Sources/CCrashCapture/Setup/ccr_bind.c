// The libc functions the crash-time code calls (tools/signal-safety-allowlist.txt), called once
// at install so that the dynamic linker binds their PLT slots now. A program linked without
// -z now (SwiftPM's executables are) binds a slot at its first call: a crash whose handler was
// the first caller of sigismember, sigemptyset or errno's accessor looked each one up through
// every loaded library's symbol table in the handler (LD_DEBUG=bindings after the crash; the
// capture's work before the sync was ~11 µs shorter with LD_BIND_NOW, tools/bench-capture).
// Each call here has no effect: a query, a local buffer, a descriptor of -1. Only calls no
// sandbox refuses by killing the process: the system calls here are ones libc and this library
// make at start anyway (open, mkdir, rename and fdatasync included: start creates its folders,
// opens and syncs the record file, renames). Not called: nanosleep, execve (a sandbox may refuse
// them by killing), clone, alarm (no call without effect; a forked child's watchdog only),
// __stack_chk_fail. On CrashReporter.start's path this runs on the table's thread, after the
// handler is installed: a crash in between binds as before.
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ccr_setup.h"

/// Sizes the compiler cannot see, so that memcpy, memset, memcmp, strlen and strnlen stay calls
/// (a builtin expanded inline binds nothing).
static volatile size_t opaque_one = 1;

void ccr_bind_crash_calls(void) {
    int saved_errno = errno;   // errno's accessor, __errno_location, bound here
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGSEGV);
    (void)sigismember(&set, SIGSEGV);
    sigset_t current;
    (void)pthread_sigmask(SIG_BLOCK, NULL, &current);
    (void)sigprocmask(SIG_BLOCK, NULL, &current);
    struct sigaction action;
    (void)sigaction(SIGSEGV, NULL, &action);
    struct timespec now;
    (void)clock_gettime(CLOCK_MONOTONIC, &now);
    (void)syscall(SYS_gettid);
    char a[2] = "a", b[2] = "b";
    size_t n = opaque_one;
    memcpy(b, a, n);
    memset(b, 'b', n);
    (void)memcmp(a, b, n);
    (void)strlen(a + n - 1);
    (void)strnlen(a, n);
    // Refused: a descriptor of -1; nothing to wait for.
    struct stat st;
    (void)fstat(-1, &st);
    (void)fcntl(-1, F_GETFL);
    (void)read(-1, b, 0);
    (void)write(-1, a, 0);
    (void)close(-1);
    (void)fdatasync(-1);
    (void)poll(NULL, 0, 0);
    // Refused: an empty path.
    (void)open("", O_RDONLY | O_CLOEXEC);
    (void)mkdir("", 0700);
    (void)rename("", "");
    errno = saved_errno;
}
