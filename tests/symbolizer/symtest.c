/* SPDX-License-Identifier: MIT */
#include "symtest.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <link.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

int symt_failures;

__attribute__((noinline, noipa)) void *symt_ra(void)
{
    return __builtin_return_address(0);
}

__attribute__((noinline, noipa)) void symt_ra_into(void **slot)
{
    *slot = __builtin_return_address(0);
}

void symt_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s:%d: FAIL: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    symt_failures++;
}

struct collect {
    struct symt_module *out;
    size_t max, n;
};

static void parse_build_id(struct symt_module *m, const struct dl_phdr_info *info, const ElfW(Phdr) *ph)
{
    const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
    const unsigned char *end = p + ph->p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
        const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)(const void *)p;
        size_t namesz = (nh->n_namesz + 3) & ~(size_t)3;
        size_t descsz = (nh->n_descsz + 3) & ~(size_t)3;
        const unsigned char *name = p + sizeof *nh;
        const unsigned char *desc = name + namesz;
        if (desc + descsz > end)
            break;
        if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(name, "GNU", 4) == 0 &&
            nh->n_descsz <= sizeof m->build_id) {
            memcpy(m->build_id, desc, nh->n_descsz);
            m->info.build_id_len = nh->n_descsz;
            return;
        }
        p = desc + descsz;
    }
}

static int collect_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct collect *c = arg;
    if (c->n == c->max)
        return 1;
    struct symt_module *m = &c->out[c->n];
    memset(m, 0, sizeof *m);
    if (c->n == 0 && (!info->dlpi_name || !*info->dlpi_name)) {
        ssize_t k = readlink("/proc/self/exe", m->path, sizeof m->path - 1);
        if (k > 0)
            m->path[k] = '\0';
    } else if (info->dlpi_name) {
        snprintf(m->path, sizeof m->path, "%s", info->dlpi_name);
    }
    m->info.id = (uint32_t)(c->n + 1);
    m->info.bias = info->dlpi_addr;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD) {
            uint64_t a = info->dlpi_addr + ph->p_vaddr, b = a + ph->p_memsz;
            if (a < lo)
                lo = a;
            if (b > hi)
                hi = b;
            if (ph->p_flags & PF_X) {
                m->exec_lo = a;
                m->exec_hi = b;
            }
        } else if (ph->p_type == PT_NOTE && m->info.build_id_len == 0) {
            parse_build_id(m, info, ph);
        }
    }
    if (hi == 0)
        lo = 0;
    m->info.lo = lo;
    m->info.hi = hi;
    symt_fix_pointers(m);
    c->n++;
    return 0;
}

size_t symt_collect_modules(struct symt_module *out, size_t max)
{
    struct collect c = { out, max, 0 };
    dl_iterate_phdr(collect_cb, &c);
    return c.n;
}

void symt_fix_pointers(struct symt_module *m)
{
    m->info.path = m->path;
    m->info.build_id = m->build_id;
}

struct symt_module *symt_module_of(struct symt_module *v, size_t n, const void *addr)
{
    uint64_t a = (uint64_t)(uintptr_t)addr;
    for (size_t i = 0; i < n; i++)
        if (v[i].info.lo <= a && a < v[i].info.hi)
            return &v[i];
    return NULL;
}

void symt_add_all(struct cmt_symbolizer *s, struct symt_module *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        cmt_symbolizer_add_module(s, &v[i].info);
}

const char *symt_basename(const char *path)
{
    if (!path)
        return NULL;
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

char *symt_hex(const uint8_t *id, size_t len)
{
    char *out = malloc(2 * len + 1);
    for (size_t i = 0; i < len; i++)
        sprintf(out + 2 * i, "%02x", id[i]);
    out[2 * len] = '\0';
    return out;
}

static char tmpdir[PATH_MAX];

static int rm_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void symt_cleanup(void)
{
    if (tmpdir[0] && !getenv("SYMTEST_KEEP_TMP"))
        nftw(tmpdir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

const char *symt_tmpdir(void)
{
    if (!tmpdir[0]) {
        const char *base = getenv("TMPDIR");
        snprintf(tmpdir, sizeof tmpdir, "%s/cmt-symtest.XXXXXX", base && *base ? base : "/tmp");
        if (!mkdtemp(tmpdir)) {
            perror("mkdtemp");
            exit(1);
        }
        atexit(symt_cleanup);
    }
    return tmpdir;
}

char *symt_path(const char *fmt, ...)
{
    va_list ap;
    char *rel = NULL, *out = NULL;
    va_start(ap, fmt);
    if (vasprintf(&rel, fmt, ap) < 0)
        rel = NULL;
    va_end(ap);
    if (!rel || asprintf(&out, "%s/%s", symt_tmpdir(), rel) < 0)
        out = NULL;
    free(rel);
    if (!out)
        abort();
    return out;
}

int symt_mkdirs(const char *dir)
{
    char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s", dir);
    for (char *p = buf + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            if (mkdir(buf, 0755) != 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    }
    return mkdir(buf, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

static int mkparent(const char *path)
{
    char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s", path);
    char *slash = strrchr(buf, '/');
    if (!slash || slash == buf)
        return 0;
    *slash = '\0';
    return symt_mkdirs(buf);
}

int symt_copy(const char *src, const char *dst)
{
    if (mkparent(dst) != 0)
        return -1;
    int in = open(src, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return -1;
    int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
    if (out < 0) {
        close(in);
        return -1;
    }
    char buf[65536];
    ssize_t k;
    int rc = 0;
    while ((k = read(in, buf, sizeof buf)) > 0) {
        if (write(out, buf, (size_t)k) != k) {
            rc = -1;
            break;
        }
    }
    if (k < 0)
        rc = -1;
    close(in);
    if (close(out) != 0)
        rc = -1;
    return rc;
}

int symt_run(const char *const argv[])
{
    pid_t pid;
    if (posix_spawn(&pid, argv[0], NULL, NULL, (char *const *)argv, environ) != 0)
        return -1;
    int st;
    if (waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

void symt_print_frames(const char *what, const struct cmt_frame *f, size_t n)
{
    fprintf(stderr, "%s: %zu frame(s)\n", what, n);
    for (size_t i = 0; i < n; i++)
        fprintf(stderr, "  #%zu ip=%#llx %s %s:%d:%d%s module=%s+%#llx\n", i,
                (unsigned long long)f[i].ip, f[i].function ? f[i].function : "??",
                f[i].file ? f[i].file : "??", f[i].line, f[i].column,
                f[i].inlined ? " (inlined)" : "", f[i].module ? f[i].module : "(none)",
                (unsigned long long)f[i].module_offset);
}
