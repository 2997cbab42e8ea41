// The module table at the moment of the crash, read without the loader lock: the dynamic loader's
// r_debug list (struct link_map: bias, name, next) is walked, and each object's ELF header,
// program headers (PT_LOAD bounds) and GNU build-id note are read from memory. No read can fault
// into a second crash: the one read of the list as start saw it is a guarded copy in the crash
// handler (ccr_safe_copy: a fault there resumes at its failure exit), else goes through a pipe of
// ours or process_vm_readv, as every other read does; a list changing under us or a bad pointer
// ends the walk. An object start's dl_iterate_phdr already saw (same bias, l_name and l_ld) is
// copied from the install-time table instead of read again: one read per object, not five. If the
// walk fails, the install-time table is written instead; the `modules` line says which. See Docs/Decisions/0011-modules-at-crash-time.md.
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "ccr_crashtime.h"
#include "ccr_modules_live.h"

ccr_modules_live_state ccr_modules_live;

/// One walk's memory. The crash has its own (filled by the crashing thread only: the one-crash
/// guard makes it one thread), hang captures theirs (one at a time), so a crash during a hang
/// capture's walk shares nothing with it.
typedef struct live_scratch {
    ccr_module table[CCR_MAX_MODULES];
    uint8_t notes[4096];
    ElfW(Phdr) phdrs[64];
    // The build-ids of the objects copied from the install-time table, read again in one call.
    int known[CCR_MAX_MODULES];   // their indices in `table`
    struct iovec local[CCR_MAX_MODULES], remote[CCR_MAX_MODULES];
    uint8_t build_ids[CCR_MAX_MODULES][CCR_BUILD_ID_MAX];
    // The table's executable ranges, sorted by start, for ccr_modules_text_contains.
    ccr_text_range ranges[CCR_MAX_MODULES];
    // The one read of the list as start saw it: r_debug, every node start copied, and their
    // objects' build-ids (confirm_unchanged_prefix).
    struct r_debug debug;
    struct link_map maps[CCR_MAX_MODULES];
    struct iovec batch_local[1 + 2 * CCR_MAX_MODULES], batch_remote[1 + 2 * CCR_MAX_MODULES];
    // The table index of the node the walk met first (the main program), -1 when left out.
    int main_index;
    // How the one read of the list as start saw it was made: READ_*; whether a fault stopped it.
    int read_way;
    int read_fault;
} live_scratch;
static live_scratch crash_scratch, hang_scratch;
enum { READ_PROCESS_VM_READV = 0, READ_PIPE = 1, READ_DIRECT = 2 };
/// The install-time table's sorted ranges (ccr_modules_live_sort_install_ranges, at install).
static ccr_text_range install_ranges[CCR_MAX_MODULES];
static int install_range_count;
static _Atomic int install_ranges_modules = -1;   // the table's module count they were sorted from, -1 while none

/// Copies `length` bytes of this process's memory at `address` without risking a fault.
/// Returns the number of bytes read (short at an unmapped page), or -1. Async-signal-safe.
static long read_memory(uintptr_t address, void *out, size_t length) {
    if (address == 0) return -1;
    struct iovec local = {.iov_base = out, .iov_len = length};
    struct iovec remote = {.iov_base = (void *)address, .iov_len = length};
    return ccr_read_own_memory(ccr_global.pid, &local, 1L, &remote, 1L);
}

/// All `length` bytes or -1. Async-signal-safe.
static int read_exact(uintptr_t address, void *out, size_t length) {
    return read_memory(address, out, length) == (long)length ? 0 : -1;
}

/// A NUL-terminated string of at most `capacity - 1` bytes; read page by page so that a name
/// near the end of a mapping still reads. Async-signal-safe.
static int read_string(uintptr_t address, char *out, size_t capacity) {
    size_t used = 0;
    while (used + 1 < capacity) {
        size_t page_left = 4096 - ((address + used) & 4095);
        size_t chunk = capacity - 1 - used < page_left ? capacity - 1 - used : page_left;
        long n = read_memory(address + used, out + used, chunk);
        if (n <= 0) return -1;
        for (long i = 0; i < n; i++) {
            if (out[used + (size_t)i] == '\0') return 0;
        }
        used += (size_t)n;
    }
    out[capacity - 1] = '\0';
    return 0;
}

