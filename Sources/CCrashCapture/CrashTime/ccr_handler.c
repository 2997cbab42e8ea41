// The signal handler: records raw facts and almost no policy. Symbolication, redaction and upload
// happen on the next launch or offline. Order of work: claim the one-crash guard, store the start
// time and stage the watchdog looks at, put the fixed facts and the module table in the buffer (a
// second fault, or a stall the watchdog ends, writes them out: a record cut short after this point
// can still be symbolicated), unwind, add the frames, write the record once and make it durable
// (the other threads, when listed, come after one write of what is there), then chain to the
// previous handler and end by the same signal.
//
// Installed with SA_SIGINFO | SA_ONSTACK | SA_NODEFER and a mask of every signal but the crash
// signals: SA_NODEFER lets a fault inside the handler re-enter it (the kernel would otherwise kill
// the process silently), and the re-entry writes a minimal "nested_crash" line before dying; the
// mask keeps an app's SIGTERM handler (exit(0)…) from running on this thread mid-crash.
//
// Ending (Docs/Decisions/0018): a fault that will happen again (si_code > 0, not abort, not a
// trap that leaves the pc past the instruction) is ended by restoring the default action and
// returning, so the kernel delivers it again with the original siginfo and context and the core
// dump shows the real fault; a signal sent by a process (si_code <= 0) or by abort() is re-raised
// with tgkill.
//
// fork(): a child inherits this handler, the prefilled record file (and its offset), the session
// mapping and the watchdog pipe, but not the watchdog thread. The handler compares the raw
// getpid() with the pid saved at install; in a child's first crash it takes an identity of its
// own (ccr_fork.c: record id, pid, record file, an alarm(2) watchdog; no session, no parent's
// pipe) and records the crash there, so the parent's file, session and watchdog stay the parent's.
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "ccr_crashtime.h"
#include "ccr_session.h"
#include "ccr_modules_live.h"
#include "ccr_threads.h"
#include "ccr_sender.h"

enum {
    STAGE_HEADER = 1,    // fixed facts and modules
    STAGE_UNWIND = 2,
    STAGE_FRAMES = 3,
    STAGE_FINISH = 4,
    STAGE_CHAINED = 5,   // record durable; running the previous handler
};

// Holds a whole record of the crashing thread alone (header, ~55 modules, frames: ~17 KB), so that
// it is written once, right before its fdatasync, as the disk's floor is (Decision 0064).
static char handler_buffer[32768];
static ccr_writer handler_writer;
/// Set once the fixed facts, modules and requests are in handler_buffer, and the handler leaves the
/// buffer alone until it claims the finish.
static atomic_int facts_buffered;

int ccr_handler_facts_are_buffered(void) {
    return atomic_load(&facts_buffered);
}

int ccr_handler_flush_facts_for_watchdog(int wait_ms) {
    // Called by the watchdog once it has claimed the finish: the handler then never writes the
    // buffer again (its claim fails after the walk). A handler slower than the timeout but still
    // going (a starved thread) gets up to `wait_ms` more to put the facts in.
    for (int waited = 0; !atomic_load(&facts_buffered) && waited < wait_ms; waited++) poll(NULL, 0, 1);
    if (!atomic_load(&facts_buffered)) return 0;
    ccr_writer_flush(&handler_writer);
    return 1;
}

int ccr_gettid(void) {
    return (int)syscall(SYS_gettid);
}

int ccr_getpid(void) {
    return (int)syscall(SYS_getpid);
}

static void restore_default_action(int signo) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = SIG_DFL;
    sigemptyset(&action.sa_mask);
    sigaction(signo, &action, NULL);
}

void ccr_die(int signo) {
    restore_default_action(signo);
    sigset_t unblock;
    sigemptyset(&unblock);
    sigaddset(&unblock, signo);
    pthread_sigmask(SIG_UNBLOCK, &unblock, NULL);
    // The raw getpid(), not the pid saved at install: in a forked child that tgid would not hold
    // this thread and tgkill would fail with ESRCH.
    syscall(SYS_tgkill, (long)ccr_getpid(), (long)ccr_gettid(), (long)signo);
    // Still here only if the signal is ignored by the kernel for this thread: return and let the
    // faulting instruction run again under the default action.
}

