// Loads libunwind with dlopen(RTLD_NOW | RTLD_LOCAL) instead of linking it: linking -lunwind
// rebinds _Unwind_RaiseException and friends for the whole process (libstdc++, Foundation, ICU).
// The `unw_*` names are macros for `_UL<arch>_*`, so the symbols are looked up by those names.
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <ucontext.h>
#include <time.h>
#include <unistd.h>

#include "CCrashCapture.h"
#include "../CrashTime/ccr_crashtime.h"
#include "ccr_setup.h"
#include "ccr_state.h"

#if defined(__x86_64__)
#define CCR_UNW_SYMBOL(name) "_ULx86_64_" name
#define CCR_JUMP_SLOT R_X86_64_JUMP_SLOT
#define CCR_GLOB_DAT R_X86_64_GLOB_DAT
#elif defined(__aarch64__)
#define CCR_UNW_SYMBOL(name) "_ULaarch64_" name
#define CCR_JUMP_SLOT R_AARCH64_JUMP_SLOT
#define CCR_GLOB_DAT R_AARCH64_GLOB_DAT
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

/// A dynamic-section address: glibc rewrites most of them to run-time addresses at load, but not
/// on every architecture; a value below the object's bias is still file-relative.
static uintptr_t dynamic_address(uintptr_t bias, ElfW(Addr) value) {
    return value < bias ? bias + value : value;
}

struct relro_search {
    const struct link_map *map;
    int found;
    uintptr_t relro_start, relro_end;
};

static int find_relro(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    struct relro_search *search = data;
    const char *name = search->map->l_name != NULL ? search->map->l_name : "";
    if (info->dlpi_addr != search->map->l_addr || strcmp(info->dlpi_name != NULL ? info->dlpi_name : "", name) != 0) return 0;
    search->found = 1;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        if (info->dlpi_phdr[i].p_type == PT_GNU_RELRO) {
            search->relro_start = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
            search->relro_end = search->relro_start + info->dlpi_phdr[i].p_memsz;
        }
    }
    return 1;
}

/// libunwind's own slots (PLT entries) for libc functions that a walk in a handler of ours answers
/// itself: sigprocmask (Decision 0042), and mincore, read and syscall or write, its memory check of
/// a page (Decision 0056). `slot` is set when it was pointed at `ours`, to give libc's back if this code
/// is unloaded first.
struct redirect {
    const char *name;
    void *libc;
    void *ours;
    void **slot;
};

static struct redirect redirects[] = {
    {"sigprocmask", NULL, (void *)ccr_unwind_sigprocmask, NULL},
    {"mincore", NULL, (void *)ccr_unwind_mincore, NULL},
    {"read", NULL, (void *)ccr_unwind_read, NULL},
    {"syscall", NULL, (void *)ccr_unwind_syscall, NULL},
    {"write", NULL, (void *)ccr_unwind_write, NULL},
    {"dl_iterate_phdr", NULL, (void *)ccr_unwind_dl_iterate_phdr, NULL},
};
enum { REDIRECT_COUNT = sizeof redirects / sizeof redirects[0] };

static void fill_libc_functions(void) {
    int (*libc_sigprocmask)(int, const sigset_t *, sigset_t *) = sigprocmask;
    int (*libc_mincore)(void *, size_t, unsigned char *) = mincore;
    ssize_t (*libc_read)(int, void *, size_t) = read;
    long (*libc_syscall)(long, ...) = syscall;
    redirects[0].libc = (void *)libc_sigprocmask;
    redirects[1].libc = (void *)libc_mincore;
    redirects[2].libc = (void *)libc_read;
    redirects[3].libc = (void *)libc_syscall;
    ssize_t (*libc_write)(int, const void *, size_t) = write;
    redirects[4].libc = (void *)libc_write;
    int (*libc_dl_iterate_phdr)(int (*)(struct dl_phdr_info *, size_t, void *), void *) = dl_iterate_phdr;
    redirects[5].libc = (void *)libc_dl_iterate_phdr;
}

/// A process that unloads this library (a plugin dlclose'd) while libunwind stays loaded must not
/// keep libunwind's slots pointing at unmapped code: libc's functions go back in.
__attribute__((destructor)) static void restore_redirected_slots(void) {
    for (int i = 0; i < REDIRECT_COUNT; i++) {
        if (redirects[i].slot != NULL && *redirects[i].slot == redirects[i].ours) {
            __atomic_store_n(redirects[i].slot, redirects[i].libc, __ATOMIC_RELEASE);
        }
    }
}