/// Async-signal-safe.
static size_t align_up(size_t value, size_t alignment) {
    return (value + alignment - 1) & ~(alignment - 1);
}

/// The GNU build-id from a PT_NOTE segment at `address`, if it has one. Async-signal-safe.
static void read_build_id(live_scratch *x, uintptr_t address, size_t size, size_t alignment, ccr_module *m) {
    if (size > sizeof x->notes) size = sizeof x->notes;
    long n = read_memory(address, x->notes, size);
    if (n <= 0) return;
    ccr_notes_find_build_id(x->notes, (size_t)n, alignment, m);
    if (m->build_id_length) m->build_id_address = address + (m->build_id_address - (uintptr_t)x->notes);   // in memory, not in the copy
}

void ccr_notes_find_build_id(const uint8_t *notes, size_t size, size_t alignment, ccr_module *m) {
    size_t offset = 0;
    while (size - offset >= sizeof(ElfW(Nhdr)) && offset <= size) {
        ElfW(Nhdr) header;
        memcpy(&header, notes + offset, sizeof header);
        // Sizes come from memory we do not trust: every step is checked before it is added.
        size_t name_at = offset + sizeof header;
        if (header.n_namesz > size - name_at) return;
        size_t desc_at = align_up(name_at + header.n_namesz, alignment);
        if (desc_at > size || header.n_descsz > size - desc_at) return;
        size_t next = align_up(desc_at + header.n_descsz, alignment);
        if (header.n_type == NT_GNU_BUILD_ID && header.n_namesz == 4 && memcmp(notes + name_at, "GNU", 4) == 0) {
            size_t length = header.n_descsz < CCR_BUILD_ID_MAX ? header.n_descsz : CCR_BUILD_ID_MAX;
            memcpy(m->build_id, notes + desc_at, length);
            m->build_id_length = (uint8_t)length;
            m->build_id_address = (uintptr_t)(notes + desc_at);
            return;
        }
        if (next <= offset) return;
        offset = next;
        if (offset > size) return;
    }
}

/// Fills `m` from the program headers at `phdr` (runtime address), read in one call. 0 on success.
/// Async-signal-safe.
static int read_segments(live_scratch *x, uintptr_t bias, uintptr_t phdr, int phnum, ccr_module *m) {
    ElfW(Phdr) *phdr_buffer = x->phdrs;
    if (phnum <= 0 || phnum > (int)(sizeof x->phdrs / sizeof x->phdrs[0])) return -1;
    if (read_exact(phdr, phdr_buffer, (size_t)phnum * sizeof phdr_buffer[0]) != 0) return -1;
    uintptr_t low = UINTPTR_MAX, high = 0;
    for (int i = 0; i < phnum; i++) {
        const ElfW(Phdr) *ph = &phdr_buffer[i];
        if (ph->p_type == PT_LOAD) {
            uintptr_t start = bias + ph->p_vaddr;
            if (start < low) low = start;
            if (start + ph->p_memsz > high) high = start + ph->p_memsz;
            if (ph->p_flags & PF_X) {
                if (m->text_start == 0 || start < m->text_start) m->text_start = start;
                if (start + ph->p_memsz > m->text_end) m->text_end = start + ph->p_memsz;
            }
        } else if (ph->p_type == PT_NOTE && m->build_id_length == 0) {
            read_build_id(x, bias + ph->p_vaddr, ph->p_memsz, ph->p_align == 8 ? 8 : 4, m);
        }
    }
    if (high == 0) return -1;
    m->start = low;
    m->end = high;
    m->phdr = phdr;
    m->phnum = (uint16_t)phnum;
    return 0;
}

/// Program headers of a shared object: its ELF header is mapped at its bias (its first PT_LOAD
/// maps file offset 0 at address 0, as every shared object and PIE the toolchains make does).
/// Async-signal-safe.
static int read_object(live_scratch *x, uintptr_t bias, ccr_module *m) {
    ElfW(Ehdr) header;
    if (read_exact(bias, &header, sizeof header) != 0) return -1;
    if (memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 || header.e_phentsize != sizeof(ElfW(Phdr))) return -1;
    return read_segments(x, bias, bias + header.e_phoff, header.e_phnum, m);
}

