// The module table: every loaded ELF object with its load bias, address range and GNU build-id,
// read from the program headers already in memory (no file access). Symbolication on the next
// launch or offline matches debug files to frames by these build-ids.
#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <link.h>
#include <string.h>
#include <unistd.h>

#include "ccr_setup.h"
#include "ccr_state.h"
#include "../CrashTime/ccr_crashtime.h"
#include "../CrashTime/ccr_modules_live.h"
#include "../CrashTime/ccr_threads.h"

#include <sys/auxv.h>


static void read_build_id(const struct dl_phdr_info *info, const ElfW(Phdr) *note, ccr_module *m) {
    ccr_notes_find_build_id((const uint8_t *)(info->dlpi_addr + note->p_vaddr), note->p_memsz,
                            note->p_align == 8 ? 8 : 4, m);
}

/// The loader's list, node by node, into ccr_modules_live.nodes (not yet published). Called from
/// the first dl_iterate_phdr callback: the loader holds its lock there, so the list cannot change
/// and its nodes cannot be freed while they are read with plain loads.
static int copied_nodes;
static void copy_loader_list(void) {
    copied_nodes = 0;
    const struct link_map *node = _r_debug.r_version >= 1 ? _r_debug.r_map : NULL;
    for (; node != NULL && copied_nodes < CCR_MAX_MODULES; node = node->l_next) {
        ccr_link_node *n = &ccr_modules_live.nodes[copied_nodes++];
        n->address = (uintptr_t)node;
        n->l_addr = (uintptr_t)node->l_addr;
        n->l_name = (uintptr_t)node->l_name;
        n->l_ld = (uintptr_t)node->l_ld;
        n->module = -1;
    }
}

/// Gives each copied node its entry in the install-time table (same bias, name pointer and dynamic
/// section, as the crash-time walk recognises objects) and publishes the nodes up to the first
/// without one (or without a build-id to check again at the crash).
static void publish_loader_list(void) {
    int usable = 0;
    for (; usable < copied_nodes; usable++) {
        ccr_link_node *n = &ccr_modules_live.nodes[usable];
        for (int i = 0; i < ccr_global.module_count && n->module < 0; i++) {
            const ccr_module *m = &ccr_global.modules[(usable + i) % ccr_global.module_count];
            if (ccr_module_is(m, n->l_addr, n->l_name, n->l_ld) && m->build_id_length > 0 && m->build_id_address != 0) {
                n->module = (usable + i) % ccr_global.module_count;
                n->build_id_address = m->build_id_address;
                n->build_id_length = m->build_id_length;
                memcpy(n->build_id, m->build_id, m->build_id_length);
            }
        }
        if (n->module < 0) break;
    }
    atomic_store_explicit(&ccr_modules_live.node_count, usable, memory_order_release);
}

static int record_module(struct dl_phdr_info *info, size_t size, void *unused) {
    (void)size;
    (void)unused;
    if (ccr_global.module_count == 0) copy_loader_list();
    if (ccr_global.module_count >= CCR_MAX_MODULES) return 1;
    ccr_module *m = &ccr_global.modules[ccr_global.module_count];
    memset(m, 0, sizeof *m);
    m->bias = info->dlpi_addr;
    uintptr_t low = UINTPTR_MAX, high = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD) {
            uintptr_t start = info->dlpi_addr + ph->p_vaddr;
            if (start < low) low = start;
            if (start + ph->p_memsz > high) high = start + ph->p_memsz;
            if (ph->p_flags & PF_X) {
                if (m->text_start == 0 || start < m->text_start) m->text_start = start;
                if (start + ph->p_memsz > m->text_end) m->text_end = start + ph->p_memsz;
            }
        } else if (ph->p_type == PT_NOTE && m->build_id_length == 0) {
            read_build_id(info, ph, m);
        } else if (ph->p_type == PT_DYNAMIC) {
            m->dynamic = info->dlpi_addr + ph->p_vaddr;   // what the loader keeps as l_ld
        }
    }
    if (high == 0) return 0;   // nothing mapped
    m->name_address = (uintptr_t)info->dlpi_name;      // the loader's l_name pointer itself
    m->phdr = (uintptr_t)info->dlpi_phdr;
    m->phnum = info->dlpi_phnum;
    m->start = low;
    m->end = high;
    const char *name = info->dlpi_name;
    if (name == NULL || name[0] == '\0') {
        // The main program: the loader gives it no name.
        ssize_t n = readlink("/proc/self/exe", m->path, sizeof m->path - 1);
        m->path[n > 0 ? n : 0] = '\0';
    } else {
        strncpy(m->path, name, sizeof m->path - 1);
    }
    ccr_global.module_count++;
    return 0;
}

