// Every thread of the process at a crash: the crashing thread asks each other thread, by a
// real-time signal chosen at install, to unwind itself into a preallocated slot, waits a bounded
// time, and writes one thread section per thread. See Docs/Decisions/0010-all-threads.md.
#ifndef CCR_THREADS_H
#define CCR_THREADS_H

#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>

#include "ccr_crashtime.h"
#include "ccr_writer.h"

/// Compile-time bounds of the slot table; the install options choose limits at or below them.
#define CCR_THREADS_MAX 256
/// This library's own threads (the pipeline, the memory sampler) that a crash lists without asking.
#define CCR_REPORTER_THREADS 8
#define CCR_THREAD_FRAMES_MAX 64
#define CCR_THREAD_FRAMES_DEFAULT 32
#define CCR_THREAD_WAIT_MS_DEFAULT 250

/// A slot's life: the crashing thread arms it (ASKED) and sends the signal; the asked thread
/// claims it (WRITING_FP), stores its frame-pointer walk (FP_DONE), claims it again (WRITING_LU)
/// and stores its libunwind walk (LU_DONE, or LU_FAILED). At its deadline the crashing thread
/// closes what is still ASKED or FP_DONE with a compare-and-swap, so a late answer never writes
/// into frames being read.
enum {
    CCR_SLOT_FREE = 0,
    CCR_SLOT_ASKED,
    CCR_SLOT_WRITING_FP,
    CCR_SLOT_FP_DONE,
    CCR_SLOT_WRITING_LU,
    CCR_SLOT_LU_DONE,
    CCR_SLOT_LU_FAILED,
    CCR_SLOT_CLOSED,
    CCR_SLOT_ARMING,   // taken by a collection (compare-and-swap) while it writes tid and counts
};

typedef struct ccr_thread_slot {
    int tid;
    atomic_int state;
    int fp_count;
    int fp_depth;
    int lu_count;
    int lu_depth;
    int lu_lower_bound;
    uintptr_t fp_frames[CCR_THREAD_FRAMES_MAX];
    uintptr_t lu_frames[CCR_THREAD_FRAMES_MAX];
} ccr_thread_slot;

/// A thread that crashed while another thread's crash was being recorded (the one-crash guard
/// makes it wait): its signal, for its section of the record. `ready` is stored (release) after
/// the rest; `tid` 0: free.
#define CCR_CRASHED_TOO_MAX 16
typedef struct ccr_crashed_too {
    atomic_int tid;
    int signo;
    int code;
    uintptr_t fault_address;   // when code > 0 (a fault the CPU raised)
    int received;              // sent (code <= 0), not by the thread itself (abort, raise)
    int sender_pid;            // when received (0: from outside the pid namespace)
    atomic_int ready;
} ccr_crashed_too;

/// What the crashing thread (or the hang monitor) learned about one other thread.
typedef struct ccr_listed_thread {
    int tid;
    int state;           // LISTED_* in ccr_threads.c
    int slot;            // index in the collection's slots when asked, else -1
    char name[17];
} ccr_listed_thread;

/// One collection's memory: the crash has one, hang captures another, so a crash during a hang
/// capture neither waits for it nor shares a byte with it. A slot whose thread was still writing
/// when its capture ended (WRITING_FP or WRITING_LU) is not armed again until the thread is done
/// with it; the next capture uses other slots.
typedef struct ccr_collection {
    atomic_int active;       // 1 while answers are collected, else 0
    atomic_int asked;        // slots in use by this collection: 0 … asked-1
    atomic_int answers;      // bumped (then a futex wake) each time a thread finishes its answer
    ccr_thread_slot slots[CCR_THREADS_MAX];
    // The collecting thread's own scratch.
    ccr_listed_thread listed[CCR_THREADS_MAX];
    char dirents[4096];
    char status_text[4096];
    uintptr_t scan_frames[CCR_THREAD_FRAMES_MAX];
    uintptr_t scan_words[4096];   // 32 KiB of stack, read at once (one system call, not eight)
    ccr_scan_scratch scan_scratch;   // checks up to CCR_SCAN_BATCH words at once: one window of the read
} ccr_collection;
_Static_assert(sizeof(((ccr_collection *)0)->scan_words) / sizeof(uintptr_t) % CCR_SCAN_BATCH == 0,
               "a stack read is checked in whole windows of CCR_SCAN_BATCH words");

