// Loads libunwind with dlopen(RTLD_NOW | RTLD_LOCAL) instead of linking it: linking -lunwind
// rebinds _Unwind_RaiseException and friends for the whole process (libstdc++, Foundation, ICU).
// The `unw_*` names are macros for `_UL<arch>_*`, so the symbols are looked up by those names.
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <ucontext.h>

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
    ccr_global.unwind = u;
    prewarm();
    return 0;
}

void ccr_libunwind_unload(void) {
    if (ccr_global.unwind.handle) dlclose(ccr_global.unwind.handle);
    memset(&ccr_global.unwind, 0, sizeof ccr_global.unwind);
}
