// The sections of a crash record that both the handler and the watchdog write, and the step that
// makes a record durable: end line, fdatasync, rename new/ → pending/.
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ccr_crashtime.h"
#include "ccr_requests.h"
#include "ccr_session.h"

uint64_t ccr_now_ns(int clock_id) {
    struct timespec ts;
    if (clock_gettime(clock_id, &ts) != 0) return 0;
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/// Appends `text` (a constant: its copy is inlined) at `line + *n`.
#define APPEND(line, n, text) (memcpy((line) + *(n), (text), sizeof(text) - 1), *(n) += sizeof(text) - 1)

/// One frame line, `{"type":…,"index":…,"address":"0x…","kind":…}`, made in a stack buffer and
/// copied into the record once: a crash writes 50 to 70 of them, and piece by piece (ten writer
/// calls a line) they took ~12 us of the handler (tools/profile-capture). Async-signal-safe.
static void write_frame_line(ccr_writer *w, int type, uint64_t index, uintptr_t address, int kind) {
    char line[128];
    size_t n = 0;
    switch (type) {
    case 0: APPEND(line, &n, "{\"type\":\"frame\",\"index\":"); break;
    case 1: APPEND(line, &n, "{\"type\":\"async_frame\",\"index\":"); break;
    default: APPEND(line, &n, "{\"type\":\"outer_frame\",\"index\":"); break;
    }
    n += ccr_format_uint(line + n, index);
    APPEND(line, &n, ",\"address\":\"0x");
    n += ccr_format_hex(line + n, address);
    switch (kind) {
    case 0: APPEND(line, &n, "\",\"kind\":\"pc\"}\n"); break;
    case 1: APPEND(line, &n, "\",\"kind\":\"async\"}\n"); break;
    default: APPEND(line, &n, "\",\"kind\":\"return_address\"}\n"); break;
    }
    ccr_writer_raw(w, line, n);
}

void ccr_record_write_frames(ccr_writer *w, const uintptr_t *frames, int count) {
    // Frame 0 is where the signal struck; the others are return addresses (look up at pc-1).
    for (int i = 0; i < count; i++) write_frame_line(w, 0, (uint64_t)i, frames[i], i == 0 ? 0 : 2);
}

void ccr_record_write_async_frames(ccr_writer *w, const uintptr_t *frames, int count, int first_index) {
    for (int i = 0; i < count; i++) write_frame_line(w, 1, (uint64_t)(first_index + i), frames[i], 1);
}

void ccr_record_write_outer_frames(ccr_writer *w, const uintptr_t *frames, int count, int first_index) {
    for (int i = 0; i < count; i++) write_frame_line(w, 2, (uint64_t)(first_index + i), frames[i], 2);
}

void ccr_record_write_stack(ccr_writer *w, const char *unwinder, int kept, int depth, int lower_bound, int step_error,
                            int copy_checks, int copy_check_faults, int table_lookups, int table_scans, int table_misses) {
    ccr_writer_text(w, "{\"type\":\"stack\"");
    ccr_writer_key(w, "unwinder", 0);
    ccr_writer_json_string(w, unwinder, 64);
    ccr_writer_key(w, "frames", 0);
    ccr_writer_int(w, kept);
    ccr_writer_key(w, "depth", 0);
    ccr_writer_int(w, depth);
    ccr_writer_key(w, "truncated", 0);
    ccr_writer_text(w, depth > kept ? "true" : "false");
    ccr_writer_key(w, "depth_is_lower_bound", 0);
    ccr_writer_text(w, lower_bound ? "true" : "false");
    if (step_error != 0) {
        ccr_writer_key(w, "unwind_error", 0);
        ccr_writer_int(w, step_error);
    }
    if (copy_checks > 0) {
        ccr_writer_key(w, "copy_checks", 0);
        ccr_writer_int(w, copy_checks);
        ccr_writer_key(w, "copy_check_faults", 0);
        ccr_writer_int(w, copy_check_faults);
    }
    if (table_lookups > 0) {
        ccr_writer_key(w, "table_lookups", 0);
        ccr_writer_int(w, table_lookups);
    }
    if (table_scans > 0) {
        ccr_writer_key(w, "table_scans", 0);
        ccr_writer_int(w, table_scans);
    }
    if (table_misses > 0) {
        ccr_writer_key(w, "table_misses", 0);
        ccr_writer_int(w, table_misses);
    }
    ccr_writer_text(w, "}\n");
}

void ccr_record_write_module_table(ccr_writer *w, const ccr_module *table, int count) {
    for (int i = 0; i < count; i++) {
        const ccr_module *m = &table[i];
        ccr_writer_text(w, "{\"type\":\"module\"");
        ccr_writer_key(w, "path", 0);
        ccr_writer_json_string(w, m->path, sizeof m->path);
        ccr_writer_key(w, "start", 0);
        ccr_writer_hex(w, m->start);
        ccr_writer_key(w, "end", 0);
        ccr_writer_hex(w, m->end);
        ccr_writer_key(w, "bias", 0);
        ccr_writer_hex(w, m->bias);
        ccr_writer_key(w, "build_id", 0);
        ccr_writer_hex_bytes(w, m->build_id, m->build_id_length);
        ccr_writer_text(w, "}\n");
    }
}

void ccr_record_write_modules(ccr_writer *w) {
    ccr_record_write_module_table(w, ccr_global.modules, ccr_global.module_count);
}

void ccr_record_finish(ccr_writer *w, uint64_t started_ns) {
    ccr_writer_text(w, "{\"type\":\"end\"");
    ccr_writer_key(w, "header_ns", 0);
    ccr_writer_uint(w, ccr_global.context.header_done_ns);
    ccr_writer_key(w, "unwind_ns", 0);
    ccr_writer_uint(w, ccr_global.context.unwind_done_ns);
    ccr_writer_key(w, "elapsed_before_sync_ns", 0);
    ccr_writer_uint(w, ccr_now_ns(CLOCK_MONOTONIC) - started_ns);
    ccr_writer_text(w, "}\n");
    ccr_writer_flush(w);
    // Data only: the file's blocks were allocated and synced at install, so no metadata changes
    // unless the record outgrew the prefill. The directory is not synced: if power fails before
    // the rename reaches the disk, the complete record is still in new/ and the next start moves
    // it to pending/.
    fdatasync(ccr_global.record_fd);
    rename(ccr_global.new_path, ccr_global.pending_path);
    uint64_t durable_ns = ccr_now_ns(CLOCK_MONOTONIC) - started_ns;
    // The session is marked crashed once its record is durable, not before: the store writes a
    // page of the mapped session file that writeback has cleaned, and the fault goes through the
    // file system (ext4's page_mkwrite: ~5 % of the handler's samples, tools/profile-capture;
    // Docs/Decisions/0046). A process killed in between leaves a running session beside its
    // record, which the next launch recovers as a crashed one (SessionRecovery).
    if (ccr_global.test_misbehaviour == 12) {   // test: killed after the sync, before the mark
        syscall(SYS_kill, (long)ccr_getpid(), (long)SIGKILL);
    }
    // Once: a fault in the store itself (the file system refusing the page) brings the nested-crash
    // path back here, which must not fault again.
    static volatile sig_atomic_t marking;
    if (ccr_session && !marking) {
        marking = 1;
        atomic_store(&ccr_session->state, CCR_SESSION_CRASHED);
    }
    // Appended after the record is durable; a reader treats it as optional.
    ccr_writer_text(w, "{\"type\":\"timing\"");
    ccr_writer_key(w, "durable_ns", 0);
    ccr_writer_uint(w, durable_ns);
    ccr_writer_text(w, "}\n");
    ccr_writer_flush(w);
}

void ccr_record_write_requests(ccr_writer *w, int crashing_tid, uint64_t now_ns) {
    // No request ever began (not a server, or none yet): nothing to write, and the table's pages,
    // never touched, are not faulted in now.
    if (!atomic_load_explicit(&ccr_global.requests_begun, memory_order_acquire)) return;
    ccr_request_slot copy;
    int written = 0;
    for (int i = 0; i < CCR_REQUEST_SLOTS; i++) {
        ccr_request_slot *slot = &ccr_requests.slots[i];
        uint32_t generation = atomic_load_explicit(&slot->generation, memory_order_acquire);
        if (atomic_load_explicit(&slot->state, memory_order_acquire) != CCR_REQUEST_LIVE) continue;
        memcpy(&copy, slot, sizeof copy);
        atomic_thread_fence(memory_order_acquire);
        // Ended or taken over while copied: the copy may mix two requests. Leave it out.
        if (atomic_load_explicit(&slot->state, memory_order_relaxed) != CCR_REQUEST_LIVE ||
            atomic_load_explicit(&slot->generation, memory_order_relaxed) != generation) {
            continue;
        }
        ccr_writer_text(w, "{\"type\":\"request\"");
        ccr_writer_key(w, "method", 0);
        ccr_writer_json_string(w, copy.method, copy.method_length < sizeof copy.method ? copy.method_length : sizeof copy.method);
        ccr_writer_key(w, "route", 0);
        ccr_writer_json_string(w, copy.route, copy.route_length < sizeof copy.route ? copy.route_length : sizeof copy.route);
        if (copy.request_id_length) {
            ccr_writer_key(w, "request_id", 0);
            ccr_writer_json_string(w, copy.request_id, copy.request_id_length < sizeof copy.request_id ? copy.request_id_length : sizeof copy.request_id);
        }
        if (copy.trace_id_length) {
            ccr_writer_key(w, "trace_id", 0);
            ccr_writer_json_string(w, copy.trace_id, copy.trace_id_length < sizeof copy.trace_id ? copy.trace_id_length : sizeof copy.trace_id);
        }
        ccr_writer_key(w, "tid", 0);
        ccr_writer_int(w, copy.tid);
        ccr_writer_key(w, "age_ms", 0);
        ccr_writer_uint(w, now_ns > copy.started_ns ? (now_ns - copy.started_ns) / 1000000ull : 0);
        ccr_writer_key(w, "crashed_thread", 0);
        ccr_writer_text(w, copy.tid == crashing_tid ? "true}\n" : "false}\n");
        written++;
    }
    uint64_t dropped = atomic_load_explicit(&ccr_requests.dropped, memory_order_relaxed);
    if (written > 0 || dropped > 0) {
        ccr_writer_text(w, "{\"type\":\"requests\"");
        ccr_writer_key(w, "in_flight", 0);
        ccr_writer_int(w, written);
        ccr_writer_key(w, "dropped", 0);
        ccr_writer_uint(w, dropped);
        ccr_writer_text(w, "}\n");
    }
}