/// Written at install (before the signal action is set); read lock-free at crash time.
typedef struct ccr_threads_state {
    int enabled;
    int signo;               // the real-time signal that asks a thread to unwind itself
    int limit;               // other threads listed at most
    int frames;              // frames kept per other thread
    int wait_ms;             // longest total wait for answers
    atomic_int reporter_tids[CCR_REPORTER_THREADS];   // this library's own threads: listed, never asked
    /// Their names (set with PR_SET_NAME when marked): written before the tid is stored, so a
    /// crash that finds the tid writes the name without reading /proc. -1 in a tid: being marked.
    char reporter_names[CCR_REPORTER_THREADS][16];
    atomic_int hang_capturing;   // 1 while a hang capture runs (one at a time)
    /// Threads in their answer handler (their own signal blocked there), which look for a crash's
    /// ask themselves: a crash asks them though their mask says they block the signal.
    atomic_int staying[CCR_THREADS_MAX];
    ccr_crashed_too crashed_too[CCR_CRASHED_TOO_MAX];
    /// A descriptor held from install (a memfd, identified by device and inode), closed by a
    /// crash before it lists the threads: a process that ran out of descriptors (EMFILE, often
    /// what it crashed of) then still has one for /proc/self/task and each thread's status.
    /// `spare_held` 0: none (closed, or never opened).
    int spare_fd;
    atomic_int spare_held;
    uint64_t spare_dev, spare_ino;
    ccr_collection crash;
    ccr_collection hang;
} ccr_threads_state;

extern ccr_threads_state ccr_threads;

/// Takes the hang collection: 0, or -1 when threads are off, a crash is in progress, or another
/// hang capture holds it.
int ccr_threads_begin_hang_capture(void);
/// For a hang report, from the hang monitor's thread (not a crash), after
/// ccr_threads_begin_hang_capture: lists and asks every other thread as a crash does, writes the
/// thread sections with `hung_tid`'s first, lets the threads go back to their work and releases
/// the collection. Returns 0, or -1 when a crash began meanwhile (the crash record is what matters).
/// Async-signal-safe calls only, but meant for a normal thread.
int ccr_threads_write_for_hang(ccr_writer *w, int hung_tid);

/// The real-time signal's SA_SIGINFO handler: unwinds the calling thread from `ucontext` into its
/// slot, frame pointers first, then libunwind. Returns at once when no collection is under way or
/// the thread has no slot. Async-signal-safe (libunwind as in ccr_unwind_libunwind).
void ccr_threads_answer(int signo, siginfo_t *info, void *ucontext);

/// Touches the crash collection's scratch (the listing, the status text, the stack-scan buffers)
/// with ccr_touch_pages, so that a crash takes no page fault on them. Called with the module
/// table; not for crash time.
void ccr_threads_prefault(void);

/// In a forked child's first crash: forgets the parent's collections (their threads are not in
/// the child). Async-signal-safe.
void ccr_threads_reset_after_fork(void);
/// Called by a thread that crashed while another one records (the one-crash guard's loser): notes
/// its signal, and answers the crash's ask for its stack from its own crash context (its section
/// then shows where it crashed, not the handler it waits in), staying as an asked thread does: 10 s,
/// and the crash-sender's wait. Returns after that (the caller then ends the process).
/// Async-signal-safe.
void ccr_threads_wait_crashed_too(int signo, const siginfo_t *info, void *ucontext);

/// At a crash, after the crashing thread's own stack line: lists every other thread, asks those
/// that can answer to unwind themselves, waits at most the configured time (and never more than
/// half of the watchdog's remaining budget), and writes a thread section for each, then one
/// `threads` summary line. Async-signal-safe: open, read, close, getdents64, tgkill, futex.
void ccr_threads_write(ccr_writer *w, int crashed_tid, uint64_t started_ns);

#endif
