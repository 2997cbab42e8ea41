// The body of a hang report (Docs/Decisions/0029): the module table and every thread's stack,
// the stalled one first, written by the hang monitor's thread into a record file the Swift side
// opened and headed. Uses the crash path's own pieces (the live module walk, the all-threads
// collection), so it is held to the same rules, but it never runs in a signal handler.
#include <time.h>

#include "ccr_crashtime.h"
#include "ccr_modules_live.h"
#include "ccr_threads.h"

static char hang_buffer[16384];

int ccr_write_hang_record(int fd, int hung_tid, uint64_t *elapsed_ns) {
    uint64_t started = ccr_now_ns(CLOCK_MONOTONIC);
    if (ccr_threads_begin_hang_capture() != 0) return -1;
    ccr_writer w;
    ccr_writer_init(&w, fd, hang_buffer, sizeof hang_buffer);
    ccr_record_write_modules_for_hang(&w);
    if (ccr_threads_write_for_hang(&w, hung_tid) != 0) return -1;
    ccr_writer_flush(&w);
    *elapsed_ns = ccr_now_ns(CLOCK_MONOTONIC) - started;
    return w.failed ? -1 : 0;
}