/// Points libunwind's own slots for the functions in `redirects` (its PLT entries'; a GOT entry,
/// with -fno-plt, lies in the read-only range and is refused) at ours. Only a slot that holds
/// libc's function and lies outside the object's read-only-after-relocation range is changed;
/// otherwise that function is left as it is. Returns a bit for each slot pointed at ours (bit i:
/// redirects[i]).
/// Returns the slots pointed at ours (bit k for redirects[k]); `*imported`: those libunwind has.
static unsigned redirect_slots(void *handle, unsigned *imported) {
    *imported = 0;
    struct link_map *map = NULL;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || map == NULL || map->l_ld == NULL) return 0;
    uintptr_t bias = (uintptr_t)map->l_addr;
    const ElfW(Sym) *symbols = NULL;
    const char *names = NULL;
    const ElfW(Rela) *tables[2] = {NULL, NULL};
    size_t sizes[2] = {0, 0};
    int plt_is_rela = 0;
    for (const ElfW(Dyn) *d = map->l_ld; d->d_tag != DT_NULL; d++) {
        switch (d->d_tag) {
        case DT_SYMTAB: symbols = (const ElfW(Sym) *)dynamic_address(bias, d->d_un.d_ptr); break;
        case DT_STRTAB: names = (const char *)dynamic_address(bias, d->d_un.d_ptr); break;
        case DT_JMPREL: tables[0] = (const ElfW(Rela) *)dynamic_address(bias, d->d_un.d_ptr); break;
        case DT_PLTRELSZ: sizes[0] = d->d_un.d_val; break;
        case DT_PLTREL: plt_is_rela = d->d_un.d_val == DT_RELA; break;
        case DT_RELA: tables[1] = (const ElfW(Rela) *)dynamic_address(bias, d->d_un.d_ptr); break;
        case DT_RELASZ: sizes[1] = d->d_un.d_val; break;
        default: break;
        }
    }
    if (symbols == NULL || names == NULL) return 0;
    if (!plt_is_rela) tables[0] = NULL;
    // The range the loader makes read-only after relocation (PT_GNU_RELRO): not written to. The
    // object's program headers as the loader gives them (its link_map's bias and name).
    struct relro_search search = {.map = map};
    dl_iterate_phdr(find_relro, &search);
    if (!search.found) return 0;
    uintptr_t relro_start = search.relro_start, relro_end = search.relro_end;
    fill_libc_functions();
    unsigned done = 0, seen = 0;
    for (int t = 0; t < 2; t++) {
        if (tables[t] == NULL) continue;
        size_t count = sizes[t] / sizeof(ElfW(Rela));
        for (size_t i = 0; i < count; i++) {
            const ElfW(Rela) *r = &tables[t][i];
            unsigned long type = ELF64_R_TYPE(r->r_info);
            if (type != CCR_JUMP_SLOT && type != CCR_GLOB_DAT) continue;
            const ElfW(Sym) *symbol = &symbols[ELF64_R_SYM(r->r_info)];
            for (int k = 0; k < REDIRECT_COUNT; k++) {
                if (seen & (1u << k) || strcmp(names + symbol->st_name, redirects[k].name) != 0) continue;
                // test: libunwind's look-ups go to the loader, as before Decision 0059
                if (ccr_global.test_misbehaviour == 18 && redirects[k].ours == (void *)ccr_unwind_dl_iterate_phdr) break;
                seen |= 1u << k;   // the first slot of that name decides
                void **slot = (void **)(bias + r->r_offset);
                if ((uintptr_t)slot >= relro_start && (uintptr_t)slot < relro_end) break;
                if (*slot == redirects[k].ours) {   // already (a second load)
                    done |= 1u << k;
                    break;
                }
                if (*slot != redirects[k].libc) break;   // someone else's: leave it
                redirects[k].slot = slot;
                __atomic_store_n(slot, redirects[k].ours, __ATOMIC_RELEASE);
                done |= 1u << k;
                break;
            }
        }
    }
    *imported = seen;
    return done;
}