/// Whether returning from the handler re-executes the faulting instruction, so the kernel
/// delivers the same signal again with the same siginfo. Async-signal-safe.
static int fault_repeats_on_return(int signo, const siginfo_t *info) {
    if (info == NULL || info->si_code <= 0) return 0;   // sent by a process (kill, tgkill, raise)
    switch (signo) {
    case SIGSEGV: case SIGBUS: case SIGILL: case SIGFPE:
        return 1;   // the pc is at the faulting instruction
#if defined(__aarch64__)
    case SIGTRAP:
        return info->si_code == TRAP_BRKPT;   // brk: the pc stays on the instruction
#endif
    default:
        // SIGABRT; SIGTRAP on x86_64 (int3 leaves the pc after the instruction); SIGSYS (the
        // filtered system call returns and execution continues after it).
        return 0;
    }
}

void ccr_end_by_signal(int signo, const siginfo_t *info) {
    if (fault_repeats_on_return(signo, info)) {
        restore_default_action(signo);
        return;   // the fault re-fires under SIG_DFL: core dump with the original siginfo
    }
    ccr_die(signo);
}

static const char *signal_name(int signo) {
    switch (signo) {
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGILL: return "SIGILL";
    case SIGFPE: return "SIGFPE";
    case SIGTRAP: return "SIGTRAP";
    case SIGSYS: return "SIGSYS";
    default: return "UNKNOWN";
    }
}

static const char *code_name(int signo, int code) {
    switch (code) {
    case SI_USER: return "SI_USER";
    case SI_KERNEL: return "SI_KERNEL";
    case SI_QUEUE: return "SI_QUEUE";
    case SI_TKILL: return "SI_TKILL";
    default: break;
    }
    switch (signo) {
    case SIGSEGV:
        switch (code) {
        case SEGV_MAPERR: return "SEGV_MAPERR";
        case SEGV_ACCERR: return "SEGV_ACCERR";
        default: return "";
        }
    case SIGBUS:
        switch (code) {
        case BUS_ADRALN: return "BUS_ADRALN";
        case BUS_ADRERR: return "BUS_ADRERR";
        case BUS_OBJERR: return "BUS_OBJERR";
        default: return "";
        }
    case SIGILL:
        switch (code) {
        case ILL_ILLOPC: return "ILL_ILLOPC";
        case ILL_ILLOPN: return "ILL_ILLOPN";
        case ILL_ILLADR: return "ILL_ILLADR";
        case ILL_ILLTRP: return "ILL_ILLTRP";
        case ILL_PRVOPC: return "ILL_PRVOPC";
        default: return "";
        }
    case SIGFPE:
        switch (code) {
        case FPE_INTDIV: return "FPE_INTDIV";
        case FPE_INTOVF: return "FPE_INTOVF";
        case FPE_FLTDIV: return "FPE_FLTDIV";
        case FPE_FLTINV: return "FPE_FLTINV";
        default: return "";
        }
    case SIGTRAP:
        switch (code) {
        case TRAP_BRKPT: return "TRAP_BRKPT";
        case TRAP_TRACE: return "TRAP_TRACE";
        default: return "";
        }
    case SIGSYS:
        return code == 1 ? "SYS_SECCOMP" : "";
    default:
        return "";
    }
}

/// `,"name":"0x…"` (no comma for the first), made in a stack buffer and copied once, as the frame
/// lines are (ccr_record.c).
static void write_register(ccr_writer *w, const char *name, uint64_t value, int first) {
    char item[48];
    size_t n = 0;
    if (!first) item[n++] = ',';
    item[n++] = '"';
    for (const char *c = name; *c != '\0' && n < 16; c++) item[n++] = *c;   // names are at most 6 bytes
    memcpy(item + n, "\":\"0x", 5);
    n += 5;
    n += ccr_format_hex(item + n, value);
    item[n++] = '"';
    ccr_writer_raw(w, item, n);
}

