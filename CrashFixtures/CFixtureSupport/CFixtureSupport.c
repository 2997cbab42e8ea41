// C helpers for the crash fixtures. Each is noinline so it is its own frame in the stack.
#include "CFixtureSupport.h"

#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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