/// dlopen, dlsym, first use (the pipe found as described below), then READY. `reserved`: two
/// descriptors held since install for libunwind's pipe, or NULL to find the lowest free ones now.
static int load(int reserved[2], char *error, size_t capacity) {
    if (ccr_global.test_misbehaviour == 9) {   // test: a host without libunwind
        snprintf(error, capacity, "cannot load libunwind.so.8 (install libunwind8): test: treated as missing");
        return -1;
    }
    void *handle = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        snprintf(error, capacity, "cannot load libunwind.so.8 (install libunwind8): %s", dlerror());
        return -1;
    }
    ccr_libunwind *u = &ccr_global.unwind;
    u->handle = handle;
    u->init_local2 = (int (*)(void *, void *, int))dlsym(handle, CCR_UNW_SYMBOL("init_local2"));
    u->step = (int (*)(void *))dlsym(handle, CCR_UNW_SYMBOL("step"));
    u->get_reg = (int (*)(void *, int, uintptr_t *))dlsym(handle, CCR_UNW_SYMBOL("get_reg"));
    if (!u->init_local2 || !u->step || !u->get_reg) {
        snprintf(error, capacity, "libunwind.so.8 lacks %s (libunwind 1.6 or newer is needed)",
                 CCR_UNW_SYMBOL("init_local2"));
        dlclose(handle);
        u->handle = NULL;
        u->init_local2 = NULL;
        u->step = NULL;
        u->get_reg = NULL;
        return -1;
    }
    u->pipe_fd[0] = u->pipe_fd[1] = -1;
    unsigned imported = 0;
    unsigned redirected = redirect_slots(handle, &imported);
    u->masks_redirected = redirected & 1u;
    // mincore and read, and the write of the page's byte: syscall(SYS_write) on x86_64, write() on aarch64
    u->checks_redirected = (redirected & 6u) == 6u && (redirected & 24u) != 0;
    // Every slot libunwind could write into its pipe through is ours (syscall and write, where it
    // has them): its pipe can then be kept from the kernel in the crashing walk (Decision 0064).
    u->pipe_calls_redirected = u->checks_redirected && (redirected & 4u) && (imported & 24u) != 0 &&
                               (redirected & (imported & 24u)) == (imported & 24u);
    // libunwind's first use opens a pipe (pipe2, O_NONBLOCK) that every step from a signal frame
    // reads one byte from and writes one byte of the checked memory to (src/x86_64/Ginit.c,
    // write_validate); when the read fails it closes both numbers and opens a new pipe. A process
    // that closed that pipe and opened files under its numbers (a forked child closing every
    // descriptor) would have libunwind read from, close and write memory into those files. The
    // pipe takes the two lowest free descriptors: they are found before the first use (or were
    // held since install, for a deferred load, and are let go just before it) and checked to be
    // one non-blocking pipe after it (another thread opening a file meanwhile, or a libunwind
    // already used, leaves them unknown: libunwind is then used as before).
    int probe[2];
    if (reserved != NULL && reserved[0] >= 0 && reserved[1] >= 0) {
        probe[0] = reserved[0];
        probe[1] = reserved[1];
    } else {
        probe[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
        probe[1] = open("/dev/null", O_RDONLY | O_CLOEXEC);
    }
    for (int i = 0; i < 2; i++) if (probe[i] >= 0) close(probe[i]);
    if (reserved != NULL) reserved[0] = reserved[1] = -1;
    prewarm();
    struct stat ends[2];
    if (probe[0] >= 0 && probe[1] >= 0 && fstat(probe[0], &ends[0]) == 0 && fstat(probe[1], &ends[1]) == 0 &&
        S_ISFIFO(ends[0].st_mode) && ends[0].st_dev == ends[1].st_dev && ends[0].st_ino == ends[1].st_ino &&
        (fcntl(probe[0], F_GETFL) & O_NONBLOCK) && (fcntl(probe[1], F_GETFL) & O_NONBLOCK)) {
        u->pipe_fd[0] = probe[0];
        u->pipe_fd[1] = probe[1];
        u->pipe_dev = ends[0].st_dev;
        u->pipe_ino = ends[0].st_ino;
    }
    return 0;
}

int ccr_libunwind_load(char *error, size_t capacity) {
    ccr_global.unwind.reserved_fd[0] = ccr_global.unwind.reserved_fd[1] = -1;
    if (load(NULL, error, capacity) != 0) return -1;
    atomic_store_explicit(&ccr_global.unwind.state, CCR_UNWIND_READY, memory_order_release);
    return 0;
}