static void write_registers(ccr_writer *w, const ucontext_t *uc) {
    ccr_writer_text(w, "{\"type\":\"registers\",\"values\":{");
#if defined(__x86_64__)
    static const struct { const char *name; int index; } regs[] = {
        {"rax", REG_RAX}, {"rbx", REG_RBX}, {"rcx", REG_RCX}, {"rdx", REG_RDX},
        {"rsi", REG_RSI}, {"rdi", REG_RDI}, {"rbp", REG_RBP}, {"rsp", REG_RSP},
        {"r8", REG_R8}, {"r9", REG_R9}, {"r10", REG_R10}, {"r11", REG_R11},
        {"r12", REG_R12}, {"r13", REG_R13}, {"r14", REG_R14}, {"r15", REG_R15},
        {"rip", REG_RIP}, {"eflags", REG_EFL}, {"err", REG_ERR},
        {"trapno", REG_TRAPNO}, {"cr2", REG_CR2},
    };
    for (size_t i = 0; i < sizeof regs / sizeof regs[0]; i++) {
        write_register(w, regs[i].name, (uint64_t)uc->uc_mcontext.gregs[regs[i].index], i == 0);
    }
    // REG_CSGSFS packs cs (bits 0-15), gs (16-31) and fs (32-47) in one slot.
    uint64_t segments = (uint64_t)uc->uc_mcontext.gregs[REG_CSGSFS];
    write_register(w, "cs", segments & 0xffff, 0);
    write_register(w, "gs", (segments >> 16) & 0xffff, 0);
    write_register(w, "fs", (segments >> 32) & 0xffff, 0);
#elif defined(__aarch64__)
    static const char *names[31] = {
        "x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11", "x12", "x13", "x14", "x15",
        "x16", "x17", "x18", "x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26", "x27", "x28", "fp", "lr",
    };
    for (int i = 0; i < 31; i++) write_register(w, names[i], uc->uc_mcontext.regs[i], i == 0);
    write_register(w, "sp", uc->uc_mcontext.sp, 0);
    write_register(w, "pc", uc->uc_mcontext.pc, 0);
    write_register(w, "pstate", uc->uc_mcontext.pstate, 0);
#endif
    ccr_writer_text(w, "}}\n");
}

static void capture_context(ccr_crash_context *c, const ucontext_t *uc) {
#if defined(__x86_64__)
    c->pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
    c->sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
    c->fp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
#elif defined(__aarch64__)
    c->pc = (uintptr_t)uc->uc_mcontext.pc;
    c->sp = (uintptr_t)uc->uc_mcontext.sp;
    c->fp = (uintptr_t)uc->uc_mcontext.regs[29];
#endif
}

/// A fault just below the stack pointer (within 64 KiB under it, or a page above) is the thread
/// running into its stack's guard region: a push, a call or a new frame's first store. Reads
/// the context captured at entry. Async-signal-safe.
static int looks_like_stack_overflow(int signo, const siginfo_t *info) {
    if ((signo != SIGSEGV && signo != SIGBUS) || info == NULL || info->si_code <= 0) return 0;
    uintptr_t fault = (uintptr_t)info->si_addr;
    uintptr_t sp = ccr_global.context.sp;
    if (sp == 0 || fault == 0) return 0;
    return fault >= sp ? fault - sp < 4096 : sp - fault <= 64 * 1024;
}

