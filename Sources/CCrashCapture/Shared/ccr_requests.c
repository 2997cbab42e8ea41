// Begin and end of a request in the crash-readable table (see ccr_requests.h).
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "CCrashCapture.h"
#include "ccr_copy.h"
#include "ccr_requests.h"
#include "ccr_state.h"
#include "../CrashTime/ccr_crashtime.h"

ccr_request_table ccr_requests;

/// This thread's id, read once: gettid(2) is a system call (~200 ns here), paid on every request
/// otherwise. A forked child's one thread forgets its parent thread's id (pthread_atfork,
/// registered by the first call).
static __thread int32_t thread_tid __attribute__((tls_model("initial-exec")));
static pthread_once_t fork_hook_once = PTHREAD_ONCE_INIT;
static void forget_tid_in_child(void) { thread_tid = 0; }
static void add_fork_hook(void) { pthread_atfork(NULL, NULL, forget_tid_in_child); }

static int32_t current_tid(void) {
    int32_t tid = thread_tid;
    if (__builtin_expect(tid == 0, 0)) {
        pthread_once(&fork_hook_once, add_fork_hook);
        thread_tid = tid = (int32_t)syscall(SYS_gettid);
    }
    return tid;
}

/// Where this thread's next claim starts looking, plus one (0: not chosen yet): the slot it freed
/// last, else the one after its last claim. A thread then keeps reusing a few slots whose cache
/// lines no other core writes; a table-wide counter was one line every event loop wrote on every
/// request, and the slot it pointed to had last been written by another core (tools/profile-middleware,
/// perf annotate: ~80 % of ccr_request_begin's time, on that counter and that slot's state). A
/// thread's first claim takes a start from the table's counter, 16 slots from the previous thread's.
static __thread uint32_t thread_hint __attribute__((tls_model("initial-exec")));

/// Copies up to `capacity` bytes of a field, the short ones without a call.
static inline __attribute__((always_inline)) uint8_t copy_field(char *destination, size_t capacity, const char *source,
                                                                size_t length) {
    if (source == NULL) return 0;
    if (length > capacity) length = capacity;
    ccr_copy_short(destination, source, length);
    return (uint8_t)length;
}

uint64_t ccr_request_clock_ns(void) {
    return ccr_now_ns(CLOCK_MONOTONIC);   // the clock a crash reads the requests' ages on (ccr_record.c)
}

int ccr_request_begin(const char *method, size_t method_length, const char *route, size_t route_length,
                      const char *request_id, size_t request_id_length, const char *trace_id, size_t trace_id_length,
                      uint64_t started_ns) {
    if (__builtin_expect(!atomic_load_explicit(&ccr_global.requests_begun, memory_order_relaxed), 0)) {
        atomic_store_explicit(&ccr_global.requests_begun, 1, memory_order_release);
    }
    uint32_t start = thread_hint;
    if (__builtin_expect(start == 0, 0)) {
        start = atomic_fetch_add_explicit(&ccr_requests.next_hint, 16, memory_order_relaxed) % CCR_REQUEST_SLOTS + 1;
    }
    start -= 1;
    for (uint32_t probe = 0; probe < CCR_REQUEST_SLOTS; probe++) {
        uint32_t index = (start + probe) % CCR_REQUEST_SLOTS;
        ccr_request_slot *slot = &ccr_requests.slots[index];
        uint32_t expected = CCR_REQUEST_FREE;
        if (atomic_load_explicit(&slot->state, memory_order_relaxed) != CCR_REQUEST_FREE ||
            !atomic_compare_exchange_strong_explicit(&slot->state, &expected, CCR_REQUEST_WRITING,
                                                     memory_order_acquire, memory_order_relaxed)) {
            continue;
        }
        atomic_fetch_add_explicit(&slot->generation, 1, memory_order_release);
        slot->started_ns = started_ns;
        slot->tid = current_tid();
        slot->method_length = copy_field(slot->method, sizeof slot->method, method, method_length);
        slot->route_length = copy_field(slot->route, sizeof slot->route, route, route_length);
        slot->request_id_length = copy_field(slot->request_id, sizeof slot->request_id, request_id, request_id_length);
        slot->trace_id_length = copy_field(slot->trace_id, sizeof slot->trace_id, trace_id, trace_id_length);
        atomic_store_explicit(&slot->state, CCR_REQUEST_LIVE, memory_order_release);
        thread_hint = (index + 1) % CCR_REQUEST_SLOTS + 1;
        return (int)index + 1;
    }
    atomic_fetch_add_explicit(&ccr_requests.dropped, 1, memory_order_relaxed);
    return 0;
}

void ccr_request_end(int token) {
    if (token < 1 || token > CCR_REQUEST_SLOTS) return;
    atomic_store_explicit(&ccr_requests.slots[token - 1].state, CCR_REQUEST_FREE, memory_order_release);
    thread_hint = (uint32_t)token;   // this slot first, next time
}

int ccr_requests_in_flight(void) {
    int count = 0;
    for (int i = 0; i < CCR_REQUEST_SLOTS; i++) {
        if (atomic_load_explicit(&ccr_requests.slots[i].state, memory_order_acquire) == CCR_REQUEST_LIVE) count++;
    }
    return count;
}
