// C helpers for the crash fixtures. Each is noinline so it is its own frame in the stack.
#include "CFixtureSupport.h"

#include <time.h>
#include <unistd.h>

#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

volatile int cfs_sink;

__attribute__((noinline)) void cfs_write_null_pointer(void) {
    volatile int *pointer = NULL;
    *pointer = 42;
    cfs_sink++;
}

__attribute__((noinline)) void cfs_abort(void) {
    abort();
}

__attribute__((noinline)) int cfs_divide(int dividend, int divisor) {
    volatile int d = divisor;
    int result = dividend / d;
    cfs_sink += result;
    return result;
}

__attribute__((noinline)) int cfs_touch_truncated_mapping(const char *directory) {
    char path[4096];
    snprintf(path, sizeof path, "%s/truncated-mapping.bin", directory);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) return -1;
    long page = sysconf(_SC_PAGESIZE);
    if (ftruncate(fd, page) != 0) return -1;
    volatile char *mapping = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (mapping == MAP_FAILED) return -1;
    mapping[page] = 1;   // past the end of the file: SIGBUS
    cfs_sink++;
    return 0;
}

__attribute__((noinline)) void cfs_trap_instruction(void) {
    __builtin_debugtrap();
    cfs_sink++;
}

static char marker_path[4096];

static void marker_handler(int signo, siginfo_t *info, void *context) {
    (void)info;
    (void)context;
    int fd = open(marker_path, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd >= 0) {
        char line[64];
        int n = 0;
        const char *prefix = "previous handler ran for signal ";
        for (; prefix[n]; n++) line[n] = prefix[n];
        if (signo >= 10) line[n++] = (char)('0' + signo / 10);
        line[n++] = (char)('0' + signo % 10);
        line[n++] = '\n';
        (void)!write(fd, line, (size_t)n);
        close(fd);
    }
    signal(signo, SIG_DFL);
}

int cfs_install_marker_handler(int signo, const char *path) {
    strncpy(marker_path, path, sizeof marker_path - 1);
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = marker_handler;
    action.sa_flags = SA_SIGINFO;
    sigemptyset(&action.sa_mask);
    return sigaction(signo, &action, NULL);
}

static struct sigaction replaced_action;

static void chaining_handler(int signo, siginfo_t *info, void *context) {
    if (replaced_action.sa_flags & SA_SIGINFO) replaced_action.sa_sigaction(signo, info, context);
}

int cfs_install_chaining_handler(int signo) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = chaining_handler;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&action.sa_mask);
    return sigaction(signo, &action, &replaced_action);
}

static atomic_int loader_lock_held;

static int hold_forever(struct dl_phdr_info *info, size_t size, void *data) {
    (void)info;
    (void)size;
    (void)data;
    atomic_store(&loader_lock_held, 1);
    for (;;) pause();
    return 0;
}

static void *loader_lock_thread(void *unused) {
    (void)unused;
    dl_iterate_phdr(hold_forever, NULL);
    return NULL;
}

void cfs_hold_loader_lock_on_new_thread(void) {
    pthread_t thread;
    pthread_create(&thread, NULL, loader_lock_thread, NULL);
    while (!atomic_load(&loader_lock_held)) usleep(1000);
}

void cfs_name_current_thread(const char *name) {
    pthread_setname_np(pthread_self(), name);
}

__attribute__((noinline)) void cfs_call_below_big_frame(void (*body)(void)) {
    // Every byte written: no stale word of an earlier, deeper call (a return address into the
    // caller) is left in it for a scan to find early.
    volatile char pad[9000];
    for (size_t i = 0; i < sizeof pad; i++) pad[i] = 0;
    body();
    __asm__ volatile("" : : "r"(pad[sizeof pad - 1]) : "memory");   // pad stays live across the call
}

int cfs_fork_child_that_faults(int *child_pid) {
    pid_t child = fork();
    if (child == 0) {
        cfs_write_null_pointer();
        _exit(0);   // not reached
    }
    if (child < 0) return -1;
    *child_pid = (int)child;
    int status = 0;
    while (waitpid(child, &status, 0) < 0) {}
    return status;
}

/// Whether a file in `folder` contains `text` (read up to 64 KiB each).
static int folder_has_text(const char *folder, const char *text) {
    DIR *directory = opendir(folder);
    if (directory == NULL) return 0;
    int found = 0;
    static char contents[65536];
    for (struct dirent *entry; !found && (entry = readdir(directory)) != NULL;) {
        if (entry->d_name[0] == '.') continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", folder, entry->d_name);
        int fd = open(path, O_RDONLY);
        if (fd < 0) continue;
        ssize_t n = read(fd, contents, sizeof contents - 1);
        close(fd);
        if (n > 0) {
            contents[n] = '\0';
            found = strstr(contents, text) != NULL;
        }
    }
    closedir(directory);
    return found;
}

