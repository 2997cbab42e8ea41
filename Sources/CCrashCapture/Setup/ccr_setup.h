// Install-time helpers. None of these run in the signal handler; all may allocate.
#ifndef CCR_SETUP_H
#define CCR_SETUP_H

#include <stddef.h>
#include <pthread.h>

/// Loads libunwind.so.8 RTLD_LOCAL and resolves its local-only entry points, then unwinds once
/// so its lazy initialisation happens now rather than during a crash. Returns 0 on success.
/// Not async-signal-safe: dlopen.
int ccr_libunwind_load(char *error, size_t capacity);
void ccr_libunwind_unload(void);

/// Calls each libc function the crash-time code uses once, without effect, so that a program
/// linked with lazy binding has bound their PLT slots before a crash (Setup/ccr_bind.c).
void ccr_bind_crash_calls(void);
/// Fills ccr_global.modules from dl_iterate_phdr. Not async-signal-safe: takes the loader lock.
void ccr_modules_record(void);
/// What the crash-time walk of the loader's list needs (r_debug, the main program's headers and
/// path); at install, before any table.
void ccr_modules_prepare_live_walk(void);
/// For an install with defer_libunwind: holds two descriptors for libunwind's pipe and marks the
/// load pending (ccr_libunwind_load_deferred does it).
void ccr_libunwind_defer(void);
/// Waits (at most `max_ms`) for a pending deferred load; 1 when libunwind is ready. Not for
/// signal handlers.
int ccr_libunwind_wait_deferred(int max_ms);

/// Enables or disables alternate stacks for threads created from now on, and gives the calling
/// thread one. Not async-signal-safe: mmap, pthread keys.
int ccr_altstacks_enable(char *error, size_t capacity);
/// libc's pthread_create, past this library's wrapper: the thread keeps its creator's signal mask
/// and gets no alternate stack (the watchdog: it must never be asked to unwind itself).
int ccr_pthread_create_unwrapped(pthread_t *thread, const pthread_attr_t *attributes, void *(*routine)(void *), void *argument);
void ccr_altstacks_disable(void);

/// Chooses the real-time signal for the all-threads capture and installs its handler, with the
/// limits from `options`. Leaves it off (ccr_threads.enabled = 0) if no real-time signal is free.
/// Not async-signal-safe: sigaction at install.
struct ccr_install_options;
void ccr_threads_install(const struct ccr_install_options *options);
/// Unblocks the all-threads signal in the calling thread (install does it for its caller; the
/// pthread_create wrapper for every new thread). Async-signal-safe: pthread_sigmask.
void ccr_threads_unblock_signal(void);

#endif
