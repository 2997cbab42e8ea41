// Install-time helpers. None of these run in the signal handler; all may allocate.
#ifndef CCR_SETUP_H
#define CCR_SETUP_H

#include <stddef.h>

/// Loads libunwind.so.8 RTLD_LOCAL and resolves its local-only entry points, then unwinds once
/// so its lazy initialisation happens now rather than during a crash. Returns 0 on success.
/// Not async-signal-safe: dlopen.
int ccr_libunwind_load(char *error, size_t capacity);
void ccr_libunwind_unload(void);

/// Fills ccr_global.modules from dl_iterate_phdr. Not async-signal-safe: takes the loader lock.
void ccr_modules_record(void);

/// Enables or disables alternate stacks for threads created from now on, and gives the calling
/// thread one. Not async-signal-safe: mmap, pthread keys.
int ccr_altstacks_enable(char *error, size_t capacity);
void ccr_altstacks_disable(void);

#endif