/// The install-time entry for the object `map` describes, if start's dl_iterate_phdr saw it: the
/// same bias, the same l_name pointer and the same dynamic section (l_ld). An object unloaded and
/// another loaded in its place would have to match all three. Tries the same position first (the
/// list keeps its order). Async-signal-safe.
static const ccr_module *known_module(const struct link_map *map, int position) {
    int count = ccr_global.module_count;
    for (int i = 0; i < count; i++) {
        const ccr_module *m = &ccr_global.modules[(position + i) % count];
        if (ccr_module_is(m, (uintptr_t)map->l_addr, (uintptr_t)map->l_name, (uintptr_t)map->l_ld)) return m;
    }
    return NULL;
}

/// An object recognised by its bias, l_name and l_ld may still be another one: unloaded, then a
/// rebuilt file loaded at the same address, its name in the freed string's place. Its build-id's
/// bytes are read again, all objects' in one process_vm_readv; one that differs (or could not be
/// read) is read whole, as an object unknown at start is. Async-signal-safe.
static void verify_known_build_ids(live_scratch *x, int known_count) {
    if (known_count == 0) return;
    for (int k = 0; k < known_count; k++) {
        const ccr_module *m = &x->table[x->known[k]];
        x->local[k] = (struct iovec){.iov_base = x->build_ids[k], .iov_len = m->build_id_length};
        x->remote[k] = (struct iovec){.iov_base = (void *)m->build_id_address, .iov_len = m->build_id_length};
    }
    long got = ccr_read_own_memory(ccr_getpid(), x->local, (long)known_count, x->remote, (long)known_count);
    size_t read_so_far = 0;
    for (int k = 0; k < known_count; k++) {
        ccr_module *m = &x->table[x->known[k]];
        read_so_far += m->build_id_length;
        int same = got > 0 && (size_t)got >= read_so_far;
        for (int b = 0; same && b < m->build_id_length; b++) same = x->build_ids[k][b] == m->build_id[b];
        if (same) continue;
        // Read it as an unknown object: its headers and note from memory. The path stays the
        // loader's (the same l_name pointer).
        m->build_id_length = 0;
        m->build_id_address = 0;
        m->text_start = m->text_end = 0;
        int ok = x->known[k] == x->main_index   // the main program: its headers from the auxiliary vector
                     ? read_segments(x, m->bias, ccr_modules_live.executable_phdr, ccr_modules_live.executable_phnum, m)
                     : read_object(x, m->bias, m);
        if (ok != 0) {   // unreadable: no range, so no frame is put in it, and no headers to give libunwind
            m->start = m->end = 0;
            m->phdr = 0;
            m->phnum = 0;
        }
    }
}

/// Reads the `count` pieces `remote` names into `local` through the walk's pipe: one writev of
/// them into it (the kernel copies each piece with a fault check, no page pinning), one readv
/// out. All `wanted` bytes, or -1 with the pipe left empty: not made, not ours any more (its
/// descriptors closed and their numbers reused: checked by identity), a forked child (the pipe
/// is shared with the parent), too much for it, or a piece not readable (a pipe write that
/// faults stops at a page of its buffer, not at the piece, so the caller reads again by
/// process_vm_readv). Only the crashing thread calls it (the one-crash guard); SIGPIPE is blocked
/// in the handler. Async-signal-safe.
static long read_through_pipe(live_scratch *x, struct iovec *local, struct iovec *remote, int count, size_t wanted) {
    ccr_modules_live_state *s = &ccr_modules_live;
    if (x != &crash_scratch || !atomic_load_explicit(&s->read_pipe_ready, memory_order_acquire)) return -1;
    if (ccr_global.forked_from_pid != 0 || ccr_getpid() != ccr_global.pid) return -1;
    if (count <= 0 || count > 1024 || wanted == 0 || wanted > s->read_pipe_capacity) return -1;   // IOV_MAX
    struct stat ends[2];
    for (int i = 0; i < 2; i++) {
        if (fstat(s->read_pipe[i], &ends[i]) != 0 || !S_ISFIFO(ends[i].st_mode) ||
            (uint64_t)ends[i].st_dev != s->read_pipe_dev || (uint64_t)ends[i].st_ino != s->read_pipe_ino) return -1;
        // Each end the right way round (a dup of the other end shares the inode; a write with no
        // reader would leave a SIGPIPE pending for when the handler ends) and still non-blocking
        // (the flag belongs to the open file, which a forked child shares and may change).
        int flags = fcntl(s->read_pipe[i], F_GETFL);
        if (flags < 0 || (flags & O_ACCMODE) != (i == 0 ? O_RDONLY : O_WRONLY) || !(flags & O_NONBLOCK)) return -1;
    }
    if (ccr_global.test_misbehaviour == 10) return -1;   // test: as if the pipe were not ours
    long in = syscall(SYS_writev, (long)s->read_pipe[1], remote, (long)count), out_of_pipe = 0;
    if (in == (long)wanted) {
        out_of_pipe = syscall(SYS_readv, (long)s->read_pipe[0], local, (long)count);
        if (out_of_pipe == (long)wanted) return out_of_pipe;
    }
    // What reached the pipe and was not read is taken out again (that many bytes, no more: a
    // read of an empty pipe is never attempted), so the pipe is empty for a later read.
    size_t left = (size_t)(in > 0 ? in : 0) - (size_t)(in > 0 && out_of_pipe > 0 ? out_of_pipe : 0);
    while (left > 0) {
        long n = read(s->read_pipe[0], x->notes, left < sizeof x->notes ? left : sizeof x->notes);
        if (n <= 0) break;
        left -= (size_t)n;
    }
    return -1;
}

