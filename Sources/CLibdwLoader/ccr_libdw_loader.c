// See ccr_libdw_loader.h.
#define _GNU_SOURCE
#include "ccr_libdw_loader.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static struct {
    __typeof__(&dwfl_end) dwfl_end;
    __typeof__(&dwarf_tag) dwarf_tag;
    __typeof__(&dwarf_siblingof) dwarf_siblingof;
    __typeof__(&dwarf_ranges) dwarf_ranges;
    __typeof__(&dwarf_formstring) dwarf_formstring;
    __typeof__(&dwarf_child) dwarf_child;
    __typeof__(&dwarf_attr) dwarf_attr;
    __typeof__(&dwfl_report_end) dwfl_report_end;
    __typeof__(&dwfl_report_elf) dwfl_report_elf;
    __typeof__(&dwfl_report_begin) dwfl_report_begin;
    __typeof__(&dwfl_module_nextcu) dwfl_module_nextcu;
    __typeof__(&dwfl_module_getsymtab) dwfl_module_getsymtab;
    __typeof__(&dwfl_module_getsym_info) dwfl_module_getsym_info;
    __typeof__(&dwfl_module_getdwarf) dwfl_module_getdwarf;
    __typeof__(&dwfl_begin) dwfl_begin;
    __typeof__(&dwarf_linesrc) dwarf_linesrc;
    __typeof__(&dwarf_lineno) dwarf_lineno;
    __typeof__(&dwarf_linecol) dwarf_linecol;
    __typeof__(&dwarf_haspc) dwarf_haspc;
    __typeof__(&dwarf_getsrcfiles) dwarf_getsrcfiles;
    __typeof__(&dwarf_getsrc_die) dwarf_getsrc_die;
    __typeof__(&dwarf_formudata) dwarf_formudata;
    __typeof__(&dwarf_filesrc) dwarf_filesrc;
    __typeof__(&dwarf_dieoffset) dwarf_dieoffset;
    __typeof__(&dwarf_attr_integrate) dwarf_attr_integrate;
    __typeof__(&dwfl_build_id_find_elf) dwfl_build_id_find_elf;
    __typeof__(&dwfl_standard_find_debuginfo) dwfl_standard_find_debuginfo;
    __typeof__(&dwfl_offline_section_address) dwfl_offline_section_address;
} ccr_libdw_table;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int loaded;
static char load_error[512];

static void load(void) {
    // An override for tests and for a libdw kept elsewhere; the soname otherwise.
    const char *path = getenv("CRASH_REPORTING_LIBDW");
    if (path == NULL || path[0] == '\0') path = "libdw.so.1";
    void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        const char *why = dlerror();
        snprintf(load_error, sizeof load_error, "cannot load %s (Debian: apt-get install libdw1): %s", path, why ? why : "unknown error");
        return;
    }
