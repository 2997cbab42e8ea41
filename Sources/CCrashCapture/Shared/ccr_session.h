// The session file: breadcrumbs, custom keys and the user id of the running process, in a
// MAP_SHARED file mapping under <reports>/sessions/<id>.session. Written by app threads without
// locks (a sequence number per slot); read lock-free at crash time and by the next launch. Because
// it is a file mapping, what was written survives SIGKILL and the OOM killer: the next launch
// reads it to build an abnormal-termination report, or to attach it to the crash record.
#ifndef CCR_SESSION_H
#define CCR_SESSION_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define CCR_SESSION_MAGIC 0x31535243u   /* "CRS1" */
#define CCR_SESSION_VERSION 7
#define CCR_BREADCRUMB_CAPACITY 500
/// Breadcrumb rings: ring 0 is shared (a fetch_add per append); rings 1… are each owned by one
/// thread at a time, the first threads to log, which append with plain stores and no shared cache
/// line. Each ring keeps its thread's last 500, so the merged last 500 are always there. A ring
/// costs memory only once written (the file is sparse): ~1 MiB when full.
#define CCR_BREADCRUMB_RINGS 5
#define CCR_BREADCRUMB_TAG_MAX 64
/// Set in a slot's `kind` (version 7, Decision 0060): the slot holds a server's "http" breadcrumb
/// as its fields (ccr_breadcrumb_http's, packed as ccr_session.c's http_packed says, in `text`,
/// `message_length` bytes long, `metadata_length` 0), formatted into its message and metadata by
/// the reader instead of by the request's thread.
#define CCR_BREADCRUMB_HTTP_FIELDS 0x80
/// Message and metadata (compact JSON) share this many bytes; the message is cut at 1000
/// characters before it gets here.
#define CCR_BREADCRUMB_TEXT_MAX 1984
#define CCR_KEY_CAPACITY 64
#define CCR_KEY_NAME_MAX 64
#define CCR_KEY_VALUE_MAX 1024
#define CCR_USER_ID_MAX 256

enum { CCR_SESSION_RUNNING = 1, CCR_SESSION_ENDED = 2, CCR_SESSION_CRASHED = 3 };

/// A slot is complete for write number n when seq == 2n + 2; odd while being written.
typedef struct ccr_breadcrumb_slot {
    _Atomic uint64_t seq;
    uint64_t timestamp_ns;
    /// The breadcrumb's place among all of the session's (version 5; its two kinds, version 6): rings are merged by it (the
    /// coarse clock's 4 ms ticks tied breadcrumbs of different threads, and a tie put them in ring
    /// order, so a request that began after another one's screen view could be listed before it).
    /// Odd, 2n + 1, for an append that took n from the session's `breadcrumb_order` with an atomic
    /// add; even, 2c, for a server request's breadcrumb (ccr_breadcrumb_request), where c is the
    /// counter as it read it, and `request_tie` orders those of one c (Decision 0058).
    uint64_t order;
    /// A request breadcrumb's (even `order`'s) CLOCK_MONOTONIC nanoseconds, read in its append:
    /// orders the request breadcrumbs that read the same counter. Not read for an odd `order`.
    /// In the slot's first line (version 6): at the slot's end it cost the request's append a
    /// second cold line (tools/profile-middleware).
    uint64_t request_tie;
    uint8_t level;
    uint8_t kind;
    uint16_t tag_length;
    uint16_t message_length;
    uint16_t metadata_length;
    // The tag, then the message, then the metadata, from the header's end (version 7): a tag and a
    // message of up to 24 bytes together share the header's cache line, and a longer breadcrumb
    // writes lines that follow it. Before, the tag had its own place at the slot's end, a second
    // cold line in every append (~half of a request breadcrumb's append, perf annotate under
    // tools/profile-middleware). The tag has at most CCR_BREADCRUMB_TAG_MAX bytes, message and
    // metadata together at most CCR_BREADCRUMB_TEXT_MAX.
    char text[CCR_BREADCRUMB_TAG_MAX + CCR_BREADCRUMB_TEXT_MAX];
    // Pads the slot to 33 cache lines (since version 4). Version 3's 2072 bytes put every slot at a
    // different offset within its line, so most short appends wrote two lines instead of one
    // (measured: 14.8 → 11.2 ns per append in C). An odd number of lines: consecutive slots' first
    // lines fall into all 64 sets of L1, not into 2 as a 2048-byte stride would.
    char reserved[24];
} ccr_breadcrumb_slot;
_Static_assert(sizeof(ccr_breadcrumb_slot) % 64 == 0 && (sizeof(ccr_breadcrumb_slot) / 64) % 2 == 1,
               "a breadcrumb slot is an odd number of cache lines");

/// Even seq: stable. A slot with name_length 0 is free.
typedef struct ccr_key_slot {
    _Atomic uint64_t seq;
    uint64_t set_order;   // larger = set more recently; eviction takes the smallest
    uint16_t name_length;
    uint16_t value_length;
    uint8_t value_type;   // 1 bool, 2 int, 3 double, 4 string, 5 JSON
    char name[CCR_KEY_NAME_MAX];
    char value[CCR_KEY_VALUE_MAX];
} ccr_key_slot;

/// One ring of breadcrumbs. Slot n % capacity holds breadcrumb n of this ring.
typedef struct ccr_breadcrumb_ring {
    _Alignas(64) _Atomic uint64_t next;   // breadcrumbs ever appended to this ring
    _Atomic uint32_t owner;   // rings 1…: the owning thread's tid, 0 while free; ring 0: 0
    uint32_t reserved;
    _Alignas(64) ccr_breadcrumb_slot slots[CCR_BREADCRUMB_CAPACITY];
} ccr_breadcrumb_ring;

typedef struct ccr_session_file {
    uint32_t magic;
    uint32_t version;
    uint32_t size;
    uint32_t breadcrumb_capacity;   // per ring
    int32_t pid;
    _Atomic uint32_t state;
    uint64_t started_ns;   // wall clock
    char session_id[40];
    char app_id[128];
    char app_version[64];
    uint32_t breadcrumb_rings;
    _Atomic uint64_t user_seq;
    uint16_t user_id_length;
    char user_id[CCR_USER_ID_MAX];
    /// Breadcrumbs ever appended to the session, over all rings, but a server's request
    /// breadcrumbs (version 5; version 6, Decision 0058): each append takes its `order` from here
    /// with one atomic add, and a request breadcrumb reads it, so the merged order is the order
    /// of the appends, as any synchronisation between the threads (a lock, a queue, a request
    /// answered) saw it. Its own cache line: the only line every logging thread writes.
    _Alignas(64) _Atomic uint64_t breadcrumb_order;
    _Alignas(64) ccr_key_slot keys[CCR_KEY_CAPACITY];
    ccr_breadcrumb_ring rings[CCR_BREADCRUMB_RINGS];
} ccr_session_file;

/// Tests: request breadcrumbs take the counter's add, as on a host whose CLOCK_MONOTONIC repeats
/// a value (ccr_session.c check_request_clock).
void ccr_session_test_coarse_request_clock(void);

/// The mapped session file of this process, or NULL before install.
extern ccr_session_file *_Nullable ccr_session;

/// Breadcrumbs appended to all rings of `s` so far. Async-signal-safe (loads only).
static inline uint64_t ccr_session_breadcrumbs_written(const ccr_session_file *_Nonnull s) {
    uint64_t total = 0;
    for (int i = 0; i < CCR_BREADCRUMB_RINGS; i++) total += atomic_load_explicit(&s->rings[i].next, memory_order_acquire);
    return total;
}

#endif