/// Copies the `count` pieces `remote` names into `local` with ccr_safe_copy, in order, and returns
/// the bytes of the pieces copied whole before the first one whose read faulted (all of them when
/// none did): what process_vm_readv would return. Only in the crash handler, once
/// ccr_safe_copy_recoverable() said yes. Async-signal-safe.
static size_t read_directly(const struct iovec *local, const struct iovec *remote, int count, int *faulted) {
    size_t got = 0;
    *faulted = 0;
    for (int i = 0; i < count; i++) {
        if (ccr_safe_copy(local[i].iov_base, remote[i].iov_base, local[i].iov_len) != 0) {
            *faulted = 1;
            break;
        }
        got += local[i].iov_len;
    }
    return got;
}

/// Reads r_debug, the nodes start copied (ccr_modules_live.nodes) and their objects' build-ids in
/// one read, and returns how many
/// nodes, from the list's start, are unchanged: reached by the same pointer, with the same bias,
/// name pointer and dynamic section, and the same build-id bytes (an object unloaded and a rebuilt
/// one loaded in its place differs there). Their entries in start's table hold for them. `*next`
/// gets the pointer to the node after those (r_map when none is unchanged); `x->debug` holds
/// r_debug. -1 when r_debug could not be read this way. Async-signal-safe.
static int confirm_unchanged_prefix(live_scratch *x, uintptr_t *next) {
    int nodes = atomic_load_explicit(&ccr_modules_live.node_count, memory_order_acquire);
    int pieces = 0;
    x->batch_local[pieces] = (struct iovec){.iov_base = &x->debug, .iov_len = sizeof x->debug};
    x->batch_remote[pieces++] = (struct iovec){.iov_base = (void *)ccr_modules_live.r_debug, .iov_len = sizeof x->debug};
    for (int i = 0; i < nodes; i++) {
        x->batch_local[pieces] = (struct iovec){.iov_base = &x->maps[i], .iov_len = sizeof x->maps[i]};
        x->batch_remote[pieces++] = (struct iovec){.iov_base = (void *)ccr_modules_live.nodes[i].address, .iov_len = sizeof x->maps[i]};
    }
    for (int i = 0; i < nodes; i++) {
        const ccr_link_node *n = &ccr_modules_live.nodes[i];
        x->batch_local[pieces] = (struct iovec){.iov_base = x->build_ids[i], .iov_len = n->build_id_length};
        x->batch_remote[pieces++] = (struct iovec){.iov_base = (void *)n->build_id_address, .iov_len = n->build_id_length};
    }
    // Each piece is complete only if every byte before its end was read: the kernel stops at the
    // first piece it cannot read whole.
    size_t wanted = 0;
    for (int i = 0; i < pieces; i++) wanted += x->batch_local[i].iov_len;
    // The read: copied directly in the crash handler, where a fault in the copy comes back to it
    // (~6 us for ~110 pieces, against ~35 us through the pipe: Decision 0055); else through the
    // walk's pipe (a forked child's is the parent's, a hang capture is not in a handler); else by
    // process_vm_readv, which pins each piece's page (~160 us).
    size_t got = 0;
    int done = 0;
    x->read_way = READ_PROCESS_VM_READV;
    if (x == &crash_scratch && ccr_global.test_misbehaviour != 10 && ccr_global.test_misbehaviour != 14 &&
        ccr_safe_copy_recoverable_in_crash()) {
        // test: node 2's address on page 0, which is never mapped (vm.mmap_min_addr): the copy faults
        if (ccr_global.test_misbehaviour == 15 && nodes > 2) x->batch_remote[3].iov_base = (void *)(uintptr_t)16;
        // The pieces are in ~110 places (nodes on the heap, a note in each object), none of them
        // in cache at a crash: asked for all at once, their misses overlap instead of coming one
        // after another (~29 -> ~19 us for this read in a probe of the fixture). A prefetch
        // never faults, whatever the address.
        for (int i = 0; i < pieces; i++) {
            const char *piece = (const char *)x->batch_remote[i].iov_base;
            __builtin_prefetch(piece);
            if (x->batch_remote[i].iov_len > 0) __builtin_prefetch(piece + x->batch_remote[i].iov_len - 1);
        }
        got = read_directly(x->batch_local, x->batch_remote, pieces, &x->read_fault);
        x->read_way = READ_DIRECT;
        // Not read again after a fault: what the copy did not get is not confirmed, and the walk
        // reads those objects one by one (process_vm_readv), as after any change since start.
        done = pieces;
    } else {
        long through_pipe = read_through_pipe(x, x->batch_local, x->batch_remote, pieces, wanted);
        if (through_pipe >= 0) {
            got = (size_t)through_pipe;
            x->read_way = READ_PIPE;
            done = pieces;
        }
    }
    for (; done < pieces;) {
        int chunk = pieces - done < 1024 ? pieces - done : 1024;   // IOV_MAX
        size_t chunk_wanted = 0;
        for (int i = done; i < done + chunk; i++) chunk_wanted += x->batch_local[i].iov_len;
        long n = ccr_read_own_memory(ccr_global.pid, &x->batch_local[done], (long)chunk, &x->batch_remote[done], (long)chunk);
        if (n > 0) got += (size_t)n;
        if (n != (long)chunk_wanted) break;
        done += chunk;
    }
    if (got < sizeof x->debug || x->debug.r_version < 1) return -1;
    size_t node_end = sizeof x->debug, id_end = node_end + (size_t)nodes * sizeof x->maps[0];
    uintptr_t pointer = (uintptr_t)x->debug.r_map;
    int same = 0;
    for (; same < nodes; same++) {
        const ccr_link_node *saved = &ccr_modules_live.nodes[same];
        node_end += sizeof x->maps[0];
        id_end += saved->build_id_length;
        if (got < node_end || got < id_end || pointer != saved->address) break;
        const struct link_map *map = &x->maps[same];
        int equal = (uintptr_t)map->l_addr == saved->l_addr && (uintptr_t)map->l_name == saved->l_name &&
                    (uintptr_t)map->l_ld == saved->l_ld;
        for (int b = 0; equal && b < saved->build_id_length; b++) equal = x->build_ids[same][b] == saved->build_id[b];
        if (!equal) break;
        pointer = (uintptr_t)map->l_next;
    }
    *next = pointer;
    return same;
}