static void write_header(ccr_writer *w, int signo, const siginfo_t *info, const ucontext_t *uc, int tid) {
    ccr_writer_text(w, "{\"format\":\"swift-crash-reporting.crash-record\"");
    ccr_writer_key(w, "version", 0);
    ccr_writer_int(w, CCR_RECORD_VERSION);
    ccr_writer_key(w, "id", 0);
    ccr_writer_json_string(w, ccr_global.record_id, sizeof ccr_global.record_id);
    ccr_writer_key(w, "app_id", 0);
    ccr_writer_json_string(w, ccr_global.app_id, sizeof ccr_global.app_id);
    ccr_writer_key(w, "app_version", 0);
    ccr_writer_json_string(w, ccr_global.app_version, sizeof ccr_global.app_version);
    ccr_writer_key(w, "pid", 0);
    ccr_writer_int(w, ccr_global.pid);
    ccr_writer_key(w, "timestamp_ns", 0);
    ccr_writer_uint(w, ccr_now_ns(CLOCK_REALTIME));
    if (ccr_global.forked_from_pid) {
        ccr_writer_key(w, "forked_from_pid", 0);
        ccr_writer_int(w, ccr_global.forked_from_pid);
        ccr_writer_key(w, "forked_from_id", 0);
        ccr_writer_json_string(w, ccr_global.forked_from_id, sizeof ccr_global.forked_from_id);
    }
#if defined(__x86_64__)
    ccr_writer_text(w, ",\"arch\":\"x86_64\"}\n");
#elif defined(__aarch64__)
    ccr_writer_text(w, ",\"arch\":\"aarch64\"}\n");
#endif

    ccr_writer_text(w, "{\"type\":\"signal\"");
    ccr_writer_key(w, "signo", 0);
    ccr_writer_int(w, signo);
    ccr_writer_key(w, "name", 0);
    ccr_writer_json_string(w, signal_name(signo), 16);
    ccr_writer_key(w, "code", 0);
    ccr_writer_int(w, info ? info->si_code : 0);
    ccr_writer_key(w, "code_name", 0);
    ccr_writer_json_string(w, info ? code_name(signo, info->si_code) : "", 16);
    if (info && info->si_code > 0) {   // raised by the CPU: si_addr is the faulting address
        ccr_writer_key(w, "fault_address", 0);
        ccr_writer_hex(w, (uint64_t)(uintptr_t)info->si_addr);
    }
    if (info && info->si_code <= 0) {   // sent by a process: si_addr overlaps the sender's pid and uid
        ccr_writer_key(w, "sender_pid", 0);
        ccr_writer_int(w, info->si_pid);
    }
    if (looks_like_stack_overflow(signo, info)) ccr_writer_text(w, ",\"stack_overflow\":true");
    ccr_writer_text(w, "}\n");

    char name[17];
    memset(name, 0, sizeof name);
    syscall(SYS_prctl, (long)PR_GET_NAME, (long)name, 0L, 0L, 0L);
    ccr_writer_text(w, "{\"type\":\"thread\"");
    ccr_writer_key(w, "tid", 0);
    ccr_writer_int(w, tid);
    ccr_writer_key(w, "name", 0);
    ccr_writer_json_string(w, name, 16);
    ccr_writer_key(w, "main", 0);
    ccr_writer_text(w, tid == ccr_global.pid ? "true" : "false");
    ccr_writer_text(w, ",\"crashed\":true}\n");

    if (uc) write_registers(w, uc);

    // Breadcrumbs, keys and user id stay in the mapped session file (it outlives the process);
    // the next launch attaches them to this record. Here: say which session it is (it is marked
    // crashed once the record is durable, ccr_record_finish).
    ccr_session_file *session = ccr_session;
    if (session) {
        ccr_writer_text(w, "{\"type\":\"session\"");
        ccr_writer_key(w, "id", 0);
        ccr_writer_json_string(w, session->session_id, sizeof session->session_id);
        ccr_writer_key(w, "breadcrumbs_written", 0);
        ccr_writer_uint(w, ccr_session_breadcrumbs_written(session));
        ccr_writer_text(w, "}\n");
    }

    // The Swift runtime stores "Fatal error: …" here before trapping (in debug builds; -O traps
    // for bounds and unwrap failures are bare and leave it empty).
    const char *message = ccr_global.fatal_message ? atomic_load(ccr_global.fatal_message) : NULL;
    if (message) {
        ccr_writer_text(w, "{\"type\":\"fatal_message\"");
        ccr_writer_key(w, "text", 0);
        ccr_writer_json_string(w, message, 4096);
        ccr_writer_text(w, "}\n");
    }
}

