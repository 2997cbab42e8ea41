// Writers of the session file (app threads) and its reader for the next launch.
// Breadcrumbs: lock-free rings with a sequence number per slot. The first threads to log each take
// a ring of their own and append with plain stores; the others share ring 0 (one fetch_add per
// append). Readers merge the rings by each breadcrumb's order (Decision 0058), not by timestamp.
// Keys and user id: writers serialise on a mutex (never taken at crash time); each slot still
// carries a sequence number so a reader of a dead process's file skips a half-written slot.
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <dlfcn.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "CCrashCapture.h"
#include "ccr_copy.h"
#include "ccr_session.h"
#include "ccr_state.h"
#include "../CrashTime/ccr_writer.h"

ccr_session_file *ccr_session;
static int session_fd = -1;
static char session_path[1024];
static pthread_mutex_t keys_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t key_order;

/// The ring this thread appends to: NULL until its first breadcrumb. Initial-exec TLS: a load
/// relative to %fs, no __tls_get_addr call.
static __thread ccr_breadcrumb_ring *thread_ring __attribute__((tls_model("initial-exec")));
/// Set while this thread chooses its ring (its first breadcrumb): a signal handler's breadcrumb
/// then goes to ring 0 instead of claiming a second ring for the same thread.
static __thread volatile sig_atomic_t thread_choosing __attribute__((tls_model("initial-exec")));
static pthread_key_t ring_key;
static pthread_once_t ring_key_once = PTHREAD_ONCE_INIT;
static void make_ring_key(void);

static size_t min_size(size_t a, size_t b) { return a < b ? a : b; }

/// The coarse clock, called in the vDSO directly: glibc's clock_gettime adds ~3 ns to the vDSO's
/// ~7 (measured here, 20 M calls each). Resolved by ccr_session_open, checked against
/// clock_gettime once; clock_gettime itself when there is no vDSO.
typedef int (*clock_function)(clockid_t, struct timespec *);
static _Atomic(clock_function) coarse_clock = clock_gettime;   // relaxed: set once, read by loggers

static void resolve_coarse_clock(void) {
    void *vdso = dlopen("linux-vdso.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (vdso == NULL) return;
    clock_function candidate = (clock_function)dlsym(vdso, "__vdso_clock_gettime");
    struct timespec ours, theirs;
    if (candidate && candidate(CLOCK_REALTIME_COARSE, &ours) == 0 && clock_gettime(CLOCK_REALTIME_COARSE, &theirs) == 0
        && ours.tv_sec >= theirs.tv_sec - 1 && ours.tv_sec <= theirs.tv_sec + 1) {
        atomic_store_explicit(&coarse_clock, candidate, memory_order_relaxed);
    }
    // The vDSO stays mapped for the life of the process; the handle needs no dlclose.
}

static void check_request_clock(void);

#if defined(__x86_64__)
/// Whether this processor has PREFETCHW (CPUID 0x80000001 ECX bit 8: PRFCHW on Intel, from
/// Broadwell on; 3DNowPrefetch on AMD). Set at session open; publish (Decision 0062) prefetches
/// for reading without it rather than rely on older processors running the opcode as a NOP.
static _Atomic int has_prefetchw;   // relaxed: set once, before the session is published

static void check_prefetchw(void) {
    unsigned int eax, ebx, ecx, edx;
    int has = __get_cpuid(0x80000001u, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 8)) != 0;
    atomic_store_explicit(&has_prefetchw, has, memory_order_relaxed);
}
#endif

int ccr_session_open(const char *path, const char *session_id, const char *app_id, const char *app_version,
                     char *error, size_t capacity) {
    if (ccr_session) {
        snprintf(error, capacity, "a session is already open");
        return -1;
    }
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(error, capacity, "cannot create the session file %s: %s", path, strerror(errno));
        return -1;
    }
    flock(fd, LOCK_EX | LOCK_NB);   // held for the life of the process: "this session is alive"
    // Sparse: pages cost disk and memory only once written.
    if (ftruncate(fd, (off_t)sizeof(ccr_session_file)) != 0) {
        snprintf(error, capacity, "cannot size the session file %s: %s", path, strerror(errno));
        close(fd);
        unlink(path);
        return -1;
    }
    // The header page goes in with pwrite before mapping: on ext4 the first store into a mapped
    // hole costs ~150-200 µs (measured), a store into a page already in the cache ~2 µs.
    _Alignas(64) static char first_page[4096];
    memset(first_page, 0, sizeof first_page);
    ccr_session_file *h = (ccr_session_file *)(void *)first_page;   // header fields only: all below 4096
    _Static_assert(offsetof(ccr_session_file, keys) <= 4096, "session header must fit the first page");
    h->magic = CCR_SESSION_MAGIC;
    h->version = CCR_SESSION_VERSION;
    h->size = sizeof(ccr_session_file);
    h->breadcrumb_capacity = CCR_BREADCRUMB_CAPACITY;
    h->breadcrumb_rings = CCR_BREADCRUMB_RINGS;
    h->pid = getpid();
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    h->started_ns = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
    strncpy(h->session_id, session_id, sizeof h->session_id - 1);
    strncpy(h->app_id, app_id, sizeof h->app_id - 1);
    strncpy(h->app_version, app_version, sizeof h->app_version - 1);
    atomic_store(&h->state, CCR_SESSION_RUNNING);
    void *mapping = MAP_FAILED;
    if (pwrite(fd, first_page, sizeof first_page, 0) == (ssize_t)sizeof first_page) {
        mapping = mmap(NULL, sizeof(ccr_session_file), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    }
    if (mapping == MAP_FAILED) {
        snprintf(error, capacity, "cannot write or map the session file %s: %s", path, strerror(errno));
        close(fd);
        unlink(path);
        return -1;
    }
    // No read-ahead: the first store into a hole of the mapping made the kernel fill the whole
    // ~5 MB file's holes into the page cache, ~2.3 ms on the first breadcrumb's thread (a server's
    // first request: tools/bench-start's profile). Each page now comes in when it is written
    // (~15 µs the first, a few µs each after), and the file costs memory as it fills.
    madvise(mapping, sizeof(ccr_session_file), MADV_RANDOM);
    ccr_session_file *s = mapping;
    // The thread-exit and fork hooks of the breadcrumb rings exist before any thread logs (a
    // fork before the first breadcrumb must find them too).
    pthread_once(&ring_key_once, make_ring_key);
    resolve_coarse_clock();
    check_request_clock();
#if defined(__x86_64__)
    check_prefetchw();
#endif
    strncpy(session_path, path, sizeof session_path - 1);
    session_fd = fd;
    ccr_session = s;
    return 0;
}

