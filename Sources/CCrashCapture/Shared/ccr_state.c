// Storage for the crash-time state. Static so that nothing needs allocating when a crash happens.
#include "ccr_state.h"

ccr_state ccr_global = {
    .record_fd = -1,
    .watchdog_fd = {-1, -1},
    .unwind = {.pipe_fd = {-1, -1}, .reserved_fd = {-1, -1}},
};

int ccr_test_crash_begun(void) {
    return atomic_load(&ccr_global.crashing_tid) != 0;
}