/// A fault inside the handler: keep what was written, say where it stopped, and die.
static void handle_nested_crash(int signo, const siginfo_t *info) {
    int stage = atomic_load(&ccr_global.stage);
    int original = ccr_global.context.signo;
    if (stage < STAGE_CHAINED) {
        int expected = CCR_FINISHER_NONE;
        if (atomic_compare_exchange_strong(&ccr_global.finisher, &expected, CCR_FINISHER_HANDLER) ||
            expected == CCR_FINISHER_HANDLER) {
            // The interrupted line may be half-written: flush it, end it, then add ours.
            ccr_writer *w = &handler_writer;
            ccr_writer_flush(w);
            ccr_writer_text(w, "\n{\"type\":\"nested_crash\"");
            ccr_writer_key(w, "signo", 0);
            ccr_writer_int(w, signo);
            ccr_writer_key(w, "code", 0);
            ccr_writer_int(w, info ? info->si_code : 0);
            ccr_writer_key(w, "stage", 0);
            ccr_writer_int(w, stage);
            ccr_writer_text(w, "}\n");
            ccr_record_finish(w, ccr_global.context.started_ns);
        } else if (expected == CCR_FINISHER_WATCHDOG) {
            // The watchdog is finishing the record, and ends the process when done. What the buffer
            // holds goes first: written here unless the watchdog has it already (the facts marked
            // buffered). Then wait for the watchdog, bounded.
            if (!atomic_load(&facts_buffered)) {
                ccr_writer_flush(&handler_writer);
                atomic_store(&facts_buffered, 1);
            }
            int timeout_ms = ccr_global.watchdog_timeout_ms > 0 ? ccr_global.watchdog_timeout_ms : 2000;
            for (int waited = 0; waited < 2 * timeout_ms + 1000; waited += 10) poll(NULL, 0, 10);
        }
    }
    ccr_die(signo);
    ccr_die(original);
}

/// Another thread owns the crash: wait (bounded) for it to end the process.
static void wait_for_other_crash(int signo, siginfo_t *info, void *ucontext) {
    // 10 s, and the sender's wait (ccr_threads.c, stay_until_the_process_ends). Meanwhile this
    // thread's own crash is noted, and it answers the recording thread's ask with its stack where
    // it crashed: its section says "crashed too".
    ccr_threads_wait_crashed_too(signo, info, ucontext);
    ccr_die(signo);
}

/// Calls the previous action (Swift's backtracer, an app's handler), then ends by the signal
/// (ccr_end_by_signal: re-fault on return, or re-raise). Async-signal-safe as far as the previous
/// handler is.
static void chain_then_end(int signo, siginfo_t *info, void *ucontext) {
    for (int i = 0; i < CCR_SIGNAL_COUNT; i++) {
        if (ccr_global.signals[i] != signo) continue;
        const struct sigaction *previous = &ccr_global.previous[i];
        if (previous->sa_flags & SA_SIGINFO) {
            if (previous->sa_sigaction) previous->sa_sigaction(signo, info, ucontext);
        } else if (previous->sa_handler != SIG_DFL && previous->sa_handler != SIG_IGN) {
            previous->sa_handler(signo);
        }
        break;
    }
    // The previous handler returned (or there was none): end by the same signal.
    ccr_end_by_signal(signo, info);
}

void ccr_handler_prefault(void) {
    // The record's buffer and the crash context are first written by a crash: each of their pages
    // would then be a page fault in the handler (a zeroed page from the kernel). Touched now, on
    // the table's thread, without changing a byte: a crash may have begun meanwhile.
    ccr_touch_pages(handler_buffer, sizeof handler_buffer);
    ccr_touch_pages(&ccr_global.context, sizeof ccr_global.context);
    ccr_touch_pages(&facts_buffered, sizeof facts_buffered);
}

