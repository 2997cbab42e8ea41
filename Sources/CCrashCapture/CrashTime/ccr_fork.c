// A crash in a forked child (Docs/Decisions/0027). fork() copies this process's memory, so the
// child has its own copy of ccr_global; what it shares with the parent is what the kernel shares:
// the prefilled record file (an open file description, offset included), the watchdog pipe and
// the mapped session file (MAP_SHARED). The parent may still crash and needs all three.
//
// So the child's first crash gives the child an identity of its own before anything is written:
// a new record id and pid, its own record file in new/ (created, locked, then renamed to pending/
// like any record), no watchdog pipe (the parent's), no session (marking
// it crashed would mark the parent's), no requests in flight (they are the parent's threads'),
// and a watchdog of its own: alarm(2) on the crashing thread, whose handler finishes the record
// from the saved context and ends the process, as the watchdog thread does in the parent.
// Nothing here runs before a crash: fork() itself costs nothing more.
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ccr_crashtime.h"
#include "ccr_session.h"
#include "ccr_threads.h"

void ccr_make_record_id(char *out) {
    uint8_t bytes[16] = {0};
    size_t filled = 0;
    for (int attempt = 0; attempt < 8 && filled < sizeof bytes; attempt++) {
        long n = syscall(SYS_getrandom, bytes + filled, sizeof bytes - filled, 0x0001L /* GRND_NONBLOCK */);
        if (n > 0) filled += (size_t)n;
    }
    if (filled < sizeof bytes) {   // no entropy yet: time, pid and tid still make a unique file name here
        uint64_t mix[2] = {ccr_now_ns(CLOCK_REALTIME) ^ ((uint64_t)ccr_getpid() << 32),
                           ccr_now_ns(CLOCK_MONOTONIC) ^ (uint64_t)ccr_gettid()};
        memcpy(bytes, mix, sizeof bytes);
    }
    bytes[6] = (bytes[6] & 0x0F) | 0x40;   // version 4
    bytes[8] = (bytes[8] & 0x3F) | 0x80;   // RFC 4122 variant
    static const char hex[] = "0123456789abcdef";
    char *p = out;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) *p++ = '-';
        *p++ = hex[bytes[i] >> 4];
        *p++ = hex[bytes[i] & 15];
    }
    *p = '\0';
}

/// `<reports>/<folder>/<id>.crash` into `out`; 0, or -1 when it does not fit.
static int record_path(char *out, const char *reports, size_t reports_length, const char *folder, const char *id) {
    size_t folder_length = strlen(folder), id_length = strlen(id);
    size_t total = reports_length + 1 + folder_length + 1 + id_length + sizeof ".crash";
    if (total > CCR_PATH_MAX) return -1;
    char *p = out;
    memcpy(p, reports, reports_length); p += reports_length;
    *p++ = '/';
    memcpy(p, folder, folder_length); p += folder_length;
    *p++ = '/';
    memcpy(p, id, id_length); p += id_length;
    memcpy(p, ".crash", sizeof ".crash");
    return 0;
}

/// The app's SIGALRM action, put back when the child's crash is recorded (the app's own SIGSEGV
/// handler, chained after, may recover and go on).
static struct sigaction previous_alarm_action;
static int alarm_action_taken, alarm_rearmed, facts_period_given;

/// SIGALRM in a crashing child: its handler took longer than the watchdog's budget.
static void child_watchdog_alarm(int signo, siginfo_t *info, void *ucontext) {
    (void)signo; (void)ucontext;
    // Only the alarm(2) armed below: its expiry comes from the kernel (SI_KERNEL). A SIGALRM sent
    // with kill(2) (SI_USER) or by an app's POSIX timer (SI_TIMER) is not the watchdog.
    if (info != NULL && info->si_code != SI_KERNEL) return;
    // The handler it interrupted has not put its fixed facts in the buffer yet (a child stopped,
    // then resumed past the alarm): one more period for it, once, so the record starts with them.
    if (!ccr_handler_facts_are_buffered() && !facts_period_given) {
        facts_period_given = 1;
        alarm(1);
        return;
    }
    int claim = CCR_FINISHER_NONE;
    if (atomic_compare_exchange_strong(&ccr_global.finisher, &claim, CCR_FINISHER_WATCHDOG)) {
        // On the crashing thread itself: the handler it interrupted cannot go on meanwhile, so
        // its facts are written out only if they were all in.
        ccr_watchdog_finish_record(0);
        ccr_die(ccr_global.context.signo);
    }
    // The handler is finishing the record itself (it claimed it first): one more period, then end.
    if (!alarm_rearmed) {
        alarm_rearmed = 1;
        alarm(1);
        return;
    }
    ccr_die(ccr_global.context.signo);
}