int cfs_fork_child_that_faults_then_alarm(int *child_pid, const char *new_folder) {
    pid_t child = fork();
    if (child == 0) {
        cfs_write_null_pointer();
        _exit(0);   // not reached
    }
    if (child < 0) return -1;
    *child_pid = (int)child;
    for (int i = 0; i < 3000 && !folder_has_text(new_folder, "\"type\":\"modules\""); i++) usleep(10000);
    kill(child, SIGALRM);
    int status = 0;
    while (waitpid(child, &status, 0) < 0) {}
    return status;
}

int cfs_fork_child_out_of_descriptors_that_faults(int *child_pid) {
    pid_t child = fork();
    if (child == 0) {
        struct rlimit limit = {.rlim_cur = 64, .rlim_max = 64};
        setrlimit(RLIMIT_NOFILE, &limit);
        while (open("/dev/null", O_RDONLY) >= 0) {}
        cfs_write_null_pointer();
        _exit(0);   // not reached
    }
    if (child < 0) return -1;
    *child_pid = (int)child;
    int status = 0;
    while (waitpid(child, &status, 0) < 0) {}
    return status;
}

// A child that closes every inherited descriptor, as a daemon does, and puts a file of its own
// under each of those numbers (the crash record's and the watchdog pipe's among them), then
// faults. A SIGSEGV handler installed before CrashReporter.start runs after the child's record is
// written and says how many of those numbers still hold the child's own file.
static char own_file_path[512];
static int own_file_highest = -1;
static pid_t descriptor_check_parent;

static void descriptor_check_handler(int signo, siginfo_t *info, void *ucontext) {
    (void)signo; (void)info; (void)ucontext;
    if (getpid() == descriptor_check_parent) return;   // the parent's own crash: nothing to say
    int kept = 0, total = 0;
    for (int fd = 3; fd <= own_file_highest; fd++) {
        char link[16 + 12], target[sizeof own_file_path];
        // "/proc/self/fd/<fd>" without snprintf (not async-signal-safe).
        char digits[12];
        int n = 0;
        for (int v = fd; v > 0; v /= 10) digits[n++] = (char)('0' + v % 10);
        memcpy(link, "/proc/self/fd/", 14);
        for (int i = 0; i < n; i++) link[14 + i] = digits[n - 1 - i];
        link[14 + n] = '\0';
        ssize_t length = readlink(link, target, sizeof target - 1);
        total++;
        if (length == (ssize_t)strlen(own_file_path) && memcmp(target, own_file_path, (size_t)length) == 0) kept++;
    }
    char line[64] = "own files kept ";
    size_t at = strlen(line);
    char digits[12];
    int n = 0;
    for (int v = kept; n == 0 || v > 0; v /= 10) digits[n++] = (char)('0' + v % 10);
    while (n > 0) line[at++] = digits[--n];
    memcpy(line + at, " of ", 4); at += 4;
    for (int v = total; n == 0 || v > 0; v /= 10) digits[n++] = (char)('0' + v % 10);
    while (n > 0) line[at++] = digits[--n];
    // And the bytes in that file: the child wrote none, so any is a write made under one of those
    // numbers (libunwind's page check into what it took for its pipe).
    struct stat own;
    long size = stat(own_file_path, &own) == 0 ? (long)own.st_size : -1;
    memcpy(line + at, " bytes ", 7); at += 7;
    if (size < 0) line[at++] = '-';
    for (long v = size < 0 ? 1 : size; n == 0 || v > 0; v /= 10) digits[n++] = (char)('0' + v % 10);
    while (n > 0) line[at++] = digits[--n];
    line[at++] = '\n';
    (void)!write(2, line, at);
}

int cfs_install_descriptor_check_handler(const char *own_file) {
    strncpy(own_file_path, own_file, sizeof own_file_path - 1);
    descriptor_check_parent = getpid();
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = descriptor_check_handler;
    action.sa_flags = SA_SIGINFO;
    sigemptyset(&action.sa_mask);
    return sigaction(SIGSEGV, &action, NULL);
}

