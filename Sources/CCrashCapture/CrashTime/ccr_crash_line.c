// One JSON line per crash on standard error (opt-in), written after the record is durable: what
// journald, Docker's log driver or an ELK shipper keep even when the host never restarts and no
// collector is reachable. It names the record, the signal, the thread and the innermost frames as
// module + file offset with the module's build-id, so `crashtool symbolicate` can read it alone.
#include <signal.h>
#include <stdint.h>
#include <time.h>

#include "ccr_crash_line.h"
#include "ccr_crashtime.h"
#include "ccr_modules_live.h"

enum { CRASH_LINE_FRAMES = 16 };

static char crash_line_buffer[8192];

/// The last path component. Async-signal-safe.
static const char *base_name(const char *path) {
    const char *last = path;
    for (const char *p = path; *p; p++) {
        if (*p == '/') last = p + 1;
    }
    return last;
}

void ccr_crash_line_write(int signo, const siginfo_t *info, int tid, const uintptr_t *frames, int count, int depth,
                          int depth_is_lower_bound, int stack_overflow) {
    if (ccr_crash_line_fd < 0) return;
    const ccr_module *table = NULL;
    int modules = ccr_modules_written(&table);
    ccr_writer w;
    ccr_writer_init(&w, ccr_crash_line_fd, crash_line_buffer, sizeof crash_line_buffer);
    ccr_writer_text(&w, "{\"swift_crash_reporting\":\"crash\"");
    ccr_writer_key(&w, "id", 0);
    ccr_writer_json_string(&w, ccr_global.record_id, sizeof ccr_global.record_id);
    ccr_writer_key(&w, "app_id", 0);
    ccr_writer_json_string(&w, ccr_global.app_id, sizeof ccr_global.app_id);
    ccr_writer_key(&w, "app_version", 0);
    ccr_writer_json_string(&w, ccr_global.app_version, sizeof ccr_global.app_version);
    ccr_writer_key(&w, "pid", 0);
    ccr_writer_int(&w, ccr_global.pid);
    ccr_writer_key(&w, "tid", 0);
    ccr_writer_int(&w, tid);
    ccr_writer_key(&w, "signo", 0);
    ccr_writer_int(&w, signo);
    ccr_writer_key(&w, "code", 0);
    ccr_writer_int(&w, info ? info->si_code : 0);
    // As the record's signal line: the faulting address for a fault the CPU raised, the sender's
    // pid for a signal a process sent (its si_addr is not an address).
    if (info && info->si_code > 0) {
        ccr_writer_key(&w, "fault_address", 0);
        ccr_writer_hex(&w, (uint64_t)(uintptr_t)info->si_addr);
    } else if (info) {
        ccr_writer_key(&w, "sender_pid", 0);
        ccr_writer_int(&w, info->si_pid);
    }
    if (stack_overflow) ccr_writer_text(&w, ",\"stack_overflow\":true");
    ccr_writer_key(&w, "depth", 0);   // the stack's frames counted, of which the innermost 16 follow
    ccr_writer_int(&w, depth > count ? depth : count);
    if (depth_is_lower_bound) ccr_writer_text(&w, ",\"depth_is_lower_bound\":true");   // as the record's stack line
    ccr_writer_key(&w, "timestamp_ns", 0);
    ccr_writer_uint(&w, ccr_now_ns(CLOCK_REALTIME));
    ccr_writer_text(&w, ",\"frames\":[");
    for (int i = 0; i < count && i < CRASH_LINE_FRAMES; i++) {
        ccr_writer_text(&w, i == 0 ? "{" : ",{");
        ccr_writer_key(&w, "address", 1);
        ccr_writer_hex(&w, frames[i]);
        for (int m = 0; m < modules; m++) {
            if (frames[i] < table[m].start || frames[i] >= table[m].end) continue;
            ccr_writer_key(&w, "module", 0);
            ccr_writer_json_string(&w, base_name(table[m].path), CCR_MODULE_PATH_MAX);
            ccr_writer_key(&w, "path", 0);
            ccr_writer_json_string(&w, table[m].path, CCR_MODULE_PATH_MAX);
            ccr_writer_key(&w, "build_id", 0);
            ccr_writer_hex_bytes(&w, table[m].build_id, table[m].build_id_length);
            ccr_writer_key(&w, "offset", 0);   // file address: address − bias
            ccr_writer_hex(&w, frames[i] - table[m].bias);
            break;
        }
        ccr_writer_text(&w, "}");
    }
    ccr_writer_text(&w, "]}\n");
    ccr_writer_flush(&w);
}
