/* SPDX-License-Identifier: MIT */
#include "sanitizer_runtime.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool cmt_is_sanitizer_runtime(const char *entry, size_t len)
{
    static const char *const names[] = {"libasan", "libtsan", "libubsan", "liblsan", "libhwasan", "libclang_rt."};
    const char *base = entry;
    for (size_t i = 0; i < len; i++)
        if (entry[i] == '/')
            base = entry + i + 1;
    size_t blen = (size_t)(entry + len - base);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        size_t n = strlen(names[i]);
        if (blen >= n && !strncmp(base, names[i], n))
            return true;
    }
    return false;
}

static bool is_executable_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* program as execvp finds it. */
static bool find_program(const char *program, char *out, size_t len)
{
    if (strchr(program, '/')) {
        snprintf(out, len, "%s", program);
        return true;
    }
    const char *path = getenv("PATH");
    if (!path)
        path = "/bin:/usr/bin";
    for (const char *p = path;;) {
        const char *colon = strchr(p, ':');
        size_t dlen = colon ? (size_t)(colon - p) : strlen(p);
        /* An empty entry is the current directory. */
        int n = dlen ? snprintf(out, len, "%.*s/%s", (int)dlen, p, program) : snprintf(out, len, "%s", program);
        if (n > 0 && (size_t)n < len && is_executable_file(out))
            return true;
        if (!colon)
            return false;
        p = colon + 1;
    }
}

static bool needed_sanitizer(Elf *elf, char *out, size_t len)
{
    Elf_Scn *scn = NULL;
    while ((scn = elf_nextscn(elf, scn))) {
        GElf_Shdr shdr;
        if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_DYNAMIC || shdr.sh_entsize == 0)
            continue;
        Elf_Data *data = elf_getdata(scn, NULL);
        if (!data)
            continue;
        size_t count = shdr.sh_size / shdr.sh_entsize;
        for (size_t i = 0; i < count; i++) {
            GElf_Dyn dyn;
            if (!gelf_getdyn(data, (int)i, &dyn))
                break;
            if (dyn.d_tag == DT_NULL)
                break;
            if (dyn.d_tag != DT_NEEDED)
                continue;
            const char *name = elf_strptr(elf, shdr.sh_link, dyn.d_un.d_val);
            if (name && cmt_is_sanitizer_runtime(name, strlen(name))) {
                snprintf(out, len, "%s", name);
                return true;
            }
        }
    }
    return false;
}

bool cmt_sanitizer_runtime_needed(const char *program, char *out, size_t len)
{
    char path[PATH_MAX];
    if (!find_program(program, path, sizeof path) || elf_version(EV_CURRENT) == EV_NONE)
        return false;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
    bool found = elf && elf_kind(elf) == ELF_K_ELF && needed_sanitizer(elf, out, len);
    if (elf)
        elf_end(elf);
    close(fd);
    return found;
}
