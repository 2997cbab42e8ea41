// Stack walking at crash time: libunwind first, saved frame pointers as the watchdog's fallback.
// Why UNW_INIT_SIGNAL_FRAME: swiftc places `ud2` right after a function's `ret`, so plain
// unw_init_local on the ucontext looks up the wrong function and yields 2 frames for -O traps.
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "ccr_crashtime.h"

/// Reads one word of this process's memory without risking a fault. Async-signal-safe.
static int read_word(uintptr_t address, uintptr_t *out);

// The crashing thread's outermost frames beyond `max`: a ring of the last CCR_OUTER_FRAMES seen.
static uintptr_t outer_ring[CCR_OUTER_FRAMES];
static uintptr_t outer_ordered[CCR_OUTER_FRAMES];
static int outer_seen;        // frames pushed into the ring
static int outer_first_index; // true index of outer_ordered[0]

static void outer_push(uintptr_t ip) {
    outer_ring[outer_seen % CCR_OUTER_FRAMES] = ip;
    outer_seen++;
}

int ccr_unwind_outer_frames(const uintptr_t **frames, int *first_index) {
    int count = outer_seen < CCR_OUTER_FRAMES ? outer_seen : CCR_OUTER_FRAMES;
    int start = outer_seen - count;   // ring position of the oldest kept
    for (int i = 0; i < count; i++) outer_ordered[i] = outer_ring[(start + i) % CCR_OUTER_FRAMES];
    *frames = outer_ordered;
    *first_index = outer_first_index + start;
    return count;
}

int ccr_unwind_libunwind(void *ucontext, uintptr_t *frames, int max, int *depth, int *depth_is_lower_bound, int *step_error) {
    const ccr_libunwind *u = &ccr_global.unwind;
    unw_cursor_t cursor;
    *depth = 0;
    *depth_is_lower_bound = 0;
    if (step_error) {
        *step_error = 0;
        outer_seen = 0;
        outer_first_index = max;
    }
    if (u->init_local2 == NULL) return -1;
    int kept = 0;
    int counted = 0;
    // A call through a NULL function pointer faults at pc 0, where no unwind info exists. The
    // call left the caller's return address at [sp] (x86_64) or in lr (aarch64): record frame 0
    // as 0 and unwind from that return address, as if the callee had already returned.
    ucontext_t caller;
    const ucontext_t *uc = (const ucontext_t *)ucontext;
#if defined(__x86_64__)
    if (uc->uc_mcontext.gregs[REG_RIP] == 0) {
        uintptr_t return_address = 0;
        if (read_word((uintptr_t)uc->uc_mcontext.gregs[REG_RSP], &return_address) == 0 && return_address != 0) {
            caller = *uc;
            caller.uc_mcontext.gregs[REG_RIP] = (greg_t)return_address;
            caller.uc_mcontext.gregs[REG_RSP] += (greg_t)sizeof(uintptr_t);
            if (max > 0) frames[kept++] = 0;
            counted++;
            ucontext = &caller;
        }
    }
#elif defined(__aarch64__)
    if (uc->uc_mcontext.pc == 0 && uc->uc_mcontext.regs[30] != 0) {
        caller = *uc;
        caller.uc_mcontext.pc = uc->uc_mcontext.regs[30];
        if (max > 0) frames[kept++] = 0;
        counted++;
        ucontext = &caller;
    }
#endif
    if (u->init_local2(&cursor, ucontext, UNW_INIT_SIGNAL_FRAME) < 0) return -1;
    for (;;) {
        uintptr_t ip = 0;
        if (u->get_reg(&cursor, UNW_REG_IP, &ip) < 0 || ip == 0) break;
        if (kept < max) frames[kept++] = ip;
        else if (step_error) outer_push(ip);
        counted++;
        if (counted >= CCR_MAX_COUNTED_FRAMES) {
            *depth_is_lower_bound = 1;
            break;
        }
        // test: libunwind fails (-UNW_EBADFRAME, 7) at the third frame of the crashing thread,
        // the cursor left where it was, as a failed step leaves it
        int stepped = ccr_global.test_misbehaviour == 6 && step_error != NULL && counted == 3 ? -7 : u->step(&cursor);
        if (stepped == 0) break;   // the outermost frame
        if (stepped < 0) {
            // An error is not the end of the stack: say so, and go on from this frame's saved frame
            // pointer (what the frame-pointer walk would do), the depth then a lower bound.
            if (step_error) *step_error = stepped;
            *depth_is_lower_bound = 1;
            uintptr_t fp = 0;
#if defined(__x86_64__)
            int fp_register = UNW_X86_64_RBP;
#elif defined(__aarch64__)
            int fp_register = UNW_AARCH64_X29;
#endif
            if (u->get_reg(&cursor, fp_register, &fp) == 0) {
                uintptr_t rest[CCR_MAX_FRAMES];
                int more = 0;
                ccr_unwind_frame_pointers(0, fp, rest, CCR_MAX_FRAMES, &more);
                for (int i = 0; i < more && counted < CCR_MAX_COUNTED_FRAMES; i++) {
                    if (kept < max) frames[kept++] = rest[i];
                    else if (step_error) outer_push(rest[i]);
                    counted++;
                }
            }
            break;
        }
    }
    *depth = counted;
    return kept;
}

static int read_word(uintptr_t address, uintptr_t *out) {
    struct iovec local = {.iov_base = out, .iov_len = sizeof *out};
    struct iovec remote = {.iov_base = (void *)address, .iov_len = sizeof *out};
    long n = syscall(SYS_process_vm_readv, (long)ccr_global.pid, &local, 1L, &remote, 1L, 0L);
    return n == (long)sizeof *out ? 0 : -1;
}

int ccr_unwind_frame_pointers(uintptr_t pc, uintptr_t fp, uintptr_t *frames, int max, int *depth) {
    int kept = 0;
    if (max > 0 && pc != 0) frames[kept++] = pc;
    while (kept < max && fp != 0 && (fp & (sizeof(uintptr_t) - 1)) == 0) {
        uintptr_t next_fp = 0, return_address = 0;
        if (read_word(fp, &next_fp) != 0 || read_word(fp + sizeof(uintptr_t), &return_address) != 0) break;
        if (return_address == 0) break;
        frames[kept++] = return_address;
        if (next_fp <= fp) break;   // frames grow towards higher addresses; anything else is garbage
        fp = next_fp;
    }
    *depth = kept;
    return kept;
}