int cfs_fork_child_reusing_descriptors_that_faults(int *child_pid) {
    pid_t child = fork();
    if (child == 0) {
        // The highest descriptor the child inherited (the record file and the watchdog pipe are
        // at or below it).
        int highest = 2;
        DIR *folder = opendir("/proc/self/fd");
        if (folder == NULL) _exit(7);
        for (struct dirent *entry; (entry = readdir(folder)) != NULL;) {
            int fd = atoi(entry->d_name);
            if (fd > highest && fd != dirfd(folder)) highest = fd;
        }
        closedir(folder);
        for (int fd = 3; fd <= highest; fd++) close(fd);
        int own = open(own_file_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (own < 0) _exit(7);
        for (int fd = 3; fd <= highest; fd++) if (fd != own) dup2(own, fd);
        own_file_highest = highest;
        cfs_write_null_pointer();
        _exit(0);   // not reached
    }
    if (child < 0) return -1;
    *child_pid = (int)child;
    int status = 0;
    while (waitpid(child, &status, 0) < 0) {}
    return status;
}

int cfs_daemonise_then_fault(void) {
    pid_t parent = getpid();
    pid_t child = fork();
    if (child != 0) return (int)child;   // the parent: returns, says the pid, and exit()s
    // The daemon: waits for its parent's exit (and its atexit work) to be over, leaves the
    // session and the terminal as daemon(3) does, then faults.
    while (getppid() == parent) usleep(1000);
    setsid();
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
        dup2(null, 0);
        dup2(null, 1);
        dup2(null, 2);
        if (null > 2) close(null);
    }
    cfs_write_null_pointer();
    _exit(0);   // not reached
}

static void exit_zero(int signo) {
    (void)signo;
    exit(0);
}

void cfs_exit_zero_on_sigterm(void) {
    signal(SIGTERM, exit_zero);
    // A test runner may start us with SIGTERM blocked; the app this stands for has it open.
    sigset_t open;
    sigemptyset(&open);
    sigaddset(&open, SIGTERM);
    pthread_sigmask(SIG_UNBLOCK, &open, NULL);
}

/// The first byte of any record file in `directory` is '{': a crash has started writing.
static int record_started(const char *directory) {
    DIR *d = opendir(directory);
    if (d == NULL) return 0;
    int started = 0;
    struct dirent *entry;
    while (!started && (entry = readdir(d)) != NULL) {
        size_t length = strlen(entry->d_name);
        if (length < 6 || strcmp(entry->d_name + length - 6, ".crash") != 0) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", directory, entry->d_name);
        int fd = open(path, O_RDONLY);
        if (fd < 0) continue;
        char first = 0;
        started = read(fd, &first, 1) == 1 && first == '{';
        close(fd);
    }
    closedir(d);
    return started;
}

typedef struct sigterm_request {
    char directory[4096];
    pid_t target;
} sigterm_request;

static sigterm_request sigterm_target;

static void *send_sigterm_when_record_starts(void *unused) {
    (void)unused;
    while (!record_started(sigterm_target.directory)) usleep(1000);
    static const char line[] = "sending SIGTERM to the crashing thread\n";
    (void)!write(STDERR_FILENO, line, sizeof line - 1);
    syscall(SYS_tgkill, (long)getpid(), (long)sigterm_target.target, (long)SIGTERM);
    for (;;) pause();
    return NULL;
}

void cfs_sigterm_this_thread_when_record_starts(const char *new_directory) {
    strncpy(sigterm_target.directory, new_directory, sizeof sigterm_target.directory - 1);
    sigterm_target.target = (pid_t)syscall(SYS_gettid);
    // The sender itself never takes SIGTERM: only the target thread can.
    sigset_t block, previous;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &block, &previous);
    pthread_t thread;
    pthread_create(&thread, NULL, send_sigterm_when_record_starts, NULL);
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
}

int cfs_trap_getppid_with_seccomp(void) {
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getppid, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog program = {.len = sizeof filter / sizeof filter[0], .filter = filter};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program);
}

__attribute__((noinline)) long cfs_trapped_system_call(void) {
    long result = syscall(SYS_getppid);
    cfs_sink++;
    return result;
}

void (*volatile cfs_null_function)(void);

__attribute__((noinline)) void cfs_call_null_function_pointer(void) {
    cfs_null_function();   // pc 0; the return address into this function is at [sp]
    cfs_sink++;
}

static atomic_int idle_threads_started;

static void *idle_thread(void *unused) {
    (void)unused;
    atomic_fetch_add(&idle_threads_started, 1);
    for (;;) pause();
    return NULL;
}

void cfs_use_up_descriptors(void) {
    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur > 256) {
        limit.rlim_cur = 256;
        setrlimit(RLIMIT_NOFILE, &limit);
    }
    while (open("/dev/null", O_RDONLY) >= 0) {}
}