/// The crash-time walk's pipe (ccr_modules_live_state.read_pipe), made once per process. Made
/// here, after libunwind's first use: a deferred load lets go of two descriptors just before it
/// so that libunwind's own pipe takes them, and this pipe must not.
static void open_read_pipe(void) {
    if (atomic_load(&ccr_modules_live.read_pipe_ready)) return;
    int ends[2];
    if (pipe2(ends, O_CLOEXEC | O_NONBLOCK) != 0) return;
    struct stat identity;
    int capacity = fcntl(ends[1], F_GETPIPE_SZ);
    if (fstat(ends[0], &identity) != 0 || capacity <= 0) {
        close(ends[0]);
        close(ends[1]);
        return;
    }
    ccr_modules_live.read_pipe[0] = ends[0];
    ccr_modules_live.read_pipe[1] = ends[1];
    ccr_modules_live.read_pipe_dev = (uint64_t)identity.st_dev;
    ccr_modules_live.read_pipe_ino = (uint64_t)identity.st_ino;
    ccr_modules_live.read_pipe_capacity = (size_t)capacity;
    atomic_store_explicit(&ccr_modules_live.read_pipe_ready, 1, memory_order_release);
}

void ccr_modules_record(void) {
    open_read_pipe();
    atomic_store(&ccr_modules_live.node_count, 0);
    ccr_global.module_count = 0;
    copied_nodes = 0;
    dl_iterate_phdr(record_module, NULL);
    if (ccr_global.test_misbehaviour == 8) {   // test: every build-id kept at start is stale (as for a rebuilt library reloaded in place)
        for (int i = 0; i < ccr_global.module_count; i++) ccr_global.modules[i].build_id[0] ^= 0xFF;
    }
    publish_loader_list();
    ccr_modules_live_sort_install_ranges();
    ccr_modules_live_preformat();
    ccr_modules_live_prefault();
    ccr_handler_prefault();
    ccr_bind_crash_calls();
    ccr_unwind_prefault();
    if (ccr_threads.enabled) ccr_threads_prefault();
}

void ccr_modules_prepare_live_walk(void) {
    // For the crash-time walk of the loader's list (CrashTime/ccr_modules_live.c): where the list
    // is, and what the loader does not say about the main program (its headers and path). Made at
    // install even when the table itself is made later (defer_libunwind): the walk needs no table.
    ccr_modules_live.r_debug = (uintptr_t)&_r_debug;
    if (ccr_global.test_misbehaviour == 3) ccr_modules_live.r_debug = 16;   // test: the walk fails
    ccr_modules_live.executable_phdr = (uintptr_t)getauxval(AT_PHDR);
    ccr_modules_live.executable_phnum = (int)getauxval(AT_PHNUM);
    ssize_t n = readlink("/proc/self/exe", ccr_modules_live.executable_path, sizeof ccr_modules_live.executable_path - 1);
    ccr_modules_live.executable_path[n > 0 ? n : 0] = '\0';
}

size_t ccr_build_id_from_notes(const uint8_t *notes, size_t size, size_t alignment, uint8_t *build_id, size_t capacity) {
    // Not crash-time code (tests call it, several at once): a module entry of its own on the heap,
    // large for a stack (paths). A shared static one was a data race TSan caught in CI.
    ccr_module *scratch = calloc(1, sizeof *scratch);
    if (scratch == NULL) return 0;
    ccr_notes_find_build_id(notes, size, alignment, scratch);
    size_t found = scratch->build_id_length;
    memcpy(build_id, scratch->build_id, found < capacity ? found : capacity);
    free(scratch);
    return found;
}
