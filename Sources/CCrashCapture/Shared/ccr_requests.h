// The requests a server is serving, in fixed slots a crash can read: written by app threads (the
// framework middleware), read lock-free at crash time. No allocation, no lock: a slot is claimed
// with one compare-and-swap, filled, then published; a reader copies a published slot and keeps
// the copy only if the slot's generation did not move meanwhile (other threads run on while the
// handler reads).
#ifndef CCR_REQUESTS_H
#define CCR_REQUESTS_H

#include <stdatomic.h>
#include <stdint.h>

#define CCR_REQUEST_SLOTS 128
#define CCR_REQUEST_METHOD_MAX 16
#define CCR_REQUEST_ROUTE_MAX 192
#define CCR_REQUEST_ID_MAX 64

enum { CCR_REQUEST_FREE = 0, CCR_REQUEST_WRITING = 1, CCR_REQUEST_LIVE = 2 };

typedef struct ccr_request_slot {
    _Atomic uint32_t state;        // CCR_REQUEST_*
    _Atomic uint32_t generation;   // moves on every claim: a reader's copy is whole only if it did not
    int32_t tid;                   // the thread the request started on
    uint64_t started_ns;           // CLOCK_MONOTONIC
    uint8_t method_length, route_length, request_id_length, trace_id_length;
    char method[CCR_REQUEST_METHOD_MAX];
    char route[CCR_REQUEST_ROUTE_MAX];
    char request_id[CCR_REQUEST_ID_MAX];
    char trace_id[CCR_REQUEST_ID_MAX];
} ccr_request_slot;

typedef struct ccr_request_table {
    ccr_request_slot slots[CCR_REQUEST_SLOTS];
    _Atomic uint32_t next_hint;    // where a thread's first claim starts looking (then its own hint)
    _Atomic uint64_t dropped;      // begins that found every slot taken
} ccr_request_table;

/// The process's table (static storage: exists before install, survives nothing past exit).
extern ccr_request_table ccr_requests;

#endif