static void *crash_once_main_is_a_zombie(void *unused) {
    (void)unused;
    char path[64], text[512];
    snprintf(path, sizeof path, "/proc/self/task/%d/status", (int)getpid());
    for (;;) {
        int fd = open(path, O_RDONLY);
        ssize_t n = fd >= 0 ? read(fd, text, sizeof text - 1) : -1;
        if (fd >= 0) close(fd);
        if (n > 0) {
            text[n] = '\0';
            if (strstr(text, "\nState:\tZ") != NULL) break;
        }
        usleep(1000);
    }
    cfs_write_null_pointer();
    return NULL;
}

void cfs_exit_main_thread_then_crash(void) {
    pthread_t thread;
    pthread_create(&thread, NULL, crash_once_main_is_a_zombie, NULL);
    pthread_exit(NULL);
}

void cfs_start_idle_threads(int count) {
    int created = 0;
    for (; created < count; created++) {
        pthread_t thread;
        if (pthread_create(&thread, NULL, idle_thread, NULL) != 0) break;
    }
    while (atomic_load(&idle_threads_started) < created) usleep(500);
}

#if defined(__x86_64__)
// Written in assembly so that the shape does not depend on the optimizer: a leaf that never
// pushes rbp (its return address stays at [sp]) and a caller with a classic frame.
__attribute__((naked, noinline)) void cfs_frameless_leaf(void) {
    __asm__ volatile("movl $1, 0x10\n\tret\n");
}
__attribute__((naked, noinline)) void cfs_call_frameless_leaf(void) {
    __asm__ volatile("push %rbp\n\tmov %rsp, %rbp\n\tcall cfs_frameless_leaf\n\tpop %rbp\n\tret\n");
}
#else
__attribute__((noinline)) void cfs_frameless_leaf(void) { *(volatile int *)16 = 1; }
__attribute__((noinline)) void cfs_call_frameless_leaf(void) { cfs_frameless_leaf(); __asm__ volatile(""); }
#endif

int cfs_gettid(void) {
    return (int)syscall(SYS_gettid);
}

long long cfs_sync_floor_ns(const char *directory, long size, int idle_ms) {
    static char prefill[64 * 1024], record[64 * 1024];
    if (size <= 0 || size > (long)sizeof record) return -1;
    char new_path[4096], pending_path[4096];
    snprintf(new_path, sizeof new_path, "%s/new", directory);
    snprintf(pending_path, sizeof pending_path, "%s/pending", directory);
    mkdir(directory, 0700);
    mkdir(new_path, 0700);
    mkdir(pending_path, 0700);
    snprintf(new_path, sizeof new_path, "%s/new/floor.crash", directory);
    snprintf(pending_path, sizeof pending_path, "%s/pending/floor.crash", directory);
    memset(prefill, '\n', sizeof prefill);
    memset(record, 'x', (size_t)size);
    record[size - 1] = '\n';
    int fd = open(new_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return -1;
    if (write(fd, prefill, sizeof prefill) != (ssize_t)sizeof prefill || fdatasync(fd) != 0) return -1;
    lseek(fd, 0, SEEK_SET);
    struct timespec a, b;
    if (idle_ms > 0) {
        usleep((useconds_t)idle_ms * 1000);
        // A crash handler reaches its sync with the CPU busy (it has been writing the record for
        // half a millisecond): spin 1 ms so that the CPU's wake-up from idle is not counted here.
        clock_gettime(CLOCK_MONOTONIC, &a);
        do clock_gettime(CLOCK_MONOTONIC, &b);
        while ((b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec) < 1000000LL);
    }
    clock_gettime(CLOCK_MONOTONIC, &a);
    if (write(fd, record, (size_t)size) != size || fdatasync(fd) != 0 || rename(new_path, pending_path) != 0) return -1;
    clock_gettime(CLOCK_MONOTONIC, &b);
    close(fd);
    unlink(pending_path);
    return (long long)(b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec);
}

int cfs_put_pipe_under(int number) {
    int ends[2];
    if (number < 0 || pipe(ends) != 0) return -1;
    fcntl(ends[0], F_SETFL, O_NONBLOCK);
    if (dup2(ends[0], number) < 0) return -1;
    close(ends[0]);
    if (write(ends[1], "app-bytes", 9) != 9) return -1;
    return ends[1];
}

int cfs_bytes_waiting(int number) {
    char back[16];
    ssize_t n = read(number, back, sizeof back);
    return n < 0 ? 0 : (int)n;
}
