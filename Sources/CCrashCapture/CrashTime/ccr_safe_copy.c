// A memory copy that a fault cannot turn into a second crash: the crash's read of the loader's
// list copies its pieces with it instead of through a pipe (Docs/Decisions/0055). Its one access
// to the source is a known instruction; a SIGSEGV or SIGBUS raised there reaches our handler, which
// moves the interrupted context to the function's failure exit and returns (the way a JVM reads
// memory it cannot vouch for), so the copy answers -1; the caller treats what it did not get as
// not confirmed (the module walk then reads those objects one by one by process_vm_readv).
// Written in assembly so that the faulting instruction, its registers and the exit are known.
// Only for code that runs inside our crash handler and has checked ccr_safe_copy_recoverable().
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <ucontext.h>

#include "ccr_crashtime.h"

#if defined(__x86_64__)
// rdi: to, rsi: from, rdx: length. `rep movsb` faults with rip at itself (rcx, rsi and rdi say how
// far it got); the ABI leaves the direction flag clear at a call, and the kernel clears it for a
// handler. `endbr64` (a no-op without CET) keeps the entry valid for an indirect call.
__asm__(".pushsection .text\n"
        ".p2align 4\n"
        ".globl ccr_safe_copy\n.hidden ccr_safe_copy\n.type ccr_safe_copy, @function\n"
        ".globl ccr_safe_copy_access\n.hidden ccr_safe_copy_access\n"
        ".globl ccr_safe_copy_failed\n.hidden ccr_safe_copy_failed\n"
        "ccr_safe_copy:\n"
        "    endbr64\n"
        "    movq %rdx, %rcx\n"
        "ccr_safe_copy_access:\n"
        "    rep movsb\n"
        "    xorl %eax, %eax\n"
        "    ret\n"
        "ccr_safe_copy_failed:\n"
        "    movq $-1, %rax\n"
        "    ret\n"
        ".size ccr_safe_copy, .-ccr_safe_copy\n"
        ".popsection\n");
#elif defined(__aarch64__)
// x0: to, x1: from, x2: length. A byte at a time; the load is the one access to the source.
// `hint #34` is `bti c` (a no-op without BTI): the entry stays valid for an indirect call in a
// binary built with branch protection. The failure exit is reached by sigreturn, not a branch.
__asm__(".pushsection .text\n"
        ".p2align 2\n"
        ".globl ccr_safe_copy\n.hidden ccr_safe_copy\n.type ccr_safe_copy, %function\n"
        ".globl ccr_safe_copy_access\n.hidden ccr_safe_copy_access\n"
        ".globl ccr_safe_copy_failed\n.hidden ccr_safe_copy_failed\n"
        "ccr_safe_copy:\n"
        "    hint #34\n"
        "    cbz x2, 2f\n"
        "ccr_safe_copy_access:\n"
        "    ldrb w3, [x1], #1\n"
        "    strb w3, [x0], #1\n"
        "    subs x2, x2, #1\n"
        "    b.ne ccr_safe_copy_access\n"
        "2:  mov x0, #0\n"
        "    ret\n"
        "ccr_safe_copy_failed:\n"
        "    mov x0, #-1\n"
        "    ret\n"
        ".size ccr_safe_copy, .-ccr_safe_copy\n"
        ".popsection\n");
#else
#error "unsupported architecture"
#endif

extern const char ccr_safe_copy_access[] __attribute__((visibility("hidden")));
extern const char ccr_safe_copy_failed[] __attribute__((visibility("hidden")));

/// A fault the load itself raised, delivered at once: not a signal sent by a process (si_code <= 0)
/// nor one the kernel queues later for something else (SIGBUS BUS_MCEERR_AO, an asynchronous
/// memory-tagging fault), which could arrive while the pc happens to be on the copy's instruction.
/// Async-signal-safe.
static int synchronous_fault(int signo, int code) {
    if (signo == SIGSEGV) return code == SEGV_MAPERR || code == SEGV_ACCERR || code == 4 /* SEGV_PKUERR */ || code == SI_KERNEL;
    if (signo == SIGBUS) return code == BUS_ADRALN || code == BUS_ADRERR || code == BUS_OBJERR || code == 4 /* BUS_MCEERR_AR */;
    return 0;
}

int ccr_safe_copy_recover(int signo, const siginfo_t *info, void *ucontext) {
    if (info == NULL || ucontext == NULL || !synchronous_fault(signo, info->si_code)) return 0;
    ucontext_t *uc = (ucontext_t *)ucontext;
#if defined(__x86_64__)
    if ((uintptr_t)uc->uc_mcontext.gregs[REG_RIP] != (uintptr_t)ccr_safe_copy_access) return 0;
    uc->uc_mcontext.gregs[REG_RIP] = (greg_t)(uintptr_t)ccr_safe_copy_failed;
#elif defined(__aarch64__)
    if ((uintptr_t)uc->uc_mcontext.pc != (uintptr_t)ccr_safe_copy_access) return 0;
    uc->uc_mcontext.pc = (uintptr_t)ccr_safe_copy_failed;
#endif
    return 1;
}

int ccr_safe_copy_recoverable(void) {
    // Blocked, a fault is not delivered: the kernel kills the process.
    sigset_t blocked;
    if (pthread_sigmask(SIG_BLOCK, NULL, &blocked) != 0) return 0;
    static const int faults[] = {SIGSEGV, SIGBUS};
    for (unsigned i = 0; i < sizeof faults / sizeof faults[0]; i++) {
        if (sigismember(&blocked, faults[i]) != 0) return 0;
        // Another handler installed since start would take the fault as a crash of its own; ours
        // without SA_NODEFER would have the signal blocked while it runs for it.
        struct sigaction current;
        if (sigaction(faults[i], NULL, &current) != 0) return 0;
        if (!(current.sa_flags & SA_SIGINFO) || current.sa_sigaction != ccr_signal_handler || !(current.sa_flags & SA_NODEFER)) return 0;
    }
    return 1;
}

// Only the crash handler's thread asks, once the handler has claimed the crash; the process does
// not outlive it. A child forked while the parent was in its handler forgets it (ccr_fork_adopt).
static int answer_in_crash;   // 0: not asked, 1: yes, 2: no

int ccr_safe_copy_recoverable_in_crash(void) {
    if (answer_in_crash == 0) answer_in_crash = ccr_safe_copy_recoverable() ? 1 : 2;
    return answer_in_crash == 1;
}

void ccr_safe_copy_forget_crash_answer(void) {
    answer_in_crash = 0;
}

void ccr_safe_copy_prefault(void) {
    ccr_touch_pages(&answer_in_crash, sizeof answer_in_crash);
}