/// Walks the loader's list into `x`'s table. Returns the number of modules and points `*table` at
/// them, or -1 when the list cannot be read; `*loader_state` gets r_debug's r_state
/// (RT_CONSISTENT, RT_ADD, RT_DELETE) or -1; `*unchanged` how many objects from the list's start
/// were confirmed unchanged since start in one read. Async-signal-safe: guarded copies, a pipe or process_vm_readv, no
/// loader lock.
static int collect(live_scratch *x, const ccr_module **table, int *loader_state, int *unchanged) {
    *table = NULL;
    *loader_state = -1;
    *unchanged = 0;
    x->main_index = -1;
    x->read_way = READ_PROCESS_VM_READV;
    x->read_fault = 0;
    if (ccr_modules_live.r_debug == 0) return -1;
    uintptr_t node = 0;
    int same = confirm_unchanged_prefix(x, &node);
    if (same < 0) {
        if (read_exact(ccr_modules_live.r_debug, &x->debug, sizeof x->debug) != 0 || x->debug.r_version < 1) return -1;
        same = 0;
        node = (uintptr_t)x->debug.r_map;
    }
    *loader_state = (int)x->debug.r_state;
    *unchanged = same;
    if (same > 0) x->main_index = 0;
    if (node == 0 && same > 0 && same == ccr_global.module_count) {
        // The list is start's, whole and in start's order: start's table is the crash's.
        int in_order = 1;
        for (int i = 0; i < same && in_order; i++) in_order = ccr_modules_live.nodes[i].module == i;
        if (in_order) {
            *table = ccr_global.modules;
            return same;
        }
    }
    for (int i = 0; i < same; i++) memcpy(&x->table[i], &ccr_global.modules[ccr_modules_live.nodes[i].module], sizeof x->table[i]);
    int count = same, known_count = 0;
    for (int visited = same; node != 0; visited++) {
        // More nodes than the table holds (or a cycle): the list is not what it should be.
        if (visited >= CCR_MAX_MODULES) return -1;
        struct link_map map;
        if (read_exact(node, &map, sizeof map) != 0) return -1;
        ccr_module *m = &x->table[count];
        const ccr_module *known = known_module(&map, count);
        if (known != NULL) {   // loaded before start and still there: only its build-id is read again, below
            memcpy(m, known, sizeof *m);
            if (visited == 0) x->main_index = count;
            if (m->build_id_length > 0 && m->build_id_address != 0) x->known[known_count++] = count;
            count++;
            node = (uintptr_t)map.l_next;
            continue;
        }
        memset(m, 0, sizeof *m);
        m->bias = (uintptr_t)map.l_addr;
        m->name_address = (uintptr_t)map.l_name;   // the loader's, as dl_iterate_phdr gives it
        if (map.l_name != NULL && read_string((uintptr_t)map.l_name, m->path, sizeof m->path) != 0) return -1;
        int ok;
        if (visited == 0 && m->path[0] == '\0') {
            // The main program: the loader gives it no name, and a non-PIE one has bias 0, so its
            // program headers come from the auxiliary vector (saved at install) and its path too.
            memcpy(m->path, ccr_modules_live.executable_path, sizeof m->path);
            ok = read_segments(x, m->bias, ccr_modules_live.executable_phdr, ccr_modules_live.executable_phnum, m) == 0;
            if (ok) x->main_index = count;
        } else {
            ok = read_object(x, m->bias, m) == 0;
        }
        if (ok) count++;   // an object without readable headers is left out, as dl_iterate_phdr would
        node = (uintptr_t)map.l_next;
    }
    if (count == 0) return -1;
    verify_known_build_ids(x, known_count);
    *table = x->table;
    return count;
}