#define LOAD(name) \
    if ((ccr_libdw_table.name = (__typeof__(ccr_libdw_table.name))dlsym(library, #name)) == NULL) { \
        snprintf(load_error, sizeof load_error, "%s has no %s", path, #name); \
        dlclose(library); \
        return; \
    }
    LOAD(dwfl_end);
    LOAD(dwarf_tag);
    LOAD(dwarf_siblingof);
    LOAD(dwarf_ranges);
    LOAD(dwarf_formstring);
    LOAD(dwarf_child);
    LOAD(dwarf_attr);
    LOAD(dwfl_report_end);
    LOAD(dwfl_report_elf);
    LOAD(dwfl_report_begin);
    LOAD(dwfl_module_nextcu);
    LOAD(dwfl_module_getsymtab);
    LOAD(dwfl_module_getsym_info);
    LOAD(dwfl_module_getdwarf);
    LOAD(dwfl_begin);
    LOAD(dwarf_linesrc);
    LOAD(dwarf_lineno);
    LOAD(dwarf_linecol);
    LOAD(dwarf_haspc);
    LOAD(dwarf_getsrcfiles);
    LOAD(dwarf_getsrc_die);
    LOAD(dwarf_formudata);
    LOAD(dwarf_filesrc);
    LOAD(dwarf_dieoffset);
    LOAD(dwarf_attr_integrate);
    LOAD(dwfl_build_id_find_elf);
    LOAD(dwfl_standard_find_debuginfo);
    LOAD(dwfl_offline_section_address);
#undef LOAD
    loaded = 1;
}

int ccr_libdw_load(void) {
    pthread_once(&load_once, load);
    return loaded;
}

const char *ccr_libdw_error(void) {
    pthread_once(&load_once, load);
    return loaded ? NULL : load_error;
}

Dwfl_Callbacks ccr_libdw_offline_callbacks(char **debuginfo_path) {
    Dwfl_Callbacks callbacks = {
        .find_elf = ccr_libdw_table.dwfl_build_id_find_elf,
        .find_debuginfo = ccr_libdw_table.dwfl_standard_find_debuginfo,
        .section_address = ccr_libdw_table.dwfl_offline_section_address,
        .debuginfo_path = debuginfo_path,
    };
    return callbacks;
}

void ccr_dwfl_end (Dwfl *dwfl) { ccr_libdw_table.dwfl_end(dwfl); }
int ccr_dwarf_tag (Dwarf_Die *die) { return ccr_libdw_table.dwarf_tag(die); }
int ccr_dwarf_siblingof (Dwarf_Die *die, Dwarf_Die *result) { return ccr_libdw_table.dwarf_siblingof(die, result); }
ptrdiff_t ccr_dwarf_ranges (Dwarf_Die *die, ptrdiff_t offset, Dwarf_Addr *basep, Dwarf_Addr *startp, Dwarf_Addr *endp) { return ccr_libdw_table.dwarf_ranges(die, offset, basep, startp, endp); }
const char * ccr_dwarf_formstring (Dwarf_Attribute *attrp) { return ccr_libdw_table.dwarf_formstring(attrp); }
int ccr_dwarf_child (Dwarf_Die *die, Dwarf_Die *result) { return ccr_libdw_table.dwarf_child(die, result); }
Dwarf_Attribute * ccr_dwarf_attr (Dwarf_Die *die, unsigned int search_name, Dwarf_Attribute *result) { return ccr_libdw_table.dwarf_attr(die, search_name, result); }
int ccr_dwfl_report_end (Dwfl *dwfl, int (*removed) (Dwfl_Module *, void *, const char *, Dwarf_Addr, void *arg), void *arg) { return ccr_libdw_table.dwfl_report_end(dwfl, removed, arg); }
Dwfl_Module * ccr_dwfl_report_elf (Dwfl *dwfl, const char *name, const char *file_name, int fd, GElf_Addr base, bool add_p_vaddr) { return ccr_libdw_table.dwfl_report_elf(dwfl, name, file_name, fd, base, add_p_vaddr); }
void ccr_dwfl_report_begin (Dwfl *dwfl) { ccr_libdw_table.dwfl_report_begin(dwfl); }
Dwarf_Die * ccr_dwfl_module_nextcu (Dwfl_Module *mod, Dwarf_Die *lastcu, Dwarf_Addr *bias) { return ccr_libdw_table.dwfl_module_nextcu(mod, lastcu, bias); }
int ccr_dwfl_module_getsymtab (Dwfl_Module *mod) { return ccr_libdw_table.dwfl_module_getsymtab(mod); }
const char * ccr_dwfl_module_getsym_info (Dwfl_Module *mod, int ndx, GElf_Sym *sym, GElf_Addr *addr, GElf_Word *shndxp, Elf **elfp, Dwarf_Addr *bias) { return ccr_libdw_table.dwfl_module_getsym_info(mod, ndx, sym, addr, shndxp, elfp, bias); }
Dwarf * ccr_dwfl_module_getdwarf (Dwfl_Module *mod, Dwarf_Addr *bias) { return ccr_libdw_table.dwfl_module_getdwarf(mod, bias); }
Dwfl * ccr_dwfl_begin (const Dwfl_Callbacks *callbacks) { return ccr_libdw_table.dwfl_begin(callbacks); }
const char * ccr_dwarf_linesrc (Dwarf_Line *line, Dwarf_Word *mtime, Dwarf_Word *length) { return ccr_libdw_table.dwarf_linesrc(line, mtime, length); }
int ccr_dwarf_lineno (Dwarf_Line *line, int *linep) { return ccr_libdw_table.dwarf_lineno(line, linep); }
int ccr_dwarf_linecol (Dwarf_Line *line, int *colp) { return ccr_libdw_table.dwarf_linecol(line, colp); }
int ccr_dwarf_haspc (Dwarf_Die *die, Dwarf_Addr pc) { return ccr_libdw_table.dwarf_haspc(die, pc); }
int ccr_dwarf_getsrcfiles (Dwarf_Die *cudie, Dwarf_Files **files, size_t *nfiles) { return ccr_libdw_table.dwarf_getsrcfiles(cudie, files, nfiles); }
Dwarf_Line * ccr_dwarf_getsrc_die (Dwarf_Die *cudie, Dwarf_Addr addr) { return ccr_libdw_table.dwarf_getsrc_die(cudie, addr); }
int ccr_dwarf_formudata (Dwarf_Attribute *attr, Dwarf_Word *return_uval) { return ccr_libdw_table.dwarf_formudata(attr, return_uval); }
const char * ccr_dwarf_filesrc (Dwarf_Files *file, size_t idx, Dwarf_Word *mtime, Dwarf_Word *length) { return ccr_libdw_table.dwarf_filesrc(file, idx, mtime, length); }
Dwarf_Off ccr_dwarf_dieoffset (Dwarf_Die *die) { return ccr_libdw_table.dwarf_dieoffset(die); }
Dwarf_Attribute * ccr_dwarf_attr_integrate (Dwarf_Die *die, unsigned int search_name, Dwarf_Attribute *result) { return ccr_libdw_table.dwarf_attr_integrate(die, search_name, result); }
