/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_ELF_SYMBOLS_H
#define CUMEMTRACE_PRELOAD_ELF_SYMBOLS_H

#include <link.h>
#include <stdbool.h>
#include <stdint.h>

/* Looks a symbol up in the dynamic symbol table of a loaded object, read from
 * its mapped image (the GNU or SysV hash table the loader itself uses): no
 * dlopen, dlsym, malloc or lock, so it can run inside a hook. Finds what the
 * object exports whether or not it was loaded RTLD_GLOBAL. */
struct cmt_elf_symbol {
    uint64_t address; /* relocated */
    uint64_t size;
};

bool cmt_elf_find_symbol(const struct dl_phdr_info *info, const char *name, struct cmt_elf_symbol *out);

#endif