/// The tables written by the crash and by the last hang capture, for later lines of the same
/// record (and the frame checks of the threads' answers).
static const ccr_module *_Atomic crash_written, *_Atomic hang_written;
static _Atomic int crash_written_count, hang_written_count;
static _Atomic int crash_range_count, hang_range_count;
/// 1 when the crash's table came from the loader's list (each object checked at the crash), 0 when
/// the walk failed and start's table was written in its place (nothing checked).
static _Atomic int crash_table_checked;

/// Sorts the executable ranges of `count` modules into `out` (insertion sort: at most a few
/// hundred, once per record). Returns how many. Async-signal-safe.
static int sort_ranges(const ccr_module *table, int count, ccr_text_range *out) {
    int n = 0;
    for (int i = 0; i < count; i++) {
        if (table[i].text_end <= table[i].text_start) continue;
        ccr_text_range r = {table[i].text_start, table[i].text_end, i};
        int j = n++;
        while (j > 0 && out[j - 1].start > r.start) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = r;
    }
    return n;
}

void ccr_modules_live_sort_install_ranges(void) {
    atomic_store_explicit(&install_ranges_modules, -1, memory_order_release);
    install_range_count = sort_ranges(ccr_global.modules, ccr_global.module_count, install_ranges);
    atomic_store_explicit(&install_ranges_modules, ccr_global.module_count, memory_order_release);
}

/// The install-time table's module lines, formatted when it was made: a crash that finds the
/// loader's list as start saw it (nearly every crash) writes start's table, and copies these
/// bytes instead of formatting ~50 lines again (~30 us in the handler).
static char preformatted[65536];
static size_t preformatted_length;
static int preformatted_count;
static _Atomic int preformatted_ready;

