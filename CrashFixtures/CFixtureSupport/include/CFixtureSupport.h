// C helpers for the crash fixtures: faults that Swift cannot express directly.
#ifndef CFIXTURESUPPORT_H
#define CFIXTURESUPPORT_H

#pragma clang assume_nonnull begin

/// Writes through a null pointer (SIGSEGV, SEGV_MAPERR, fault address 0).
void cfs_write_null_pointer(void);
/// Calls abort() (SIGABRT).
void cfs_abort(void);
/// Integer division by a zero the compiler cannot see (SIGFPE, FPE_INTDIV).
int cfs_divide(int dividend, int divisor);
/// Maps two pages of a one-page file in `directory` and touches the second (SIGBUS, BUS_ADRERR).
int cfs_touch_truncated_mapping(const char *directory);
/// Executes a breakpoint trap instruction (SIGTRAP on x86_64 and arm64).
void cfs_trap_instruction(void);
/// Installs a SA_SIGINFO handler for `signo` that appends a line to `marker_path` and then restores
/// the default action, so a chained call is visible and the process still dies by the signal.
int cfs_install_marker_handler(int signo, const char *marker_path);
/// Installs, over the current action for `signo` (CrashReporter's, after start), a handler of the
/// app's that calls the action it replaced: as a library installed after start would.
int cfs_install_chaining_handler(int signo);
/// Holds the dynamic loader's lock (inside a dl_iterate_phdr callback) on a new thread, forever.
/// Returns once the lock is held.
void cfs_hold_loader_lock_on_new_thread(void);
/// Puts the read end of a new pipe under `number` (dup2) and writes 9 bytes into it. Returns the
/// write end, or -1.
int cfs_put_pipe_under(int number);
/// Reads what waits under `number` (non-blocking): how many bytes.
int cfs_bytes_waiting(int number);

/// Forks a child that writes through a null pointer; returns the child's wait status (or -1).
int cfs_fork_child_that_faults(int *child_pid);
/// The same; once the child's crash record in `new_folder` has its module table (its handler and
/// watchdog are running; run with hang-in-handler-after-write, whose stall writes it to the file),
/// the parent sends the child a SIGALRM with kill(2).
int cfs_fork_child_that_faults_then_alarm(int *child_pid, const char *new_folder);
/// The same, but the child first lowers its descriptor limit to 64 and opens /dev/null until
/// open fails (EMFILE), then faults with no descriptor free.
int cfs_fork_child_out_of_descriptors_that_faults(int *child_pid);
/// Before CrashReporter.start: a SIGSEGV handler that, in a forked child, writes "own files kept K
/// of N bytes B" to stderr: how many of the child's descriptors 3…N+2 still hold `own_file`, and
/// its size (the child writes nothing into it).
int cfs_install_descriptor_check_handler(const char *own_file);
/// fork(); the child closes every inherited descriptor, puts its own file (the path given to
/// cfs_install_descriptor_check_handler) under each of those numbers, then faults.
int cfs_fork_child_reusing_descriptors_that_faults(int *child_pid);
/// Forks; the child waits for the parent to be gone, calls setsid(), points 0-2 at /dev/null and
/// writes through a null pointer. Returns the child's pid in the parent.
int cfs_daemonise_then_fault(void);
/// Starts `count` threads that sleep in pause(2), and returns once all are running.
void cfs_start_idle_threads(int count);
/// Lowers the soft descriptor limit to 256 (when higher) and opens /dev/null until open fails
/// (EMFILE): the process has no descriptor free, as a server that leaks them does.
void cfs_use_up_descriptors(void);
/// Starts a thread that waits until the main thread is a zombie (it called pthread_exit: "State:
/// Z" in its status), then writes through a null pointer; the caller (the main thread) then calls
/// pthread_exit. Does not return.
void cfs_exit_main_thread_then_crash(void) __attribute__((noreturn));
/// Calls a leaf that keeps no frame (x86_64: rbp untouched, return address at [sp]) and writes to
/// address 0x10.
void cfs_call_frameless_leaf(void);
/// The calling thread's id.
int cfs_gettid(void);
/// Installs a SIGTERM handler that calls exit(0), as a service's graceful shutdown might.
void cfs_exit_zero_on_sigterm(void);
/// Starts a thread that waits until a record file in `new_directory` begins with '{' (a crash
/// is being recorded) and then sends SIGTERM to the calling thread (tgkill). The sender blocks
/// SIGTERM, so only the calling thread can take it.
void cfs_sigterm_this_thread_when_record_starts(const char *new_directory);
/// Installs a seccomp filter on the calling thread that answers getppid(2) with SECCOMP_RET_TRAP
/// (SIGSYS, SYS_SECCOMP). Returns 0, or -1 if seccomp is unavailable.
int cfs_trap_getppid_with_seccomp(void);
/// Calls getppid(2) through syscall(2): under the filter above, SIGSYS.
long cfs_trapped_system_call(void);

/// Calls through a NULL function pointer (SIGSEGV at pc 0).
void cfs_call_null_function_pointer(void);

/// Names the calling OS thread (pthread_setname_np; at most 15 bytes).
void cfs_name_current_thread(const char *name);

/// Calls `body` under a 9000-byte stack frame: the caller's return address lies more than two
/// 4 KiB windows above the stack pointer while `body` blocks (a stack scan must read that far).
void cfs_call_below_big_frame(void (*body)(void));

/// The disk's own cost of what a crash handler does to make its record durable, for
/// tools/bench-capture: prefills `directory`/new/floor.crash with 64 KiB and syncs it (as start
/// does), idles `idle_ms` (a process runs a while before it crashes) and then keeps the CPU busy
/// for 1 ms (as the handler does before its sync), then times the overwrite of
/// `size` bytes + fdatasync + rename to `directory`/pending/. Nanoseconds, or -1.
long long cfs_sync_floor_ns(const char *directory, long size, int idle_ms);

#pragma clang assume_nonnull end

#endif