void ccr_session_sync(void) {
    if (session_fd >= 0) fsync(session_fd);
}

// Held while a sidecar (<session>.custom.json, .memory) is created or renamed, and while a clean
// end removes them: a sidecar is then either made before the end (and removed by it) or not made
// at all. Without it a sidecar written on another thread during exit() outlived the session (a
// clean exit left `.memory` or `.memory.tmp` behind, seen with both cores busy). Never taken at
// crash time.
static pthread_mutex_t sidecar_lock = PTHREAD_MUTEX_INITIALIZER;

int ccr_session_sidecar_begin(void) {
    pthread_mutex_lock(&sidecar_lock);
    ccr_session_file *s = ccr_session;
    if (s != NULL && s->pid == getpid() && atomic_load(&s->state) == CCR_SESSION_RUNNING) return 1;
    pthread_mutex_unlock(&sidecar_lock);
    return 0;
}

void ccr_session_sidecar_end(void) {
    pthread_mutex_unlock(&sidecar_lock);
}

void ccr_session_end(void) {
    ccr_session_file *s = ccr_session;
    if (s == NULL || s->pid != getpid()) return;   // not in a forked child
    pthread_mutex_lock(&sidecar_lock);
    uint32_t running = CCR_SESSION_RUNNING;
    // A crash in progress (another thread's handler) marks the session crashed only once its
    // record is durable (ccr_record_finish): until then the session is its context, not ended.
    if (atomic_load(&ccr_global.crashing_tid) == 0 &&
        atomic_compare_exchange_strong(&s->state, &running, CCR_SESSION_ENDED)) {
        unlink(session_path);   // a clean end leaves nothing to report
        static const char *const sidecars[] = { ".custom.json", ".custom.json.tmp", ".memory", ".memory.tmp" };
        for (size_t i = 0; i < sizeof sidecars / sizeof sidecars[0]; i++) {
            char path[sizeof session_path + 24];
            snprintf(path, sizeof path, "%s%s", session_path, sidecars[i]);
            unlink(path);
        }
    }
    pthread_mutex_unlock(&sidecar_lock);
}

// MARK: - Breadcrumbs


/// At thread exit (on the exiting thread): the ring goes back to the pool, its breadcrumbs stay
/// (a later owner continues its sequence). A breadcrumb logged later on this thread (another
/// key's destructor) goes to ring 0, not to a ring that may have a new owner already.
static void release_ring(void *ring) {
    ccr_session_file *s = ccr_session;
    if (s) thread_ring = &s->rings[0];
    atomic_store_explicit(&((ccr_breadcrumb_ring *)ring)->owner, 0, memory_order_release);
}

/// In a forked child: its one thread must neither keep writing the parent's ring of its own nor
/// give it back at its exit.
static void forget_ring_in_child(void) {
    ccr_session_file *s = ccr_session;
    thread_ring = s ? &s->rings[0] : NULL;
    pthread_setspecific(ring_key, NULL);
}

static void make_ring_key(void) {
    pthread_key_create(&ring_key, release_ring);
    pthread_atfork(NULL, NULL, forget_ring_in_child);
}

/// First breadcrumb of a thread: a free ring of its own, else the shared ring 0 (always in a
/// forked child, whose mapping is its parent's).
__attribute__((noinline, cold)) static ccr_breadcrumb_ring *choose_ring(ccr_session_file *s) {
    pthread_once(&ring_key_once, make_ring_key);   // done by ccr_session_open already
    if (getpid() != s->pid) return &s->rings[0];
    uint32_t tid = (uint32_t)syscall(SYS_gettid);
    for (int i = 1; i < CCR_BREADCRUMB_RINGS; i++) {
        uint32_t free_owner = 0;
        if (atomic_compare_exchange_strong(&s->rings[i].owner, &free_owner, tid)) {
            if (pthread_setspecific(ring_key, &s->rings[i]) != 0) {
                atomic_store_explicit(&s->rings[i].owner, 0, memory_order_release);   // no destructor to give it back: share
                break;
            }
            return &s->rings[i];
        }
    }
    return &s->rings[0];
}

/// A slot's fields other than its message's and metadata's; returns where the message goes.
static inline __attribute__((always_inline)) char *fill_head(ccr_breadcrumb_slot *slot, uint8_t level, uint8_t kind,
                                                              const char *tag, size_t tag_length) {
    // The coarse clock: ~7 ns instead of ~40 ns here, at the resolution of the kernel tick (4 ms
    // on Debian's kernels). It is the time shown; the order is `order`'s.
    struct timespec now;
    atomic_load_explicit(&coarse_clock, memory_order_relaxed)(CLOCK_REALTIME_COARSE, &now);
    slot->timestamp_ns = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
    slot->level = level;
    slot->kind = kind;
    tag_length = min_size(tag_length, CCR_BREADCRUMB_TAG_MAX);
    ccr_copy_short(slot->text, tag, tag_length);
    slot->tag_length = (uint16_t)tag_length;
    return slot->text + tag_length;
}