void ccr_modules_live_preformat(void) {
    atomic_store_explicit(&preformatted_ready, 0, memory_order_release);
    ccr_writer w;
    ccr_writer_init(&w, -1, preformatted, sizeof preformatted);   // no descriptor: a flush fails
    ccr_record_write_module_table(&w, ccr_global.modules, ccr_global.module_count);
    if (w.failed) return;   // more than the buffer holds: formatted at the crash as before
    preformatted_length = w.used;
    preformatted_count = ccr_global.module_count;
    atomic_store_explicit(&preformatted_ready, 1, memory_order_release);
}

void ccr_modules_live_prefault(void) {
    // What the crash's one read of the list writes (confirm_unchanged_prefix) and the ranges it
    // sorts: touched now (ccr_touch_pages: no byte changed, since a crash that gave up waiting for
    // this table may be using them), so that the crash takes no page fault on each first touch.
    live_scratch *x = &crash_scratch;
    int nodes = atomic_load_explicit(&ccr_modules_live.node_count, memory_order_acquire);
    if (nodes < 0 || nodes > CCR_MAX_MODULES) return;
    ccr_touch_pages(&x->debug, sizeof x->debug);
    ccr_touch_pages(x->maps, (size_t)nodes * sizeof x->maps[0]);
    ccr_touch_pages(x->build_ids, (size_t)nodes * sizeof x->build_ids[0]);
    ccr_touch_pages(x->batch_local, (size_t)(1 + 2 * nodes) * sizeof x->batch_local[0]);
    ccr_touch_pages(x->batch_remote, (size_t)(1 + 2 * nodes) * sizeof x->batch_remote[0]);
    int count = ccr_global.module_count;
    if (count > 0 && count <= CCR_MAX_MODULES) ccr_touch_pages(x->ranges, (size_t)count * sizeof x->ranges[0]);
    // The count the crash's table publishes, in a page of its own in .bss (a page fault in
    // write_modules, tools/profile-capture with `perf record -e page-faults -d`).
    ccr_touch_pages((void *)&crash_written_count, sizeof crash_written_count);
    ccr_touch_pages((void *)&crash_range_count, sizeof crash_range_count);
    ccr_touch_pages((void *)&crash_written, sizeof crash_written);
    ccr_touch_pages((void *)&crash_table_checked, sizeof crash_table_checked);
}

/// The table written for the current record (the crash's, else the last hang capture's, else
/// start's) with its sorted executable ranges: the same choice as ccr_modules_written. Without
/// `with_hang`, a hang capture's is passed over for start's.
static int written_table(const ccr_module **table, const ccr_text_range **ranges, int *range_count, int with_hang) {
    const ccr_module *crash = atomic_load(&crash_written), *hang = with_hang ? atomic_load(&hang_written) : NULL;
    if (crash != NULL) {
        *table = crash;
        *ranges = crash_scratch.ranges;
        *range_count = atomic_load(&crash_range_count);
        return atomic_load(&crash_written_count);
    }
    if (hang != NULL) {
        *table = hang;
        *ranges = hang_scratch.ranges;
        *range_count = atomic_load(&hang_range_count);
        return atomic_load(&hang_written_count);
    }
    *table = ccr_global.modules;
    *ranges = install_ranges;
    *range_count = install_range_count;
    return ccr_global.module_count;
}

/// The range of `ranges` (sorted by start) that holds `address`, or NULL. Async-signal-safe.
static const ccr_text_range *range_holding(const ccr_text_range *ranges, int n, uintptr_t address) {
    // The last range that starts at or below the address.
    int low = 0, high = n;
    while (low < high) {
        int middle = low + (high - low) / 2;
        if (ranges[middle].start <= address) low = middle + 1;
        else high = middle;
    }
    return low > 0 && address < ranges[low - 1].end ? &ranges[low - 1] : NULL;
}

int ccr_modules_text_contains(uintptr_t address) {
    const ccr_module *table;
    const ccr_text_range *ranges;
    int n;
    (void)written_table(&table, &ranges, &n, 1);
    return range_holding(ranges, n, address) != NULL;
}

int ccr_modules_text_holds(uintptr_t address) {
    const ccr_module *table;
    const ccr_text_range *ranges;
    int n;
    (void)written_table(&table, &ranges, &n, 1);
    if (n <= 0) return -1;
    return range_holding(ranges, n, address) != NULL;
}

