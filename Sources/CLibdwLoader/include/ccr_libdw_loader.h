// libdw (elfutils) loaded at run time: an app that links CrashReporting has no libdw or libelf
// in its link line (Docs/Decisions/0024-libdw-at-run-time.md). The headers give the types; each
// ccr_<name> calls <name> in libdw.so.1, opened with dlopen the first time ccr_libdw_load runs.
// Call nothing else until ccr_libdw_load has returned 1.
#ifndef CCR_LIBDW_LOADER_H
#define CCR_LIBDW_LOADER_H
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>

/// 1 when libdw.so.1 (or the file CRASH_REPORTING_LIBDW names) is loaded with every function used
/// here; 0 otherwise, and ccr_libdw_error says why. Thread-safe; loads once.
int ccr_libdw_load(void);
const char *ccr_libdw_error(void);
/// Callbacks for dwfl_begin: libdwfl's own build-id ELF finder, standard debuginfo finder and
/// offline section addresses, with `debuginfo_path`.
Dwfl_Callbacks ccr_libdw_offline_callbacks(char **debuginfo_path);

void ccr_dwfl_end (Dwfl *dwfl);
int ccr_dwarf_tag (Dwarf_Die *die);
int ccr_dwarf_siblingof (Dwarf_Die *die, Dwarf_Die *result);
ptrdiff_t ccr_dwarf_ranges (Dwarf_Die *die, ptrdiff_t offset, Dwarf_Addr *basep, Dwarf_Addr *startp, Dwarf_Addr *endp);
const char * ccr_dwarf_formstring (Dwarf_Attribute *attrp);
int ccr_dwarf_child (Dwarf_Die *die, Dwarf_Die *result);
Dwarf_Attribute * ccr_dwarf_attr (Dwarf_Die *die, unsigned int search_name, Dwarf_Attribute *result);
int ccr_dwfl_report_end (Dwfl *dwfl, int (*removed) (Dwfl_Module *, void *, const char *, Dwarf_Addr, void *arg), void *arg);
Dwfl_Module * ccr_dwfl_report_elf (Dwfl *dwfl, const char *name, const char *file_name, int fd, GElf_Addr base, bool add_p_vaddr);
void ccr_dwfl_report_begin (Dwfl *dwfl);
Dwarf_Die * ccr_dwfl_module_nextcu (Dwfl_Module *mod, Dwarf_Die *lastcu, Dwarf_Addr *bias);
int ccr_dwfl_module_getsymtab (Dwfl_Module *mod);
const char * ccr_dwfl_module_getsym_info (Dwfl_Module *mod, int ndx, GElf_Sym *sym, GElf_Addr *addr, GElf_Word *shndxp, Elf **elfp, Dwarf_Addr *bias);
Dwarf * ccr_dwfl_module_getdwarf (Dwfl_Module *mod, Dwarf_Addr *bias);
Dwfl * ccr_dwfl_begin (const Dwfl_Callbacks *callbacks);
const char * ccr_dwarf_linesrc (Dwarf_Line *line, Dwarf_Word *mtime, Dwarf_Word *length);
int ccr_dwarf_lineno (Dwarf_Line *line, int *linep);
int ccr_dwarf_linecol (Dwarf_Line *line, int *colp);
int ccr_dwarf_haspc (Dwarf_Die *die, Dwarf_Addr pc);
int ccr_dwarf_getsrcfiles (Dwarf_Die *cudie, Dwarf_Files **files, size_t *nfiles);
Dwarf_Line * ccr_dwarf_getsrc_die (Dwarf_Die *cudie, Dwarf_Addr addr);
int ccr_dwarf_formudata (Dwarf_Attribute *attr, Dwarf_Word *return_uval);
const char * ccr_dwarf_filesrc (Dwarf_Files *file, size_t idx, Dwarf_Word *mtime, Dwarf_Word *length);
Dwarf_Off ccr_dwarf_dieoffset (Dwarf_Die *die);
Dwarf_Attribute * ccr_dwarf_attr_integrate (Dwarf_Die *die, unsigned int search_name, Dwarf_Attribute *result);
#endif