void ccr_libunwind_defer(void) {
    ccr_libunwind *u = &ccr_global.unwind;
    u->reserved_fd[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
    u->reserved_fd[1] = open("/dev/null", O_RDONLY | O_CLOEXEC);
    u->pipe_fd[0] = u->pipe_fd[1] = -1;
    atomic_store_explicit(&u->state, CCR_UNWIND_PENDING, memory_order_release);
}

int ccr_libunwind_wait_deferred(int max_ms) {
    for (int waited = 0; waited < max_ms && atomic_load(&ccr_global.unwind.state) == CCR_UNWIND_PENDING; waited++) {
        struct timespec pause = {.tv_sec = 0, .tv_nsec = 1000000};
        nanosleep(&pause, NULL);
    }
    return atomic_load_explicit(&ccr_global.unwind.state, memory_order_acquire) == CCR_UNWIND_READY;
}

int ccr_libunwind_load_deferred(char *error, size_t capacity) {
    int loaded = ccr_libunwind_load_deferred_unpublished(error, capacity);
    ccr_libunwind_publish_deferred(loaded);
    return loaded;
}

void ccr_libunwind_publish_deferred(int loaded) {
    int pending = CCR_UNWIND_PENDING;
    atomic_compare_exchange_strong_explicit(&ccr_global.unwind.state, &pending, loaded == 0 ? CCR_UNWIND_READY : CCR_UNWIND_FAILED,
                                            memory_order_release, memory_order_relaxed);
}

int ccr_libunwind_load_deferred_unpublished(char *error, size_t capacity) {
    ccr_libunwind *u = &ccr_global.unwind;
    if (atomic_load(&u->state) != CCR_UNWIND_PENDING) {
        snprintf(error, capacity, "libunwind: no deferred load is pending");
        return -1;
    }
    int loaded = load(u->reserved_fd, error, capacity);
    if (loaded != 0) {
        for (int i = 0; i < 2; i++) {
            if (u->reserved_fd[i] >= 0) close(u->reserved_fd[i]);
            u->reserved_fd[i] = -1;
        }
    }
    // The module table, deferred with the load: made now, so that it lists libunwind too and the
    // crash-time walk finds the loader's list unchanged.
    ccr_modules_record();
    return loaded;
}

void ccr_libunwind_unload(void) {
    ccr_libunwind *u = &ccr_global.unwind;
    atomic_store(&u->state, CCR_UNWIND_ABSENT);
    // Its slots: libc's functions back, and forgotten, since dlclose may unmap them.
    restore_redirected_slots();
    for (int i = 0; i < REDIRECT_COUNT; i++) redirects[i].slot = NULL;
    if (u->handle) dlclose(u->handle);
    for (int i = 0; i < 2; i++) if (u->reserved_fd[i] >= 0) close(u->reserved_fd[i]);
    u->handle = NULL;
    u->init_local2 = NULL;
    u->step = NULL;
    u->get_reg = NULL;
    u->pipe_fd[0] = u->pipe_fd[1] = -1;
    u->reserved_fd[0] = u->reserved_fd[1] = -1;
    u->masks_redirected = u->checks_redirected = u->pipe_calls_redirected = 0;
}

int ccr_test_unwind_masks(int *redirected, int *frames_in_handler, unsigned long *passed_in_handler,
                          int *steps_plain, unsigned long *passed_plain) {
    ccr_libunwind *u = &ccr_global.unwind;
    if (!ccr_libunwind_ready(0)) return -1;
    *redirected = u->masks_redirected;
    // As a handler of ours walks: every signal but the crash signals blocked, its mask calls skipped.
    sigset_t blocked, previous;
    sigfillset(&blocked);
    for (int i = 0; i < CCR_SIGNAL_COUNT; i++) sigdelset(&blocked, ccr_global.signals[i]);
    pthread_sigmask(SIG_SETMASK, &blocked, &previous);
    ucontext_t context;
    uintptr_t frames[CCR_MAX_FRAMES];
    int depth = 0, lower_bound = 0;
    unsigned long before = ccr_unwind_masks_passed();
    *frames_in_handler = getcontext(&context) == 0
        ? ccr_unwind_libunwind(&context, frames, CCR_MAX_FRAMES, &depth, &lower_bound, NULL) : -1;
    *passed_in_handler = ccr_unwind_masks_passed() - before;
    pthread_sigmask(SIG_SETMASK, &previous, NULL);
    // As a non-fatal report walks: libunwind's mask calls go to libc.
    unw_cursor_t cursor;
    *steps_plain = 0;
    before = ccr_unwind_masks_passed();
    if (getcontext(&context) == 0 && u->init_local2(&cursor, &context, 0) >= 0) {
        while (*steps_plain < 256 && u->step(&cursor) > 0) (*steps_plain)++;
    }
    *passed_plain = ccr_unwind_masks_passed() - before;
    return 0;
}