static void start_child_watchdog(void) {
    if (ccr_global.watchdog_timeout_ms <= 0) return;
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = child_watchdog_alarm;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    for (int i = 0; i < CCR_SIGNAL_COUNT; i++) sigaddset(&action.sa_mask, ccr_global.signals[i]);
    if (sigaction(SIGALRM, &action, &previous_alarm_action) != 0) return;
    alarm_action_taken = 1;
    // The crash handler's mask blocks every signal but the crash signals: let this one in.
    sigset_t alarm_only;
    sigemptyset(&alarm_only);
    sigaddset(&alarm_only, SIGALRM);
    pthread_sigmask(SIG_UNBLOCK, &alarm_only, NULL);
    alarm((unsigned)((ccr_global.watchdog_timeout_ms + 999) / 1000));
}

void ccr_fork_stop_watchdog(void) {
    if (ccr_global.forked_from_pid == 0) return;
    alarm(0);
    // Blocked again, as the handler's mask had it: the app's SIGALRM handler must not run on the
    // crashing thread during the sender's wait or the chained handler.
    sigset_t alarm_only;
    sigemptyset(&alarm_only);
    sigaddset(&alarm_only, SIGALRM);
    pthread_sigmask(SIG_BLOCK, &alarm_only, NULL);
    if (alarm_action_taken) {
        sigaction(SIGALRM, &previous_alarm_action, NULL);
        alarm_action_taken = 0;
    }
}

/// Closes `fd` when it is the file recorded at install (same device and inode). fstat is
/// async-signal-safe.
static void close_if_inherited(int fd, unsigned long long dev, unsigned long long ino) {
    struct stat now;
    if (fd >= 0 && fstat(fd, &now) == 0 && (unsigned long long)now.st_dev == dev && (unsigned long long)now.st_ino == ino) close(fd);
}

int ccr_fork_adopt(void) {
    // A fork made while the parent was in its crash handler carries the parent's answer on guarded
    // copies; this thread's mask and the child's handlers may differ: asked again.
    ccr_safe_copy_forget_crash_answer();
    const char *new_path = ccr_global.new_path;
    // The reports folder: new_path is "<reports>/new/<id>.crash".
    size_t length = strnlen(new_path, CCR_PATH_MAX);
    size_t slash = length, separators = 0;
    while (slash > 0 && separators < 2) {
        slash--;
        if (new_path[slash] == '/') separators++;
    }
    if (separators < 2) return -1;
    char reports[CCR_PATH_MAX];
    memcpy(reports, new_path, slash);
    reports[slash] = '\0';

    char id[CCR_ID_MAX];
    ccr_make_record_id(id);
    char child_new[CCR_PATH_MAX], child_pending[CCR_PATH_MAX];
    if (record_path(child_new, reports, slash, "new", id) != 0 ||
        record_path(child_pending, reports, slash, "pending", id) != 0) {
        return -1;
    }
    // The parent's record file and watchdog pipe are not this process's to write: close the
    // child's copies first, which also leaves a descriptor free for the child's own file in a
    // child that used up its limit (EMFILE). The parent's stay open in the parent. Only when the
    // number is still the inherited file: a child that closed it (a daemon closing every
    // descriptor) may have opened a file of its own under the same number.
    close_if_inherited(ccr_global.record_fd, ccr_global.record_dev, ccr_global.record_ino);
    ccr_global.record_fd = -1;
    close_if_inherited(ccr_global.watchdog_fd[1], ccr_global.watchdog_dev, ccr_global.watchdog_ino);
    ccr_global.watchdog_fd[1] = -1;
    int fd = open(child_new, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        // new/ gone (an operator's cleanup): make it again, once.
        char folder[CCR_PATH_MAX];
        memcpy(folder, reports, slash);
        memcpy(folder + slash, "/new", sizeof "/new");
        mkdir(folder, 0700);
        fd = open(child_new, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0) return -1;
    }
    // Held until the process ends: another process's start leaves a locked file in new/ alone.
    syscall(SYS_flock, (long)fd, (long)(LOCK_EX | LOCK_NB));

    ccr_global.forked_from_pid = ccr_global.pid;
    memcpy(ccr_global.forked_from_id, ccr_global.record_id, sizeof ccr_global.forked_from_id);
    ccr_global.pid = ccr_getpid();
    memcpy(ccr_global.record_id, id, sizeof id);
    memcpy(ccr_global.new_path, child_new, sizeof child_new);
    memcpy(ccr_global.pending_path, child_pending, sizeof child_pending);
    ccr_global.record_fd = fd;
    ccr_session = NULL;
    // Forked during the parent's crash: the parent's finisher claim and thread collection are not
    // this process's (their threads are not here).
    atomic_store(&ccr_global.finisher, CCR_FINISHER_NONE);
    ccr_threads_reset_after_fork();
    start_child_watchdog();
    return 0;
}