static inline __attribute__((always_inline)) void fill_slot(ccr_breadcrumb_slot *slot, uint8_t level, uint8_t kind, const char *tag, size_t tag_length,
                      const char *message, size_t message_length, const char *metadata, size_t metadata_length) {
    char *text = fill_head(slot, level, kind, tag, tag_length);
    message_length = min_size(message_length, CCR_BREADCRUMB_TEXT_MAX);
    ccr_copy_short(text, message, message_length);
    slot->message_length = (uint16_t)message_length;
    metadata_length = metadata_length <= CCR_BREADCRUMB_TEXT_MAX - message_length ? metadata_length : 0;
    if (metadata_length) memcpy(text + message_length, metadata, metadata_length);
    slot->metadata_length = (uint16_t)metadata_length;
}

/// Takes the next index of a ring only this thread writes. One instruction, so a signal handler
/// that logs on this thread in the middle of an append takes the index after it and never shares
/// its slot; not a locked instruction, because no other thread writes this counter (a lock xadd
/// costs ~10 ns here). Elsewhere than x86-64, an atomic add (LSE's ldadd on arm64).
static inline uint64_t claim_own_index(_Atomic uint64_t *next) {
#if defined(__x86_64__)
    uint64_t n = 1;
    __asm__ volatile("xaddq %0, %1" : "+r"(n), "+m"(*(volatile uint64_t *)next) : : "memory");
    return n;
#else
    return atomic_fetch_add_explicit(next, 1, memory_order_relaxed);
#endif
}

