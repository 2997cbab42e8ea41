// libdw / libdwfl (elfutils) for CrashSymbolication.
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