static void misbehave_for_test(void) {
    if (ccr_global.test_misbehaviour == 1) {
        *(volatile int *)(uintptr_t)16 = 1;
    } else if (ccr_global.test_misbehaviour == 2) {
        for (;;) poll(NULL, 0, 1000);
    } else if (ccr_global.test_misbehaviour == 22) {
        // The same stall, with what was buffered in the file already (written before the facts
        // were marked buffered, so the watchdog does not write them again).
        for (;;) poll(NULL, 0, 1000);
    }
}

void ccr_signal_handler(int signo, siginfo_t *info, void *ucontext) {
    // A fault in the crash's own guarded copy (the module read): not a crash; resume the copy at
    // its failure exit.
    if (ccr_safe_copy_recover(signo, info, ucontext)) return;
    uint64_t started = ccr_now_ns(CLOCK_MONOTONIC);
    int saved_errno = errno;
    // A forked child (its pid is not the one saved at install; a second crash in the same child
    // sees the adopted pid and goes on to the guard below).
    int forked = ccr_getpid() != ccr_global.pid;
    int tid = ccr_gettid();

    int expected = 0;
    if (forked) {
        // A child forked while one of the parent's threads was in this handler inherits that
        // thread's claim, but not the thread: a claim whose owner is not in this process is stale.
        int inherited = atomic_load(&ccr_global.crashing_tid);
        if (inherited != 0 && inherited != tid &&
            syscall(SYS_tgkill, (long)ccr_getpid(), (long)inherited, 0L) != 0 && errno == ESRCH) {
            expected = inherited;
        }
    }
    if (!atomic_compare_exchange_strong(&ccr_global.crashing_tid, &expected, tid)) {
        if (expected == tid) handle_nested_crash(signo, info);
        else wait_for_other_crash(signo, info, ucontext);
        errno = saved_errno;
        return;
    }
    if (forked && ccr_fork_adopt() != 0) {
        // No file of its own could be made: the parent's file, session and pipe are not ours to
        // use. Write nothing; die by the signal.
        ccr_end_by_signal(signo, info);
        errno = saved_errno;
        return;
    }

    ucontext_t *uc = (ucontext_t *)ucontext;
    ccr_crash_context *c = &ccr_global.context;
    c->signo = signo;
    c->code = info ? info->si_code : 0;
    c->tid = tid;
    c->started_ns = started;
    if (uc) capture_context(c, uc);
    // The watchdog sees this within its timeout, and times the handler from `started` (it is not
    // woken: Decision 0057).
    atomic_store(&ccr_global.stage, STAGE_HEADER);

    ccr_writer *w = &handler_writer;
    atomic_store(&facts_buffered, 0);
    ccr_writer_init(w, ccr_global.record_fd, handler_buffer, sizeof handler_buffer);
    // The record stays in the buffer until it is whole: one write, then the sync (Decision 0064).
    // A fault in the handler flushes it (handle_nested_crash), and so does the watchdog if the
    // handler stalls once the fixed facts are in (ccr_handler_flush_facts_for_watchdog).
    write_header(w, signo, info, uc, tid);
    // Right after start, the module table and libunwind may still be being made on a background
    // thread (defer_libunwind): wait for them, at most 50 ms.
    (void)ccr_libunwind_ready(1);
    ccr_record_write_modules_at_crash(w);   // the loader's list now, else the table from start
    if (!ccr_global.forked_from_pid) ccr_record_write_requests(w, tid, started);   // a child's are the parent's
    // test (hang-in-handler-after-write): a fixture that watches the file from outside (another
    // process, or a thread acting at that moment) sees the stall's record
    if (ccr_global.test_misbehaviour == 22) ccr_writer_flush(w);
    // From here until it claims the finish, the handler does not touch the buffer: the watchdog
    // may write it out if the walk stalls.
    atomic_store(&facts_buffered, 1);
    c->header_done_ns = ccr_now_ns(CLOCK_MONOTONIC) - started;
    misbehave_for_test();

    atomic_store(&ccr_global.stage, STAGE_UNWIND);
    uintptr_t frames[CCR_MAX_FRAMES];
    int depth = 0, lower_bound = 0, step_error = 0;
    int kept = uc ? ccr_unwind_libunwind(uc, frames, CCR_MAX_FRAMES, &depth, &lower_bound, &step_error) : -1;
    c->unwind_done_ns = ccr_now_ns(CLOCK_MONOTONIC) - started;

    int claim = CCR_FINISHER_NONE;
    if (!atomic_compare_exchange_strong(&ccr_global.finisher, &claim, CCR_FINISHER_HANDLER)) {
        // The watchdog decided we took too long and is finishing the record; it ends the process.
        for (;;) poll(NULL, 0, 1000);
    }
    atomic_store(&ccr_global.stage, STAGE_FRAMES);
    if (kept < 0) {
        kept = ccr_unwind_frame_pointers_from(c->pc, c->sp, c->fp, frames, CCR_MAX_FRAMES, &depth);
        ccr_record_write_frames(w, frames, kept);
        ccr_record_write_stack(w, ccr_libunwind_fallback_reason(), kept, depth, 0, 0, 0, 0, 0, 0, 0);
    } else {
        ccr_record_write_frames(w, frames, kept);
        const uintptr_t *outer = NULL, *entry = NULL;
        int outer_first = 0, entry_first = 0;
        int outer_count = ccr_unwind_outer_frames(&outer, &outer_first);
        int after_outer = outer_count > 0 ? outer_first + outer_count : depth;
        // A recursion cut by the limit: where it was entered, then the outermost frames (those the
        // entry's already holds left out), each group with its true indices. An entry within the
        // outermost 10 is among them already.
        int entry_count = ccr_unwind_entry_frames(&entry, &entry_first);
        if (entry_count > 0 && entry_first < outer_first) {
            ccr_record_write_outer_frames(w, entry, entry_count, entry_first);
            int overlap = entry_first + entry_count - outer_first;
            if (overlap > outer_count) overlap = outer_count;
            if (overlap > 0) {
                outer += overlap;
                outer_first += overlap;
                outer_count -= overlap;
            }
        }
        ccr_record_write_outer_frames(w, outer, outer_count, outer_first);
        const uintptr_t *awaiting = NULL;
        int awaiting_count = ccr_unwind_async_frames(&awaiting);
        ccr_record_write_async_frames(w, awaiting, awaiting_count, after_outer);
        int copy_checks = 0, copy_check_faults = 0, table_lookups = 0, table_scans = 0, table_misses = 0;
        ccr_unwind_copy_checks(&copy_checks, &copy_check_faults);
        ccr_unwind_table_lookups(&table_lookups, &table_scans, &table_misses);
        ccr_record_write_stack(w, step_error ? "libunwind+frame-pointer" : "libunwind", kept, depth, lower_bound, step_error,
                               copy_checks, copy_check_faults, table_lookups, table_scans, table_misses);
    }
    // Every other thread, after the crashing one. Asking them takes a bounded wait: the crashing
    // thread's record is written out first.
    if (ccr_threads.enabled) ccr_writer_flush(w);
    ccr_threads_write(w, tid, started);


    atomic_store(&ccr_global.stage, STAGE_FINISH);
    ccr_record_finish(w, started);
    ccr_watchdog_stand_down();

    ccr_fork_stop_watchdog();
    ccr_crash_line_write(signo, info, tid, frames, kept, depth, lower_bound, looks_like_stack_overflow(signo, info));   // opt-in; after the record is durable
    int sender_status;
    uint64_t sender_waited_ns;
    ccr_sender_run(&sender_status, &sender_waited_ns);      // opt-in: deliver now, bounded wait
    (void)sender_status;
    (void)sender_waited_ns;

    atomic_store(&ccr_global.stage, STAGE_CHAINED);
    errno = saved_errno;
    chain_then_end(signo, info, ucontext);
    errno = saved_errno;
}
