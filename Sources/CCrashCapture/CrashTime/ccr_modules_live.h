// The module table at crash time, read from the dynamic loader's r_debug list without its lock.
// See ccr_modules_live.c and Docs/Decisions/0011-modules-at-crash-time.md.
#ifndef CCR_MODULES_LIVE_H
#define CCR_MODULES_LIVE_H

#include <stdatomic.h>
#include <stdint.h>

#include "ccr_state.h"
#include "ccr_writer.h"

/// One node of the loader's list as `start` saw it: its address and the fields the crash-time walk
/// compares (bias, name pointer, dynamic section), and the install-time table's entry for it.
/// The entry's build-id (where it is in memory, and its bytes) is copied here too: the crash reads
/// these nodes one after another, where the entries are ~600 bytes apart, two cold lines each.
typedef struct ccr_link_node {
    uintptr_t address;
    uintptr_t l_addr;
    uintptr_t l_name;
    uintptr_t l_ld;
    uintptr_t build_id_address;
    int module;                   // index in ccr_global.modules
    uint8_t build_id_length;
    uint8_t build_id[CCR_BUILD_ID_MAX];
} ccr_link_node;

/// Whether the install-time entry `m` is the object the loader describes with this bias, name
/// pointer and dynamic section (all three must match). Async-signal-safe.
static inline int ccr_module_is(const ccr_module *m, uintptr_t l_addr, uintptr_t l_name, uintptr_t l_ld) {
    return m->bias == l_addr && m->name_address == l_name && m->dynamic != 0 && m->dynamic == l_ld;
}

/// Written at install (Setup/ccr_modules.c); read lock-free at crash time.
typedef struct ccr_modules_live_state {
    uintptr_t r_debug;            // &_r_debug of the dynamic loader, or 0 (static program)
    uintptr_t executable_phdr;    // AT_PHDR: the main program's program headers
    int executable_phnum;         // AT_PHNUM
    char executable_path[CCR_MODULE_PATH_MAX];
    /// The loader's list at install, read under the loader lock (in dl_iterate_phdr's callback),
    /// up to its first object the install-time table does not have. The crash-time walk reads all
    /// these nodes and their build-ids in one read (confirm_unchanged_prefix) and takes, from the list's start,
    /// every object found unchanged from this copy; it walks node by node only from the first
    /// change. `node_count` is stored (release) after the nodes.
    ccr_link_node nodes[CCR_MAX_MODULES];
    _Atomic int node_count;
    /// A non-blocking pipe of our own, made with the table (Setup/ccr_modules.c): when the crash's
    /// read of those nodes cannot be a guarded copy (ccr_safe_copy_recoverable), it goes through
    /// it, one writev of the pieces in and one readv out, ~5x less
    /// than process_vm_readv, which pins each piece's page. Its identity is checked at the crash
    /// (an app may close descriptors and reuse the numbers); a forked child never uses it (it
    /// shares it with the parent). `read_pipe_ready` is stored (release) after the rest.
    int read_pipe[2];
    uint64_t read_pipe_dev, read_pipe_ino;
    size_t read_pipe_capacity;
    _Atomic int read_pipe_ready;
} ccr_modules_live_state;

extern ccr_modules_live_state ccr_modules_live;

/// Writes the module lines from the live walk, or from the install-time table when the walk
/// fails, then a `modules` line naming the source. Async-signal-safe.
void ccr_record_write_modules_at_crash(ccr_writer *w);
/// The same for a hang report, into memory of its own (a crash meanwhile writes its own table).
void ccr_record_write_modules_for_hang(ccr_writer *w);

/// Copies the GNU build-id from `size` bytes of a PT_NOTE segment whose p_align is `alignment`
/// (4 or 8) into `m`. Each note's name and descriptor start at offsets from the segment's start
/// rounded up to `alignment` (12-byte header, so for 8-aligned notes the name's padding depends on
/// where it starts, not only on its size). Bounds-checked against `size`; async-signal-safe.
void ccr_notes_find_build_id(const uint8_t *notes, size_t size, size_t alignment, ccr_module *m);

/// An executable range of a module.
typedef struct ccr_text_range {
    uintptr_t start;
    uintptr_t end;
    int module;   // its entry's index in the table the ranges were sorted from
} ccr_text_range;

/// The table written for the current record (see ccr_modules_written; without `with_hang`, a hang
/// capture's is passed over for start's: the next capture rewrites it in place) in `*table` and
/// `*count`, and the index in it of the module whose executable segments hold `address`, or -1
/// (a binary search over the table's sorted ranges). `*crash_checked` is 1 when the table is the
/// one the crash wrote (its objects checked at the crash), else 0. Async-signal-safe.
int ccr_modules_lookup_table(uintptr_t address, int with_hang, const ccr_module **table, int *count, int *crash_checked);

/// Whether `address` is in a module's executable segments, in the table written for the current
/// record (else the install-time table): a binary search over ranges sorted when the table was
/// written. Async-signal-safe.
int ccr_modules_text_contains(uintptr_t address);
/// The same, or -1 when that table has no executable ranges yet (start's still being made): no
/// answer, rather than "in none". Async-signal-safe.
int ccr_modules_text_holds(uintptr_t address);

/// Sorts the install-time table's executable ranges; called at install, after the table is made.
void ccr_modules_live_sort_install_ranges(void);

/// Formats the install-time table's module lines once, for a crash that writes that table; called
/// at install, after the table is made. Not for crash time.
void ccr_modules_live_preformat(void);
/// Touches the crash's scratch memory that its read of the list writes (one page fault each page
/// otherwise, at the crash); called at install after the table. Not for crash time.
void ccr_modules_live_prefault(void);

/// The module table that ccr_record_write_modules_at_crash wrote (the install-time table before
/// it ran); its count. Async-signal-safe.
int ccr_modules_written(const ccr_module **table);

#endif