int ccr_modules_lookup_table(uintptr_t address, int with_hang, const ccr_module **table, int *count, int *crash_checked) {
    const ccr_text_range *ranges;
    int n;
    *count = written_table(table, &ranges, &n, with_hang);
    // The table the crash wrote, object by object checked: not start's written in its place when
    // the walk failed (an object closed since may be unmapped).
    *crash_checked = ranges == crash_scratch.ranges && atomic_load(&crash_table_checked);
    const ccr_text_range *range = range_holding(ranges, n, address);
    return range != NULL && range->module >= 0 && range->module < *count ? range->module : -1;
}

int ccr_modules_written(const ccr_module **table) {
    const ccr_text_range *ranges;
    int n;
    return written_table(table, &ranges, &n, 1);
}

static void write_modules(ccr_writer *w, live_scratch *x) {
    const ccr_module *table = NULL;
    int loader_state = -1, unchanged = 0;
    uint64_t started = ccr_now_ns(CLOCK_MONOTONIC);
    // The hang table is rewritten in place by each capture: meanwhile its readers (the frame
    // checks of answering threads) use the install-time table.
    if (x == &hang_scratch) atomic_store(&hang_written, NULL);
    int count = collect(x, &table, &loader_state, &unchanged);
    const char *source = "link_map";
    if (x == &crash_scratch) atomic_store(&crash_table_checked, count >= 0);
    if (count < 0) {
        table = ccr_global.modules;
        count = ccr_global.module_count;
        source = "install";
    }
    int ranges;
    if (table == ccr_global.modules && atomic_load_explicit(&install_ranges_modules, memory_order_acquire) == count) {
        // Start's table: its ranges were sorted at install. Copied, not sorted again from the
        // entries (~600 bytes apart: a cold line each, ~3 us in a probe of the fixture).
        memcpy(x->ranges, install_ranges, (size_t)install_range_count * sizeof install_ranges[0]);
        ranges = install_range_count;
    } else {
        ranges = sort_ranges(table, count, x->ranges);
    }
    if (x == &crash_scratch) {
        atomic_store(&crash_written_count, count);
        atomic_store(&crash_range_count, ranges);
        atomic_store(&crash_written, table);
    } else {
        atomic_store(&hang_written_count, count);
        atomic_store(&hang_range_count, ranges);
        atomic_store(&hang_written, table);
    }
    if (table == ccr_global.modules && atomic_load_explicit(&preformatted_ready, memory_order_acquire) &&
        count == preformatted_count) {
        ccr_writer_raw(w, preformatted, preformatted_length);
    } else {
        ccr_record_write_module_table(w, table, count);
    }
    ccr_writer_text(w, "{\"type\":\"modules\"");
    ccr_writer_key(w, "source", 0);
    ccr_writer_json_string(w, source, 16);
    ccr_writer_key(w, "count", 0);
    ccr_writer_int(w, count);
    ccr_writer_key(w, "loader_state", 0);
    // RT_CONSISTENT 0, RT_ADD 1, RT_DELETE 2: a dlopen or dlclose was under way at the crash.
    ccr_writer_json_string(w, loader_state == RT_CONSISTENT ? "consistent" : loader_state == RT_ADD ? "adding"
                              : loader_state == RT_DELETE ? "deleting" : "unknown", 16);
    if (count >= 0 && source[0] == 'l') {
        ccr_writer_key(w, "unchanged", 0);
        ccr_writer_int(w, unchanged);
        ccr_writer_key(w, "read", 0);   // how the one read of start's list was made
        ccr_writer_json_string(w, x->read_way == READ_DIRECT ? "direct" : x->read_way == READ_PIPE ? "pipe" : "process_vm_readv", 24);
        if (x->read_fault) ccr_writer_text(w, ",\"read_fault\":true");
    }
    ccr_writer_key(w, "elapsed_ns", 0);
    ccr_writer_uint(w, ccr_now_ns(CLOCK_MONOTONIC) - started);
    ccr_writer_text(w, "}\n");
}

void ccr_record_write_modules_at_crash(ccr_writer *w) { write_modules(w, &crash_scratch); }

void ccr_record_write_modules_for_hang(ccr_writer *w) { write_modules(w, &hang_scratch); }
