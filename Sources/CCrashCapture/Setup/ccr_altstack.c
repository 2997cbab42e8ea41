// Alternate signal stacks for every thread. sigaltstack is per thread: without one, a stack
// overflow on a background thread or Task cannot run the handler and the crash is lost. Threads
// created after install get one through the pthread_create wrapper below; the installing thread
// gets one directly. Each stack is mmap'd with a guard page and released at thread exit.
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "CCrashCapture.h"
#include "ccr_setup.h"

static atomic_int altstacks_enabled;
static pthread_key_t altstack_key;
static int altstack_key_created;

static size_t page_size(void) {
    long size = sysconf(_SC_PAGESIZE);
    return size > 0 ? (size_t)size : 4096;
}

/// Room for the handler, libunwind's cursor and DWARF parsing, and a chained handler.
static size_t altstack_size(void) {
    size_t size = 64 * 1024;
    long minimum = sysconf(_SC_MINSIGSTKSZ);
    if (minimum > 0 && (size_t)minimum * 4 > size) size = (size_t)minimum * 4;
    return size;
}

static void release_altstack(void *mapping) {
    stack_t current;
    if (sigaltstack(NULL, &current) == 0 && current.ss_sp == (char *)mapping + page_size()) {
        stack_t disable = {.ss_flags = SS_DISABLE};
        sigaltstack(&disable, NULL);
    }
    munmap(mapping, altstack_size() + page_size());
}

int ccr_ensure_alternate_signal_stack(void) {
    stack_t current;
    if (sigaltstack(NULL, &current) == 0 && !(current.ss_flags & SS_DISABLE) && current.ss_size >= altstack_size()) {
        return 0;   // the thread already has one that is large enough
    }
    size_t guard = page_size();
    size_t size = altstack_size();
    char *mapping = mmap(NULL, size + guard, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (mapping == MAP_FAILED) return -1;
    mprotect(mapping, guard, PROT_NONE);   // an overflow of the signal stack faults instead of corrupting memory
    stack_t stack = {.ss_sp = mapping + guard, .ss_size = size, .ss_flags = 0};
    if (sigaltstack(&stack, NULL) != 0) {
        munmap(mapping, size + guard);
        return -1;
    }
    if (altstack_key_created) pthread_setspecific(altstack_key, mapping);
    return 0;
}

int ccr_altstacks_enable(char *error, size_t capacity) {
    if (!altstack_key_created) {
        if (pthread_key_create(&altstack_key, release_altstack) != 0) {
            snprintf(error, capacity, "pthread_key_create failed");
            return -1;
        }
        altstack_key_created = 1;
    }
    if (ccr_ensure_alternate_signal_stack() != 0) {
        snprintf(error, capacity, "cannot set an alternate signal stack: %s", strerror(errno));
        return -1;
    }
    atomic_store(&altstacks_enabled, 1);
    return 0;
}

void ccr_altstacks_disable(void) {
    atomic_store(&altstacks_enabled, 0);
}

// MARK: - pthread_create wrapper

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CCR_NO_PTHREAD_WRAPPER 1   // TSan intercepts pthread_create itself; threads get no altstack
#endif
#endif
#ifndef CCR_NO_PTHREAD_WRAPPER

typedef int (*pthread_create_function)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
static _Atomic(pthread_create_function) real_pthread_create;

typedef struct thread_start {
    void *(*routine)(void *);
    void *argument;
} thread_start;

static void *start_with_altstack(void *opaque) {
    thread_start start = *(thread_start *)opaque;
    free(opaque);
    ccr_ensure_alternate_signal_stack();
    ccr_threads_unblock_signal();   // so that it can answer at a crash, whatever its creator blocked
    return start.routine(start.argument);
}

/// Interposes libc's pthread_create for the whole process (the executable's definition wins, and
/// Foundation, Dispatch and the Swift concurrency pool call it through the PLT). Until install it
/// only forwards; afterwards each new thread first maps its own alternate signal stack.
int pthread_create(pthread_t *thread, const pthread_attr_t *attributes, void *(*routine)(void *), void *argument) {
    if (!atomic_load(&altstacks_enabled)) return ccr_pthread_create_unwrapped(thread, attributes, routine, argument);
    thread_start *start = malloc(sizeof *start);
    if (start == NULL) return ccr_pthread_create_unwrapped(thread, attributes, routine, argument);
    start->routine = routine;
    start->argument = argument;
    int result = ccr_pthread_create_unwrapped(thread, attributes, start_with_altstack, start);
    if (result != 0) free(start);
    return result;
}

int ccr_pthread_create_unwrapped(pthread_t *thread, const pthread_attr_t *attributes, void *(*routine)(void *), void *argument) {
    pthread_create_function real = atomic_load(&real_pthread_create);
    if (real == NULL) {
        real = (pthread_create_function)dlsym(RTLD_NEXT, "pthread_create");
        if (real == NULL) return EAGAIN;
        atomic_store(&real_pthread_create, real);
    }
    return real(thread, attributes, routine, argument);
}
#else
int ccr_pthread_create_unwrapped(pthread_t *thread, const pthread_attr_t *attributes, void *(*routine)(void *), void *argument) {
    return pthread_create(thread, attributes, routine, argument);
}
#endif
