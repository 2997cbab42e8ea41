// The one block of state that the signal handler uses, allocated statically and filled at install.
// Written by the installing thread before the handlers are set; read lock-free at crash time.
// Nothing here is resized or freed after install, so a crash at any moment sees a consistent table.
#ifndef CCR_STATE_H
#define CCR_STATE_H

#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <ucontext.h>

#define CCR_RECORD_VERSION 2
#define CCR_MAX_FRAMES 50
/// Frames counted (not kept) past CCR_MAX_FRAMES to report a stack's true depth; bounded so a
/// runaway recursion cannot keep the handler busy.
#define CCR_MAX_COUNTED_FRAMES 200000
#define CCR_MAX_MODULES 512
#define CCR_MODULE_PATH_MAX 512
#define CCR_BUILD_ID_MAX 32
#define CCR_PATH_MAX 1024
#define CCR_ID_MAX 64
#define CCR_TEXT_MAX 256
#define CCR_SIGNAL_COUNT 7
/// Bytes of '\n' written into the record file at install: blocks already allocated and synced,
/// so the crash-time fdatasync flushes data only. Readers skip blank lines.
#define CCR_RECORD_PREFILL (64 * 1024)

/// One loaded ELF object. Written at install; read lock-free at crash time.
typedef struct ccr_module {
    uintptr_t start;        // lowest mapped address of its PT_LOAD segments
    uintptr_t end;          // one past the highest
    uintptr_t bias;         // load bias (dlpi_addr): file vaddr + bias = runtime address
    /// Its program headers in memory (dlpi_phdr) and their count: what libunwind's look-up of the
    /// object an address is in reads (CrashTime/ccr_unwind.c answers it from this table).
    uintptr_t phdr;
    uint16_t phnum;
    uint8_t build_id[CCR_BUILD_ID_MAX];
    uint8_t build_id_length;
    char path[CCR_MODULE_PATH_MAX];
    // The loader's own words for this object (link_map's l_name and l_ld), kept by the install-time
    // walk so the crash-time walk can recognise an object it already knows without reading it again.
    uintptr_t name_address;
    uintptr_t dynamic;
    /// Where the build-id's bytes are in memory (0 when none): the crash-time walk reads them again
    /// for an object it recognises, in case it was unloaded and a rebuilt file loaded in its place.
    uintptr_t build_id_address;
    /// The lowest and highest executable PT_LOAD addresses (0 when none): where a return address
    /// can be. The stack scan of threads that cannot be asked checks every stack word against it.
    uintptr_t text_start;
    uintptr_t text_end;
} ccr_module;

/// Entry points of the dlopen'ed libunwind (local-only `_UL<arch>_*` names).
typedef struct ccr_libunwind {
    void *handle;
    int (*init_local2)(void *cursor, void *context, int flags);
    int (*step)(void *cursor);
    int (*get_reg)(void *cursor, int reg, uintptr_t *value);
    /// libunwind's memory-check pipe (its first use opens it; each step reads and writes it), or
    /// -1 when it could not be told apart at load: checked at crash time (ccr_unwind.c).
    int pipe_fd[2];
    unsigned long long pipe_dev, pipe_ino;
    /// CCR_UNWIND_*: stored with release once the fields above are set; the crash path reads it
    /// with acquire and uses libunwind only when READY.
    atomic_int state;
    /// Two descriptors held from install to a deferred load (the lowest free ones then), closed
    /// just before libunwind's first use so that its pipe takes them (-1: none).
    int reserved_fd[2];
    /// 1 when libunwind's own slot for sigprocmask was pointed at ccr_unwind_sigprocmask at load
    /// (Setup/ccr_libunwind.c: only a slot that held libc's sigprocmask).
    int masks_redirected;
    /// 1 when its slots for mincore, read and syscall were pointed at ccr_unwind_mincore, _read
    /// and _syscall (its memory checks in the crashing thread's walk made by guarded copies).
    int checks_redirected;
    /// 1 when, besides, every slot libunwind has among read, syscall and write was pointed at ours:
    /// no call on its pipe need reach the kernel in the crashing thread's walk (Decision 0064).
    int pipe_calls_redirected;
} ccr_libunwind;

enum {
    CCR_UNWIND_ABSENT = 0,    // not loaded (nothing asked, or unloaded)
    CCR_UNWIND_PENDING = 1,   // install deferred the load to a background thread, which has not finished it
    CCR_UNWIND_READY = 2,
    CCR_UNWIND_FAILED = 3,    // the deferred load failed: frame pointers only
};

/// What the watchdog needs to finish a record when the handler stalls.
typedef struct ccr_crash_context {
    int signo;
    int code;
    int tid;
    uintptr_t pc;
    uintptr_t sp;
    uintptr_t fp;
    uint64_t started_ns;
    uint64_t header_done_ns;   // elapsed since started_ns when each stage ended (0: not reached)
    uint64_t unwind_done_ns;
} ccr_crash_context;

enum { CCR_FINISHER_NONE = 0, CCR_FINISHER_HANDLER = 1, CCR_FINISHER_WATCHDOG = 2 };

typedef struct ccr_state {
    int installed;
    int record_fd;            // opened at install in new/, O_WRONLY|O_CLOEXEC, prefilled (see ccr_install.c)
    // What record_fd and watchdog_fd[1] are (st_dev, st_ino at install): a forked child that
    // closed them and opened files of its own under the same numbers keeps its files.
    unsigned long long record_dev, record_ino, watchdog_dev, watchdog_ino;
    char new_path[CCR_PATH_MAX];
    char pending_path[CCR_PATH_MAX];
    char record_id[CCR_ID_MAX];
    char app_id[CCR_TEXT_MAX];
    char app_version[CCR_TEXT_MAX];
    int pid;
    int forked_from_pid;      // 0, or in a forked child that crashed: the parent's pid (CrashTime/ccr_fork.c)
    char forked_from_id[CCR_ID_MAX];   // and the parent's record id
    int test_misbehaviour;
    int watchdog_timeout_ms;

    ccr_libunwind unwind;
    _Atomic(const char *) *fatal_message;   // libswiftCore's buffer, or NULL

    int signals[CCR_SIGNAL_COUNT];
    struct sigaction previous[CCR_SIGNAL_COUNT];

    ccr_module modules[CCR_MAX_MODULES];
    int module_count;

    int watchdog_fd[2];       // the watchdog's pipe: [1] closed at uninstall (its stop); nothing is written
    int watchdog_tid;

    // 1 once a request began (Shared/ccr_requests.c): until then a crash does not read the
    // request table, whose 12 pages would each be a page fault on first touch.
    atomic_int requests_begun;

    // Crash-time fields.
    atomic_int crashing_tid;  // 0 until the first crash claims the handler
    atomic_int finisher;      // who writes the rest of the record: CCR_FINISHER_*
    atomic_int stage;         // how far the handler got, for the nested-crash record
    ccr_crash_context context;
} ccr_state;

extern ccr_state ccr_global;

#endif
