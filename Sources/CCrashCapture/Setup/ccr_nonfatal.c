// Stacks for non-fatal error reports: the calling thread's stack, unwound with the same private
// libunwind as crashes, written with the module table in the record format. Runs on an app
// thread, never in a signal handler.
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include <sys/prctl.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "CCrashCapture.h"
#include "../CrashTime/ccr_crashtime.h"
#include "ccr_setup.h"

int ccr_write_current_stack(int fd, int skip) {
    // Right after start the deferred libunwind load may still be under way: wait for it a little.
    if (!ccr_global.installed || !ccr_libunwind_wait_deferred(100)) return -1;
    static _Thread_local char buffer[16384];
    ccr_writer w;
    ccr_writer_init(&w, fd, buffer, sizeof buffer);

    char name[17] = {0};
    prctl(PR_GET_NAME, (unsigned long)name, 0, 0, 0);
    int tid = (int)syscall(SYS_gettid);
    ccr_writer_text(&w, "{\"type\":\"thread\"");
    ccr_writer_key(&w, "tid", 0);
    ccr_writer_int(&w, tid);
    ccr_writer_key(&w, "name", 0);
    ccr_writer_json_string(&w, name, 16);
    ccr_writer_text(&w, tid == getpid() ? ",\"main\":true,\"crashed\":false}\n" : ",\"main\":false,\"crashed\":false}\n");

    ucontext_t context;
    unw_cursor_t cursor;
    uintptr_t frames[CCR_MAX_FRAMES];
    int kept = 0, depth = 0;
    if (getcontext(&context) == 0 && ccr_global.unwind.init_local2(&cursor, &context, 0) >= 0) {
        while (ccr_global.unwind.step(&cursor) > 0) {   // the first step leaves this function
            uintptr_t ip = 0;
            if (ccr_global.unwind.get_reg(&cursor, UNW_REG_IP, &ip) < 0 || ip == 0) break;
            if (skip > 0) {
                skip--;
                continue;
            }
            if (kept < CCR_MAX_FRAMES) frames[kept++] = ip;
            if (++depth >= CCR_MAX_COUNTED_FRAMES) break;
        }
    }
    // All are return addresses: write them as such (looked up at address - 1).
    for (int i = 0; i < kept; i++) {
        ccr_writer_text(&w, "{\"type\":\"frame\"");
        ccr_writer_key(&w, "index", 0);
        ccr_writer_int(&w, i);
        ccr_writer_key(&w, "address", 0);
        ccr_writer_hex(&w, frames[i]);
        ccr_writer_text(&w, ",\"kind\":\"return_address\"}\n");
    }
    ccr_record_write_stack(&w, "libunwind", kept, depth, 0, 0, 0, 0, 0, 0, 0);
    ccr_record_write_modules(&w);
    ccr_writer_flush(&w);
    return w.failed ? -1 : 0;
}
