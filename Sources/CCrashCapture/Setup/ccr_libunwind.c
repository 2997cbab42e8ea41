// Loads libunwind with dlopen(RTLD_NOW | RTLD_LOCAL) instead of linking it: linking -lunwind
// rebinds _Unwind_RaiseException and friends for the whole process (libstdc++, Foundation, ICU).
// The `unw_*` names are macros for `_UL<arch>_*`, so the symbols are looked up by those names.
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <ucontext.h>
#include <unistd.h>

#include "ccr_setup.h"
#include "ccr_state.h"

#if defined(__x86_64__)
#define CCR_UNW_SYMBOL(name) "_ULx86_64_" name
#elif defined(__aarch64__)
#define CCR_UNW_SYMBOL(name) "_ULaarch64_" name
#else
#error "unsupported architecture"
#endif

static void prewarm(void) {
    ucontext_t context;
    unw_cursor_t cursor;
    if (getcontext(&context) != 0) return;
    if (ccr_global.unwind.init_local2(&cursor, &context, 0) < 0) return;
    for (int i = 0; i < 256 && ccr_global.unwind.step(&cursor) > 0; i++) {
    }
}

int ccr_libunwind_load(char *error, size_t capacity) {
    void *handle = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        snprintf(error, capacity, "cannot load libunwind.so.8 (install libunwind8): %s", dlerror());
        return -1;
    }
    ccr_libunwind u = {.handle = handle};
    u.init_local2 = (int (*)(void *, void *, int))dlsym(handle, CCR_UNW_SYMBOL("init_local2"));
    u.step = (int (*)(void *))dlsym(handle, CCR_UNW_SYMBOL("step"));
    u.get_reg = (int (*)(void *, int, uintptr_t *))dlsym(handle, CCR_UNW_SYMBOL("get_reg"));
    if (!u.init_local2 || !u.step || !u.get_reg) {
        snprintf(error, capacity, "libunwind.so.8 lacks %s (libunwind 1.6 or newer is needed)",
                 CCR_UNW_SYMBOL("init_local2"));
        dlclose(handle);
        return -1;
    }
    u.pipe_fd[0] = u.pipe_fd[1] = -1;
    ccr_global.unwind = u;
    // libunwind's first use opens a pipe (pipe2, O_NONBLOCK) that every step from a signal frame
    // reads one byte from and writes one byte of the checked memory to (src/x86_64/Ginit.c,
    // write_validate); when the read fails it closes both numbers and opens a new pipe. A process
    // that closed that pipe and opened files under its numbers (a forked child closing every
    // descriptor) would have libunwind read from, close and write memory into those files. The
    // pipe takes the two lowest free descriptors: they are found before the first use and checked
    // to be one non-blocking pipe after it (another thread opening a file meanwhile, or a
    // libunwind already used, leaves them unknown: libunwind is then used as before).
    int probe[2] = {open("/dev/null", O_RDONLY | O_CLOEXEC), open("/dev/null", O_RDONLY | O_CLOEXEC)};
    for (int i = 0; i < 2; i++) if (probe[i] >= 0) close(probe[i]);
    prewarm();
    struct stat ends[2];
    if (probe[0] >= 0 && probe[1] >= 0 && fstat(probe[0], &ends[0]) == 0 && fstat(probe[1], &ends[1]) == 0 &&
        S_ISFIFO(ends[0].st_mode) && ends[0].st_dev == ends[1].st_dev && ends[0].st_ino == ends[1].st_ino &&
        (fcntl(probe[0], F_GETFL) & O_NONBLOCK) && (fcntl(probe[1], F_GETFL) & O_NONBLOCK)) {
        ccr_global.unwind.pipe_fd[0] = probe[0];
        ccr_global.unwind.pipe_fd[1] = probe[1];
        ccr_global.unwind.pipe_dev = ends[0].st_dev;
        ccr_global.unwind.pipe_ino = ends[0].st_ino;
    }
    return 0;
}

void ccr_libunwind_unload(void) {
    if (ccr_global.unwind.handle) dlclose(ccr_global.unwind.handle);
    memset(&ccr_global.unwind, 0, sizeof ccr_global.unwind);
}