/// CLOCK_MONOTONIC in nanoseconds, through the vDSO as the coarse clock is: the clock
/// ccr_request_clock_ns reads, so a request's start taken here is its start in the table too.
static inline uint64_t monotonic_ns(void) {
    struct timespec now;
    if (atomic_load_explicit(&coarse_clock, memory_order_relaxed)(CLOCK_MONOTONIC, &now) != 0) return 0;
    return (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
}

/// Whether request breadcrumbs may be ordered by their clock reads (Decision 0058): set at
/// session open when 64 reads of CLOCK_MONOTONIC in a row all differ. A clock whose step is
/// longer than one read (Hyper-V's 100 ns reference page, an arm64 timer at 24 MHz, acpi_pm)
/// could give two request breadcrumbs on either side of a handoff the same value; there, request
/// breadcrumbs take the counter's add as every other append does.
static _Atomic int clock_orders_requests;

static void check_request_clock(void) {
    uint64_t previous = monotonic_ns();
    for (int i = 0; i < 64; i++) {
        uint64_t now = monotonic_ns();
        if (now <= previous) {
            atomic_store_explicit(&clock_orders_requests, 0, memory_order_relaxed);
            return;
        }
        previous = now;
    }
    atomic_store_explicit(&clock_orders_requests, 1, memory_order_relaxed);
}

void ccr_session_test_coarse_request_clock(void) {
    atomic_store_explicit(&clock_orders_requests, 0, memory_order_relaxed);
}

/// An append's slot, claimed and not yet published.
typedef struct claimed_slot {
    ccr_breadcrumb_ring *ring;   // publish's prefetch; tools/test-session-rings --self-test's late index store
    ccr_breadcrumb_slot *slot;
    uint64_t n;   // the breadcrumb's number in its ring
    int own;      // the ring is this thread's (not the shared ring 0)
} claimed_slot;

/// Claims the slot of this thread's ring an append writes, marks it as being written and gives it
/// its order; the caller fills it and then publishes it. 0 without a session.
/// `request_ns` 0: an ordinary append, ordered by an atomic add on the session's counter. Else a
/// server request's breadcrumb with its clock read (ccr_breadcrumb_request), ordered by a plain
/// load of the counter, then by that read.
static inline __attribute__((always_inline)) int claim_slot(uint64_t request_ns, claimed_slot *c) {
    ccr_session_file *s = ccr_session;
    if (s == NULL) return 0;
    ccr_breadcrumb_ring *ring = thread_ring;
    if (__builtin_expect(ring == NULL, 0)) {
        if (thread_choosing) {
            ring = &s->rings[0];   // a signal handler logging while this thread chooses its ring
        } else {
            thread_choosing = 1;
            atomic_signal_fence(memory_order_seq_cst);
            // Again: a handler that logged before the flag was set has chosen this thread's ring.
            ring = thread_ring;
            if (ring == NULL) thread_ring = ring = choose_ring(s);
            atomic_signal_fence(memory_order_seq_cst);
            thread_choosing = 0;
        }
    }
    // The index is taken before the slot is written: a reader that sees it finds the slot's seq
    // odd (or of an earlier lap) until the slot is complete, and skips it.
    uint64_t n = ring != &s->rings[0] ? claim_own_index(&ring->next)
                                      : atomic_fetch_add_explicit(&ring->next, 1, memory_order_relaxed);
    ccr_breadcrumb_slot *slot = &ring->slots[n % CCR_BREADCRUMB_CAPACITY];
    atomic_store_explicit(&slot->seq, 2 * n + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    // The session-wide order: the atomic adds on one counter are in one total order that agrees
    // with every happens-before between threads, which no clock read promises at 4 ms ticks.
    // A request's breadcrumb only reads the counter (Decision 0058): an add moved its line between
    // the cores serving requests twice a request. Its 2c falls after every add it saw (2n + 1 for
    // n < c) and before every add that sees it (2n + 1 for n >= c); between request breadcrumbs
    // of one c, the monotonic clock, which Linux keeps from going back across CPUs, decides.
    if (request_ns == 0 || !atomic_load_explicit(&clock_orders_requests, memory_order_relaxed)) {
        slot->order = 2 * atomic_fetch_add_explicit(&s->breadcrumb_order, 1, memory_order_relaxed) + 1;
    } else {
        slot->order = 2 * atomic_load_explicit(&s->breadcrumb_order, memory_order_relaxed);
        slot->request_tie = request_ns;
    }
    c->ring = ring;
    c->slot = slot;
    c->n = n;
    c->own = ring != &s->rings[0];
    return 1;
}

/// Makes a slot `claim_slot` gave readable.
static inline __attribute__((always_inline)) void publish(const claimed_slot *c) {
    atomic_store_explicit(&c->slot->seq, 2 * c->n + 2, memory_order_release);
    // The ring's next slot was last written a lap ago (500 appends; on a server, 250 requests):
    // its first lines are asked for now, for writing, so that the next append (on a server: the
    // request's next breadcrumb) finds them in this core's cache instead of waiting on them at the
    // first lock-prefixed instruction after it (a release, the request slot's claim). Three
    // lines: the header and an http breadcrumb's fields without a trace. A prefetch never faults,
    // changes no byte and makes no page of the sparse file resident. Not in the shared ring 0,
    // whose next slot another thread may be about to write (Decision 0062).
    if (!c->own) return;
    const ccr_breadcrumb_slot *next = c->slot + 1;
    if (next == &c->ring->slots[CCR_BREADCRUMB_CAPACITY]) next = &c->ring->slots[0];
#if defined(__x86_64__)
    // prefetchw itself: __builtin_prefetch(p, 1, 3) is prefetcht0, a read, without -mprfchw.
    if (atomic_load_explicit(&has_prefetchw, memory_order_relaxed)) {
        __asm__ volatile("prefetchw (%0)\n\tprefetchw 64(%0)\n\tprefetchw 128(%0)" : : "r"(next));
        return;
    }
#endif
    __builtin_prefetch((const char *)next, 1, 3);        // prfm pstl1keep on aarch64
    __builtin_prefetch((const char *)next + 64, 1, 3);
    __builtin_prefetch((const char *)next + 128, 1, 3);
}

static inline __attribute__((always_inline)) void append(uint8_t level, uint8_t kind, const char *tag, size_t tag_length,
                                                          const char *message, size_t message_length,
                                                          const char *metadata, size_t metadata_length, uint64_t request_ns) {
    claimed_slot c;
    if (!claim_slot(request_ns, &c)) return;
    fill_slot(c.slot, level, kind, tag, tag_length, message, message_length, metadata, metadata_length);
    publish(&c);
}

void ccr_breadcrumb_append(uint8_t level, uint8_t kind, const char *tag, size_t tag_length,
                           const char *message, size_t message_length, const char *metadata, size_t metadata_length) {
    // Kinds are 0 to 4; CCR_BREADCRUMB_HTTP_FIELDS is ccr_breadcrumb_http's alone.
    append(level, kind & (uint8_t)~CCR_BREADCRUMB_HTTP_FIELDS, tag, tag_length, message, message_length, metadata,
           metadata_length, 0);
}

void ccr_breadcrumb_log(const char *message, size_t message_length) {
    append(1, 0, NULL, 0, message, message_length, NULL, 0, 0);
}

uint64_t ccr_breadcrumb_request(uint8_t level, uint8_t kind, const char *tag, size_t tag_length, const char *message,
                                size_t message_length) {
    uint64_t now = monotonic_ns();
    append(level, kind & (uint8_t)~CCR_BREADCRUMB_HTTP_FIELDS, tag, tag_length, message, message_length, NULL, 0, now | (now == 0));
    return now;
}

/// A server's "http" breadcrumb, formatted here rather than in Swift (where building it was half
/// of the middleware's breadcrumb in tools/profile-middleware). `out` has `capacity` bytes;
/// `used` is where writing goes on, or capacity + 1 once something did not fit.
typedef struct http_text {
    char *out;
    size_t capacity;
    size_t used;
} http_text;

static inline void http_bytes(http_text *t, const char *bytes, size_t n) {
    if (t->used > t->capacity || n > t->capacity - t->used) {
        t->used = t->capacity + 1;
        return;
    }
    // Short pieces (nearly all of them) without a call: memmove was a sixth of the breadcrumb's
    // samples in tools/profile-middleware.
    ccr_copy_short(t->out + t->used, bytes, n);
    t->used += n;
}

/// Where the run of bytes from `i` that JSON needs no escape for ends: eight at a time, each word
/// checked for a byte below 0x20, a quote or a backslash (a byte of 0x80 or more never counts);
/// the word holding one is then gone through byte by byte.
static inline size_t plain_run(const unsigned char *s, size_t i, size_t n) {
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    while (n - i >= 8) {
        uint64_t x;
        __builtin_memcpy(&x, s + i, 8);
        uint64_t quote = x ^ (ones * '"'), backslash = x ^ (ones * '\\');
        uint64_t found = ((x - ones * 0x20) & ~x) | ((quote - ones) & ~quote) | ((backslash - ones) & ~backslash);
        if (found & highs) break;
        i += 8;
    }
    while (i < n && s[i] >= 0x20 && s[i] != '"' && s[i] != '\\') i++;
    return i;
}

#define HTTP_LITERAL(t, literal) http_bytes((t), (literal), sizeof(literal) - 1)

/// The writer's digits (ccr_format_uint), with a sign.
static void http_decimal(http_text *t, int64_t value) {
    char digits[21];
    size_t n = 0;
    if (value < 0) digits[n++] = '-';
    n += ccr_format_uint(digits + n, value < 0 ? (uint64_t)0 - (uint64_t)value : (uint64_t)value);
    http_bytes(t, digits, n);
}

/// A JSON string: quotes, backslashes and bytes below 0x20 escaped as RecordLine.appendQuoted
/// escapes them (\n, \r, \t, else \u00xx); every other byte (UTF-8 included) as it is.
static void http_quoted(http_text *t, const char *text, size_t n) {
    HTTP_LITERAL(t, "\"");
    const unsigned char *s = (const unsigned char *)text;
    size_t i = 0;
    while (i < n && t->used <= t->capacity) {   // stops once the buffer is known to be too small
        size_t run = plain_run(s, i, n);
        http_bytes(t, text + i, run - i);
        if (run == n) break;
        unsigned char c = s[run];
        static const char hex[] = "0123456789abcdef";
        char escaped[6] = {'\\', (char)c, 0, 0, 0, 0};
        size_t length = 2;
        if (c == '\n') escaped[1] = 'n';
        else if (c == '\r') escaped[1] = 'r';
        else if (c == '\t') escaped[1] = 't';
        else if (c < 0x20) {
            escaped[1] = 'u'; escaped[2] = '0'; escaped[3] = '0'; escaped[4] = hex[c >> 4]; escaped[5] = hex[c & 15];
            length = 6;
        }
        http_bytes(t, escaped, length);
        i = run + 1;
    }
    HTTP_LITERAL(t, "\"");
}

/// An "http" breadcrumb's fields.
typedef struct http_fields {
    const char *method, *route, *request_id, *trace_id, *span_id;
    size_t method_length, route_length, request_id_length, trace_id_length, span_id_length;
    int64_t status, duration_tenths_ms;
    int has_trace, has_span;
} http_fields;

/// The breadcrumb's message, then its metadata, into `t`; returns the message's length.
static size_t http_format(http_text *t, const http_fields *f) {
    http_bytes(t, f->method, f->method_length);
    HTTP_LITERAL(t, " ");
    http_bytes(t, f->route, f->route_length);
    HTTP_LITERAL(t, " ");
    http_decimal(t, f->status);
    size_t message_length = t->used;
    HTTP_LITERAL(t, "{\"method\":");
    http_quoted(t, f->method, f->method_length);
    HTTP_LITERAL(t, ",\"route\":");
    http_quoted(t, f->route, f->route_length);
    HTTP_LITERAL(t, ",\"status\":\"");
    http_decimal(t, f->status);
    HTTP_LITERAL(t, "\",\"duration_ms\":\"");
    http_decimal(t, f->duration_tenths_ms / 10);
    HTTP_LITERAL(t, ".");
    http_decimal(t, f->duration_tenths_ms % 10);
    HTTP_LITERAL(t, "\",\"request_id\":");
    http_quoted(t, f->request_id, f->request_id_length);
    if (f->has_trace) {
        HTTP_LITERAL(t, ",\"trace_id\":");
        http_quoted(t, f->trace_id, f->trace_id_length);
        if (f->has_span) {
            HTTP_LITERAL(t, ",\"span_id\":");
            http_quoted(t, f->span_id, f->span_id_length);
        }
    }
    HTTP_LITERAL(t, "}");
    return message_length;
}

/// An "http" breadcrumb's slot with CCR_BREADCRUMB_HTTP_FIELDS (Decision 0060): this head, then
/// the bytes of the method, the route, the request id, the trace id and the span id (the last two
/// only when `has_trace`, and `has_trace` and `has_span`), nothing between them.
typedef struct http_packed {
    int64_t status;
    int64_t duration_tenths_ms;
    uint16_t method_length, route_length, request_id_length, trace_id_length, span_id_length;
    uint8_t has_trace, has_span;
    uint8_t unused[4];   // zero: no stack bytes go into the file
} http_packed;
_Static_assert(sizeof(http_packed) == 32, "an http breadcrumb's head has the documented 32 bytes");

/// Bytes of the formatted breadcrumb (message and metadata) beyond its texts: the message's two
/// spaces, the metadata's keys and punctuation (87 bytes), the quotes around its five texts (10),
/// the status twice (at most 20 bytes each) and the duration's two parts (at most 18 + 1): at
/// most 158. 192 leaves room.
#define HTTP_FIXED_MAX 192
#define HTTP_FORMATTED_MAX 1024

int ccr_breadcrumb_http(const char *method, size_t method_length, const char *route, size_t route_length, int64_t status,
                        int64_t duration_tenths_ms, uint64_t started_ns, const char *request_id, size_t request_id_length,
                        const char *trace_id, size_t trace_id_length, int has_trace, const char *span_id,
                        size_t span_id_length, int has_span, size_t message_max, int64_t *duration_out) {
    uint64_t now = 0;
    if (started_ns != 0) {
        now = monotonic_ns();
        duration_tenths_ms = now > started_ns ? (int64_t)((now - started_ns) / 100000) : 0;
    }
    if (duration_tenths_ms < 0) duration_tenths_ms = 0;
    if (duration_out) *duration_out = duration_tenths_ms;
    has_trace = has_trace != 0;
    has_span = has_trace && has_span != 0;
    if (!has_trace) trace_id_length = 0;
    if (!has_span) span_id_length = 0;
    uint8_t level = status >= 500 ? 3 : status >= 400 ? 2 : 1;
    uint64_t request_ns = started_ns == 0 ? 0 : now | (now == 0);
    // The fields as they are, when their formatted form surely fits in 1 KiB (each byte of a
    // quoted text escaped as \u00xx is 6) and its message within `message_max` (a status has at
    // most 20 characters): the reader formats them (Decision 0060). Formatting them here, escapes
    // and digits, then copying the text into the slot was a quarter of the middleware's share in
    // tools/profile-middleware.
    // Each length alone first: their sum must not wrap.
    size_t quoted = method_length + route_length + request_id_length + trace_id_length + span_id_length;
    if (method_length <= HTTP_FORMATTED_MAX && route_length <= HTTP_FORMATTED_MAX && request_id_length <= HTTP_FORMATTED_MAX &&
        trace_id_length <= HTTP_FORMATTED_MAX && span_id_length <= HTTP_FORMATTED_MAX &&
        6 * quoted + method_length + route_length + HTTP_FIXED_MAX <= HTTP_FORMATTED_MAX &&
        method_length + route_length + 22 <= message_max) {
        claimed_slot c;
        if (!claim_slot(request_ns, &c)) return 1;   // no session: nothing is kept, as append keeps nothing
        ccr_breadcrumb_slot *slot = c.slot;
        char *fields = fill_head(slot, level, CCR_BREADCRUMB_HTTP_FIELDS, "http", 4);   // kind "log"
        http_packed head = {status, duration_tenths_ms, (uint16_t)method_length, (uint16_t)route_length,
                            (uint16_t)request_id_length, (uint16_t)trace_id_length, (uint16_t)span_id_length,
                            (uint8_t)has_trace, (uint8_t)has_span, {0, 0, 0, 0}};
        __builtin_memcpy(fields, &head, sizeof head);
        char *to = fields + sizeof head;
        ccr_copy_short(to, method, method_length);
        to += method_length;
        ccr_copy_short(to, route, route_length);
        to += route_length;
        ccr_copy_short(to, request_id, request_id_length);
        to += request_id_length;
        ccr_copy_short(to, trace_id, trace_id_length);
        to += trace_id_length;
        ccr_copy_short(to, span_id, span_id_length);
        to += span_id_length;
        slot->message_length = (uint16_t)(to - fields);
        slot->metadata_length = 0;
        publish(&c);
        return 1;
    }
    char buffer[HTTP_FORMATTED_MAX];
    http_text t = {buffer, sizeof buffer, 0};
    http_fields f = {method, route, request_id, trace_id, span_id, method_length, route_length, request_id_length,
                     trace_id_length, span_id_length, status, duration_tenths_ms, has_trace, has_span};
    size_t message_length = http_format(&t, &f);
    if (t.used > t.capacity || message_length > message_max) return 0;
    append(level, 0, "http", 4, buffer, message_length, buffer + message_length, t.used - message_length, request_ns);
    return 1;
}

/// A slot's "http" fields (CCR_BREADCRUMB_HTTP_FIELDS) formatted as ccr_breadcrumb_http formats
/// them into `t`, the message's length in `*message_length`. 0 when the slot's lengths do not
/// add up (a slot this code did not write), or the text does not fit in `t`.
static int http_unpack(const ccr_breadcrumb_slot *b, const char *fields, http_text *t, size_t *message_length) {
    http_packed head;
    size_t size = b->message_length;
    if (size < sizeof head || size > CCR_BREADCRUMB_TEXT_MAX) return 0;
    memcpy(&head, fields, sizeof head);
    size_t texts = (size_t)head.method_length + head.route_length + head.request_id_length + head.trace_id_length +
                   head.span_id_length;
    if (sizeof head + texts != size) return 0;
    const char *p = fields + sizeof head;
    http_fields f;
    f.method = p; f.method_length = head.method_length; p += head.method_length;
    f.route = p; f.route_length = head.route_length; p += head.route_length;
    f.request_id = p; f.request_id_length = head.request_id_length; p += head.request_id_length;
    f.trace_id = p; f.trace_id_length = head.trace_id_length; p += head.trace_id_length;
    f.span_id = p; f.span_id_length = head.span_id_length;
    f.status = head.status;
    f.duration_tenths_ms = head.duration_tenths_ms;
    f.has_trace = head.has_trace != 0;
    f.has_span = f.has_trace && head.has_span != 0;
    *message_length = http_format(t, &f);
    return t->used <= t->capacity;
}

void ccr_set_user_id(const char *id, size_t length) {
    ccr_session_file *s = ccr_session;
    if (s == NULL) return;
    pthread_mutex_lock(&keys_lock);
    uint64_t seq = atomic_load(&s->user_seq);
    atomic_store(&s->user_seq, seq + 1);
    length = min_size(length, CCR_USER_ID_MAX);
    memcpy(s->user_id, id, length);
    s->user_id_length = (uint16_t)length;
    atomic_store_explicit(&s->user_seq, seq + 2, memory_order_release);
    pthread_mutex_unlock(&keys_lock);
}

int ccr_set_custom_key(const char *name, size_t name_length, uint8_t type, const char *value, size_t value_length,
                       char *evicted, size_t evicted_capacity) {
    ccr_session_file *s = ccr_session;
    if (s == NULL || name_length == 0) return 0;
    name_length = min_size(name_length, CCR_KEY_NAME_MAX);
    value_length = min_size(value_length, CCR_KEY_VALUE_MAX);
    int result = 0;
    pthread_mutex_lock(&keys_lock);
    ccr_key_slot *target = NULL, *free_slot = NULL, *oldest = NULL;
    for (int i = 0; i < CCR_KEY_CAPACITY; i++) {
        ccr_key_slot *k = &s->keys[i];
        if (k->name_length == 0) {
            if (!free_slot) free_slot = k;
        } else if (k->name_length == name_length && memcmp(k->name, name, name_length) == 0) {
            target = k;
            break;
        } else if (!oldest || k->set_order < oldest->set_order) {
            oldest = k;
        }
    }
    if (!target) target = free_slot;
    if (!target) {
        // Full: evict the key set least recently (deterministic: orders are unique).
        target = oldest;
        if (evicted && evicted_capacity > 0) {
            size_t n = min_size(target->name_length, evicted_capacity - 1);
            memcpy(evicted, target->name, n);
            evicted[n] = '\0';
        }
        result = 1;
    }
    uint64_t seq = atomic_load(&target->seq);
    atomic_store(&target->seq, seq + 1);
    target->set_order = ++key_order;
    memcpy(target->name, name, name_length);
    target->name_length = (uint16_t)name_length;
    if (value_length) memcpy(target->value, value, value_length);
    target->value_length = (uint16_t)value_length;
    target->value_type = type;
    atomic_store_explicit(&target->seq, seq + 2, memory_order_release);
    pthread_mutex_unlock(&keys_lock);
    return result;
}

uint64_t ccr_breadcrumb_total(void) {
    ccr_session_file *s = ccr_session;
    return s == NULL ? 0 : ccr_session_breadcrumbs_written(s);
}

size_t ccr_current_user_id(char *buffer, size_t capacity) {
    ccr_session_file *s = ccr_session;
    if (s == NULL || capacity == 0) return 0;
    pthread_mutex_lock(&keys_lock);   // writers take it too: the id is whole
    size_t length = min_size(s->user_id_length, capacity);
    memcpy(buffer, s->user_id, length);
    pthread_mutex_unlock(&keys_lock);
    return length;
}

int ccr_custom_key_count(void) {
    ccr_session_file *s = ccr_session;
    if (s == NULL) return 0;
    int count = 0;
    pthread_mutex_lock(&keys_lock);
    for (int i = 0; i < CCR_KEY_CAPACITY; i++) count += s->keys[i].name_length != 0;
    pthread_mutex_unlock(&keys_lock);
    return count;
}

// MARK: - Reading a session file left by an earlier process

static const char *level_names[] = {"debug", "info", "warning", "error", "fatal"};
static const char *kind_names[] = {"log", "screen", "action", "error", "network"};

/// Whether `a` comes before `b` in the session's order: by `order`, then, for two request
/// breadcrumbs that read the same counter, by their clock reads (Decision 0058). Slots of a live
/// session may change under the reader; a torn pair is dropped by the seq check that follows.
static int listed_before(const ccr_breadcrumb_slot *a, const ccr_breadcrumb_slot *b) {
    if (a->order != b->order) return a->order < b->order;
    return a->order % 2 == 0 && a->request_tie < b->request_tie;
}

/// Whether slot n of `ring` holds breadcrumb n, completely written (not torn, not overwritten).
static int breadcrumb_complete(const ccr_breadcrumb_ring *ring, uint64_t n) {
    return atomic_load_explicit(&ring->slots[n % CCR_BREADCRUMB_CAPACITY].seq, memory_order_acquire) == 2 * n + 2;
}

/// Maps the session file open at `fd` read-only if it is one this code reads: NULL otherwise
/// (another format, another version, or cut short: a shorter file would fault past its end).
/// Versions 2 to 6 were never released; a file of version 1 (the last released) is refused and
/// kept aside by the caller.
static const ccr_session_file *map_session(int fd) {
    uint32_t head[2];
    struct stat st;
    if (pread(fd, head, sizeof head, 0) != (ssize_t)sizeof head || head[0] != CCR_SESSION_MAGIC
        || head[1] != CCR_SESSION_VERSION || fstat(fd, &st) != 0 || (size_t)st.st_size < sizeof(ccr_session_file)) {
        return NULL;
    }
    const ccr_session_file *s = mmap(NULL, sizeof(ccr_session_file), PROT_READ, MAP_SHARED, fd, 0);
    if (s == MAP_FAILED) return NULL;
    if (s->magic != CCR_SESSION_MAGIC || s->size != sizeof(ccr_session_file) || s->breadcrumb_rings != CCR_BREADCRUMB_RINGS
        || s->breadcrumb_capacity != CCR_BREADCRUMB_CAPACITY) {
        munmap((void *)s, sizeof(ccr_session_file));
        return NULL;
    }
    return s;
}

int ccr_session_inspect(const char *path, ccr_session_info *info) {
    memset(info, 0, sizeof *info);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    if (flock(fd, LOCK_SH | LOCK_NB) != 0) {
        info->alive = 1;   // its process still holds the lock
        close(fd);
        return 0;
    }
    const ccr_session_file *s = map_session(fd);
    close(fd);
    if (s == NULL) return -2;
    info->state = (int)atomic_load(&s->state);
    info->pid = s->pid;
    info->started_ns = s->started_ns;
    info->breadcrumbs_written = ccr_session_breadcrumbs_written(s);
    memcpy(info->session_id, s->session_id, sizeof info->session_id - 1);
    memcpy(info->app_id, s->app_id, sizeof info->app_id - 1);
    memcpy(info->app_version, s->app_version, sizeof info->app_version - 1);
    munmap((void *)s, sizeof(ccr_session_file));
    return 0;
}

/// Writes user, custom_key and breadcrumb lines (oldest breadcrumb first) to `out_fd`.
int ccr_session_export(const char *path, int out_fd) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    const ccr_session_file *s = map_session(fd);
    close(fd);
    if (s == NULL) return -2;
    // Per call, not static: app threads export concurrently (non-fatal errors, snapshots).
    char *buffer = malloc(65536);
    if (buffer == NULL) {
        munmap((void *)s, sizeof(ccr_session_file));
        return -1;
    }
    ccr_writer w;
    ccr_writer_init(&w, out_fd, buffer, 65536);

    uint64_t user_seq = atomic_load(&s->user_seq);
    if (user_seq % 2 == 0 && s->user_id_length > 0) {
        ccr_writer_text(&w, "{\"type\":\"user\",\"id\":");
        ccr_writer_json_string(&w, s->user_id, s->user_id_length);
        ccr_writer_text(&w, "}\n");
    }
    // Keys in the order they were set.
    int order[CCR_KEY_CAPACITY];
    int count = 0;
    for (int i = 0; i < CCR_KEY_CAPACITY; i++) {
        const ccr_key_slot *k = &s->keys[i];
        if (k->name_length == 0 || atomic_load(&k->seq) % 2 != 0) continue;
        int j = count++;
        while (j > 0 && s->keys[order[j - 1]].set_order > k->set_order) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }
    for (int i = 0; i < count; i++) {
        const ccr_key_slot *k = &s->keys[order[i]];
        ccr_writer_text(&w, "{\"type\":\"custom_key\",\"key\":");
        ccr_writer_json_string(&w, k->name, k->name_length);
        ccr_writer_text(&w, ",\"value\":");
        switch (k->value_type) {
        case 1: case 2: case 3: case 5:   // bool, int, double, JSON: written as JSON by the setter
            ccr_writer_raw(&w, k->value, k->value_length);
            break;
        default:
            ccr_writer_json_string(&w, k->value, k->value_length);
        }
        ccr_writer_text(&w, "}\n");
    }
    // The last 500 breadcrumbs over all rings: a backward merge by order finds where each ring's
    // share starts, a forward merge writes them oldest first.
    uint64_t end[CCR_BREADCRUMB_RINGS], start[CCR_BREADCRUMB_RINGS], total = 0;
    for (int r = 0; r < CCR_BREADCRUMB_RINGS; r++) {
        end[r] = atomic_load_explicit(&s->rings[r].next, memory_order_acquire);
        start[r] = end[r];
        total += end[r];
    }
    uint64_t taken = 0;
    while (taken < CCR_BREADCRUMB_CAPACITY) {
        int best = -1;
        const ccr_breadcrumb_slot *best_slot = NULL;
        for (int r = 0; r < CCR_BREADCRUMB_RINGS; r++) {
            uint64_t floor = end[r] > CCR_BREADCRUMB_CAPACITY ? end[r] - CCR_BREADCRUMB_CAPACITY : 0;
            while (start[r] > floor && !breadcrumb_complete(&s->rings[r], start[r] - 1)) start[r]--;
            if (start[r] == floor) continue;
            const ccr_breadcrumb_slot *slot = &s->rings[r].slots[(start[r] - 1) % CCR_BREADCRUMB_CAPACITY];
            if (best < 0 || listed_before(best_slot, slot)) {
                best = r;
                best_slot = slot;
            }
        }
        if (best < 0) break;
        start[best]--;
        taken++;
    }
    uint64_t index = total - taken;
    ccr_breadcrumb_slot *slot_copy = malloc(sizeof(ccr_breadcrumb_slot));
    char http_formatted[HTTP_FORMATTED_MAX];   // an "http" breadcrumb's fields, formatted
    for (; slot_copy != NULL;) {
        int best = -1;
        const ccr_breadcrumb_slot *best_slot = NULL;
        for (int r = 0; r < CCR_BREADCRUMB_RINGS; r++) {
            while (start[r] < end[r] && !breadcrumb_complete(&s->rings[r], start[r])) start[r]++;
            if (start[r] == end[r]) continue;
            const ccr_breadcrumb_slot *slot = &s->rings[r].slots[start[r] % CCR_BREADCRUMB_CAPACITY];
            if (best < 0 || listed_before(slot, best_slot)) {
                best = r;
                best_slot = slot;
            }
        }
        if (best < 0) break;
        // A live session's owner may be overwriting this slot right now (snapshots and
        // non-fatal records read the running process's file): copy it, then check that its
        // sequence number did not move, as a seqlock reader does.
        const ccr_breadcrumb_slot *live = &s->rings[best].slots[start[best] % CCR_BREADCRUMB_CAPACITY];
        uint64_t expected_seq = 2 * start[best] + 2;
        start[best]++;
        // The fields after seq, up to the text's end (not the padding).
        const size_t fields = offsetof(ccr_breadcrumb_slot, timestamp_ns);
        memcpy((char *)slot_copy + fields, (const char *)live + fields, offsetof(ccr_breadcrumb_slot, text) + sizeof live->text - fields);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&live->seq, memory_order_relaxed) != expected_seq) continue;
        const ccr_breadcrumb_slot *b = slot_copy;
        ccr_writer_text(&w, "{\"type\":\"breadcrumb\",\"index\":");
        ccr_writer_uint(&w, index++);
        ccr_writer_text(&w, ",\"ring\":");
        ccr_writer_uint(&w, (uint64_t)best);
        ccr_writer_text(&w, ",\"timestamp_ns\":");
        ccr_writer_uint(&w, b->timestamp_ns);
        ccr_writer_text(&w, ",\"level\":\"");
        ccr_writer_text(&w, level_names[b->level < 5 ? b->level : 1]);
        ccr_writer_text(&w, "\",\"kind\":\"");
        uint8_t kind = b->kind & (uint8_t)~CCR_BREADCRUMB_HTTP_FIELDS;
        ccr_writer_text(&w, kind_names[kind < 5 ? kind : 0]);
        ccr_writer_text(&w, "\",\"tag\":");
        size_t tag_length = b->tag_length < CCR_BREADCRUMB_TAG_MAX ? b->tag_length : CCR_BREADCRUMB_TAG_MAX;
        ccr_writer_json_string(&w, b->text, tag_length);
        const char *text = b->text + tag_length;   // message, then metadata
        ccr_writer_text(&w, ",\"message\":");
        if (b->kind & CCR_BREADCRUMB_HTTP_FIELDS) {
            http_text t = {http_formatted, sizeof http_formatted, 0};
            size_t message_length = 0;
            if (http_unpack(b, text, &t, &message_length)) {
                ccr_writer_json_string(&w, http_formatted, message_length);
                ccr_writer_text(&w, ",\"metadata\":");
                ccr_writer_raw(&w, http_formatted + message_length, t.used - message_length);
            } else {
                ccr_writer_text(&w, "\"(an http breadcrumb whose fields could not be read)\"");
            }
        } else {
            size_t message_length = b->message_length < CCR_BREADCRUMB_TEXT_MAX ? b->message_length : CCR_BREADCRUMB_TEXT_MAX;
            ccr_writer_json_string(&w, text, message_length);
            if (b->metadata_length > 0 && message_length + b->metadata_length <= CCR_BREADCRUMB_TEXT_MAX) {
                ccr_writer_text(&w, ",\"metadata\":");
                ccr_writer_raw(&w, text + message_length, b->metadata_length);
            }
        }
        ccr_writer_text(&w, "}\n");
    }
    ccr_writer_flush(&w);
    free(slot_copy);
    free(buffer);
    munmap((void *)s, sizeof(ccr_session_file));
    return w.failed ? -1 : 0;
}
