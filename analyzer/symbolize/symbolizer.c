/* SPDX-License-Identifier: MIT
 *
 * Symbolizer: see symbolizer.h for the contract and the file search order.
 *
 * Data structures
 *   modules      array of pointers (stable: libdwfl keeps a pointer to each
 *                as the Dwfl_Module's userdata), plus an index sorted by lo
 *                with a running maximum of hi, so finding the module of an
 *                address is a binary search even when ranges overlap
 *                (a library unloaded and another loaded at its address).
 *   cache        open-addressing hash (ip, module index) -> run of frames in
 *                one frame pool; a run is computed once.
 *   strings      every string handed out is interned once (function names,
 *                files, module paths, warnings).
 *   cu index     per module and per compilation unit, built the first time
 *                an address in that CU is resolved: the address ranges of
 *                the CU's subprograms (also those in namespaces, classes,
 *                and nested in other subprograms), sorted. dwarf_getscopes
 *                walks the whole CU for every address, which is quadratic
 *                on large CUs, and never finds a nested function (it prunes
 *                the host function, whose ranges do not contain the nested
 *                one's code); the index makes a lookup a binary search
 *                followed by a walk down the one subprogram's lexical blocks
 *                and inlined subroutines. dwarf_getscopes remains the
 *                fallback for addresses the index does not cover.
 *   symbols      per module, the code symbols of the ELF symbol table sorted
 *                once (for modules or addresses without DWARF).
 */
#include "symbolizer.h"
#include "hash_seed.h"

#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

/* Longest inline chain kept for one address (deeper chains are cut at the
 * outer end, keeping the innermost frames and the physical function). */
#define MAX_CHAIN 64
/* Frames the resolve cache keeps at most (56 bytes each, plus a slot of
 * the map): past it the cache starts afresh. A trace of a million distinct
 * return addresses made the cache the largest thing the analyzer held
 * (issue 32); a real program's addresses fit many times over. */
#define CACHE_MAX_FRAMES (1u << 19)

/* ------------------------------------------------------------------------ */
/* Hash map: (k1, k2) -> v, open addressing with linear probing.            */
/* k2 must be < 2^63: its top bit marks a used slot.                        */
/* ------------------------------------------------------------------------ */

#define SLOT_USED (1ull << 63)

struct kv {
    uint64_t k1, k2, v;
};

struct map {
    struct kv *slots;
    size_t cap; /* power of two, or 0 */
    size_t count;
};

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

/* Seeded per process (hash_seed.h): addresses come from the trace, which
 * could be crafted so that a fixed hash put them all in one probe run. */
static uint64_t hash_seed;

static uint64_t hash2(uint64_t a, uint64_t b)
{
    return mix64(a ^ hash_seed ^ mix64(b + 0x9e3779b97f4a7c15ull));
}

static bool map_get(const struct map *m, uint64_t k1, uint64_t k2, uint64_t *v)
{
    if (m->cap == 0)
        return false;
    k2 |= SLOT_USED;
    size_t mask = m->cap - 1;
    for (size_t i = hash2(k1, k2) & mask;; i = (i + 1) & mask) {
        const struct kv *e = &m->slots[i];
        if (e->k2 == 0)
            return false;
        if (e->k1 == k1 && e->k2 == k2) {
            *v = e->v;
            return true;
        }
    }
}

static void map_insert_slot(struct kv *slots, size_t cap, uint64_t k1, uint64_t k2, uint64_t v)
{
    size_t mask = cap - 1;
    size_t i = hash2(k1, k2) & mask;
    while (slots[i].k2 != 0)
        i = (i + 1) & mask;
    slots[i].k1 = k1;
    slots[i].k2 = k2;
    slots[i].v = v;
}

/* Inserts a key known to be absent. Returns 0 or -ENOMEM. */
static int map_put(struct map *m, uint64_t k1, uint64_t k2, uint64_t v)
{
    if ((m->count + 1) * 4 > m->cap * 3) {
        size_t ncap = m->cap ? m->cap * 2 : 64;
        struct kv *ns = calloc(ncap, sizeof *ns);
        if (!ns)
            return -ENOMEM;
        for (size_t i = 0; i < m->cap; i++)
            if (m->slots[i].k2 != 0)
                map_insert_slot(ns, ncap, m->slots[i].k1, m->slots[i].k2, m->slots[i].v);
        free(m->slots);
        m->slots = ns;
        m->cap = ncap;
    }
    map_insert_slot(m->slots, m->cap, k1, k2 | SLOT_USED, v);
    m->count++;
    return 0;
}

static void map_free(struct map *m)
{
    free(m->slots);
    m->slots = NULL;
    m->cap = m->count = 0;
}

/* ------------------------------------------------------------------------ */
/* String interning                                                         */
/* ------------------------------------------------------------------------ */

struct strtab {
    char **slots;
    size_t cap, count;
};

static uint64_t str_hash(const char *s, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ull;
    }
    return mix64(h);
}

/* Returns the interned copy of s[0..len), or NULL when out of memory.
 * *is_new (optional) tells whether it was added now. */
static const char *strtab_intern_len(struct strtab *t, const char *s, size_t len, bool *is_new)
{
    if (is_new)
        *is_new = false;
    if ((t->count + 1) * 4 > t->cap * 3) {
        size_t ncap = t->cap ? t->cap * 2 : 256;
        char **ns = calloc(ncap, sizeof *ns);
        if (!ns)
            return NULL;
        for (size_t i = 0; i < t->cap; i++) {
            char *e = t->slots[i];
            if (!e)
                continue;
            size_t j = str_hash(e, strlen(e)) & (ncap - 1);
            while (ns[j])
                j = (j + 1) & (ncap - 1);
            ns[j] = e;
        }
        free(t->slots);
        t->slots = ns;
        t->cap = ncap;
    }
    size_t mask = t->cap - 1;
    size_t i = str_hash(s, len) & mask;
    for (; t->slots[i]; i = (i + 1) & mask) {
        const char *e = t->slots[i];
        if (strncmp(e, s, len) == 0 && e[len] == '\0')
            return e;
    }
    char *copy = malloc(len + 1);
    if (!copy)
        return NULL;
    memcpy(copy, s, len);
    copy[len] = '\0';
    t->slots[i] = copy;
    t->count++;
    if (is_new)
        *is_new = true;
    return copy;
}

static const char *strtab_intern(struct strtab *t, const char *s)
{
    return s ? strtab_intern_len(t, s, strlen(s), NULL) : NULL;
}

static void strtab_free(struct strtab *t)
{
    for (size_t i = 0; i < t->cap; i++)
        free(t->slots[i]);
    free(t->slots);
    t->slots = NULL;
    t->cap = t->count = 0;
}

/* ------------------------------------------------------------------------ */
/* Types                                                                    */
/* ------------------------------------------------------------------------ */

enum mod_state { MOD_UNLOADED, MOD_READY, MOD_FAILED };

struct sub_range {
    uint64_t lo, hi;  /* CU-relative (DWARF) addresses */
    Dwarf_Off die;    /* offset of the DW_TAG_subprogram */
};

struct cu_index {
    struct sub_range *r;
    size_t n;
};

/* ELF symbol, absolute addresses. */
struct sym_ent {
    uint64_t lo, hi;      /* sizeless symbol (assembly label): hi = end of its section */
    const char *name;     /* owned by libdwfl */
    int binding;          /* higher is better: global 3, weak 2, local 1 */
    int ndx;              /* symbol table index: the lowest wins a tie */
};

struct sym_index {
    struct sym_ent *sized, *sizeless;
    uint64_t *sized_maxhi; /* running maximum of hi over sized[0..i] */
    size_t nsized, nsizeless;
};

struct module {
    struct cmt_symbolizer *owner;
    uint32_t index;       /* position in cmt_symbolizer.mods */
    uint32_t id;
    const char *path;     /* interned, "" when none was recorded */
    const char *label;    /* for warnings: the path or "#<id>" */
    uint64_t bias, lo, hi;
    uint8_t *build_id;
    size_t build_id_len;

    enum mod_state state;
    Dwfl *dwfl;
    Dwfl_Module *dm;
    const char *file;     /* interned: the file actually used */
    bool dwarf_checked;
    Dwarf *dw;            /* NULL: no DWARF */
    bool no_dwarf;        /* loaded, without DWARF (module_check_dwarf) */
    const char *dwarf_error; /* interned: libdwfl's reason */
    /* Why its frames lack names or lines (file not found, build-id
     * mismatch...): said only once a frame of it is shown without a line
     * (cmt_symbolizer_frame_shown), and then once. */
    const char *problem;  /* interned; NULL: none */
    bool shown;
    bool shown_no_dwarf;  /* shown while known to have no DWARF */
    /* A copy used in place of the recorded file (another build-id): said
     * whether or not a frame of it is shown. */
    const char *copy_note; /* interned; NULL: none */

    bool syms_built;
    struct sym_index syms;

    struct map cus;       /* CU DIE offset -> index into cuv */
    struct cu_index *cuv;
    size_t ncuv, cuvcap;
};

typedef char *(*demangle_fn)(const char *mangled, char *buf, size_t *len, int *status);

struct cmt_symbolizer {
    /* options */
    char **dirs;          /* debuginfo paths, as given */
    size_t ndirs;
    char *sysroot;        /* NULL when none */
    bool demangle;
    char *debuginfo_path; /* elfutils' debuginfo_path string */
    Dwfl_Callbacks callbacks;

    /* modules */
    struct module **mods;
    size_t nmods, modcap;
    uint32_t *order;      /* module indices sorted by lo */
    uint64_t *maxhi;      /* maxhi[i] = max hi of order[0..i] */
    bool order_dirty;

    /* results */
    struct map cache;     /* (ip, module index + 1 or 0) -> frames start << 8 | count */
    struct cmt_frame *pool;
    size_t npool, poolcap;
    struct cmt_symbolizer_stats stats;
    uint64_t warnings_dropped; /* past MAX_WARNINGS */
    char dropped_msg[160];
    struct strtab strings;
    struct map demangled; /* (interned mangled pointer, 1) -> interned demangled pointer */
    struct map joined;    /* (libdw file name pointer, comp_dir pointer) -> interned full path */

    /* warnings: the modules keep what is to be said of them (copy_note,
     * problem); the list said is built from them in the modules' order
     * (warnings_build) when warnings_dirty, so that it never depends on the
     * order frames were resolved or shown in (which follows the analyses'
     * tables, some keyed by addresses of the heap). */
    struct strtab warnset;
    const char **warnings;
    size_t nwarnings, warncap;
    bool warnings_dirty;
    /* Modules with no DWARF: one warning names them all (a Python job has
     * libc, python3 and a dozen extension modules without it; a line each
     * drowned what mattered). The first one's own warning while it is
     * alone; nodwarf_msg is rebuilt when the count changed. */
    struct module **nodwarf;
    size_t n_nodwarf, nodwarf_cap, nodwarf_msg_n;
    char *nodwarf_first; /* the warning of the first module, in full */
    char nodwarf_msg[1024];

    /* demangler */
    bool demangler_looked_up;
    demangle_fn cxa_demangle;
    void *stdcxx_handle;
};

/* ------------------------------------------------------------------------ */
/* Small helpers                                                            */
/* ------------------------------------------------------------------------ */

static char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *r = NULL;
    if (vasprintf(&r, fmt, ap) < 0)
        r = NULL;
    va_end(ap);
    return r;
}

/* Distinct warnings kept: a crafted trace of a million modules that are
 * not found would otherwise make as many warnings (and keep them). Past it
 * they are counted, and one more warning says how many. */
#define MAX_WARNINGS 64

/* What is said of module m whether or not a frame of it is shown (a copy
 * used in place of the recorded file), kept with m: the first one said. */
static void module_note(struct cmt_symbolizer *s, struct module *m, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void module_note(struct cmt_symbolizer *s, struct module *m, const char *fmt, ...)
{
    if (m->copy_note)
        return;
    va_list ap;
    va_start(ap, fmt);
    char *msg = NULL;
    int n = vasprintf(&msg, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    bool is_new = false;
    m->copy_note = strtab_intern_len(&s->warnset, msg, (size_t)n, &is_new);
    free(msg);
    s->warnings_dirty = true;
}

/* w (interned) joins the list (warnings_build). */
static void warning_push(struct cmt_symbolizer *s, const char *w)
{
    if (s->nwarnings == MAX_WARNINGS) {
        s->warnings_dropped++;
        return;
    }
    if (s->nwarnings == s->warncap) {
        size_t ncap = s->warncap ? s->warncap * 2 : 16;
        const char **nw = realloc(s->warnings, ncap * sizeof *nw);
        if (!nw)
            return;
        s->warnings = nw;
        s->warncap = ncap;
    }
    s->warnings[s->nwarnings++] = w;
}

static struct module *find_module(struct cmt_symbolizer *s, uint64_t pc, uint32_t known);

/* A problem of module m, kept for when one of its frames is shown
 * (cmt_symbolizer_frame_shown): a module whose frames every stack folds
 * away (a wheel's libtorch, the interpreter, libc under a Python program)
 * changes nothing the user reads, and a warning about it is noise. */
static void module_warn(struct cmt_symbolizer *s, struct module *m, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void module_warn(struct cmt_symbolizer *s, struct module *m, const char *fmt, ...)
{
    if (m->problem)
        return;
    va_list ap;
    va_start(ap, fmt);
    char *msg = NULL;
    int n = vasprintf(&msg, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    bool is_new = false;
    m->problem = strtab_intern_len(&s->warnset, msg, (size_t)n, &is_new);
    free(msg);
    s->warnings_dirty = true;
}

static void hex_id(const uint8_t *id, size_t len, char *out, size_t outsz)
{
    static const char digits[] = "0123456789abcdef";
    size_t o = 0;
    for (size_t i = 0; i < len && o + 2 < outsz; i++) {
        out[o++] = digits[id[i] >> 4];
        out[o++] = digits[id[i] & 15];
    }
    out[o] = '\0';
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static char *path_join(const char *a, const char *b)
{
    size_t la = strlen(a);
    while (la > 1 && a[la - 1] == '/')
        la--;
    while (*b == '/')
        b++;
    return xasprintf("%.*s/%s", (int)la, a, b);
}

/* ------------------------------------------------------------------------ */
/* Demangling                                                               */
/* ------------------------------------------------------------------------ */

static demangle_fn get_demangler(struct cmt_symbolizer *s)
{
    if (!s->demangler_looked_up) {
        s->demangler_looked_up = true;
        void *sym = dlsym(RTLD_DEFAULT, "__cxa_demangle");
        if (!sym) {
            s->stdcxx_handle = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
            if (s->stdcxx_handle)
                sym = dlsym(s->stdcxx_handle, "__cxa_demangle");
        }
        /* POSIX guarantees object and function pointers convert. */
        memcpy(&s->cxa_demangle, &sym, sizeof sym);
    }
    return s->cxa_demangle;
}

/* Interns a function name, demangled when asked and possible. */
static const char *function_name(struct cmt_symbolizer *s, const char *raw)
{
    if (!raw || !*raw)
        return NULL;
    const char *name = strtab_intern(&s->strings, raw);
    if (!name || !s->demangle || raw[0] != '_' || raw[1] != 'Z')
        return name;
    uint64_t v;
    if (map_get(&s->demangled, (uint64_t)(uintptr_t)name, 1, &v))
        return (const char *)(uintptr_t)v;
    const char *result = name;
    demangle_fn dem = get_demangler(s);
    if (dem) {
        int status = -1;
        char *d = dem(name, NULL, NULL, &status);
        if (d && status == 0) {
            const char *interned = strtab_intern(&s->strings, d);
            if (interned)
                result = interned;
        }
        free(d);
    }
    map_put(&s->demangled, (uint64_t)(uintptr_t)name, 1, (uint64_t)(uintptr_t)result);
    return result;
}

/* ------------------------------------------------------------------------ */
/* Finding files                                                            */
/* ------------------------------------------------------------------------ */

/* A trace is untrusted input: it comes from other machines and other users,
 * and every module path it names is a path this process opens, perhaps as
 * root. So a candidate file is opened only when it is a regular file of at
 * least an ELF header's size on a file system that stores files: a FIFO
 * would block the analyzer for good (a crafted trace hung report, check,
 * export, frag and diff so, issue 32), a device node may do anything on
 * open, /proc and /sys files are not what they seem (/proc/kmsg blocks on
 * read, its size says 0). Checked before the open (stat: no open of a FIFO
 * at all) and again on the descriptor (the same file, not one swapped in
 * between); O_NONBLOCK and O_NOCTTY in case it was swapped all the same.
 * Returns the descriptor, or -1. */
static int open_regular_file(const char *path)
{
    struct stat before, st;
    if (stat(path, &before) != 0 || !S_ISREG(before.st_mode) || before.st_size < (off_t)sizeof(Elf32_Ehdr))
        return -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return -1;
    struct statfs fs;
    bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_dev == before.st_dev &&
              st.st_ino == before.st_ino && fstatfs(fd, &fs) == 0;
    switch (ok ? (unsigned long)fs.f_type : 0ul) {
    case 0:
    case 0x9fa0:     /* PROC_SUPER_MAGIC */
    case 0x62656572: /* SYSFS_MAGIC */
    case 0x1cd1:     /* DEVPTS_SUPER_MAGIC */
    case 0x27e0eb:   /* CGROUP_SUPER_MAGIC */
    case 0x63677270: /* CGROUP2_SUPER_MAGIC */
    case 0x64626720: /* DEBUGFS_MAGIC */
    case 0x74726163: /* TRACEFS_MAGIC */
    case 0x73636673: /* SECURITYFS_MAGIC */
    case 0x62656570: /* CONFIGFS_MAGIC */
        close(fd);
        return -1;
    default:
        return fd;
    }
}

/* What a path that exists but is no regular file is ("a FIFO"), for the
 * warning; NULL when it is a regular file or does not exist. */
static const char *special_file_kind(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0 || S_ISREG(st.st_mode))
        return NULL;
    return S_ISFIFO(st.st_mode)   ? "a FIFO"
           : S_ISCHR(st.st_mode)  ? "a character device"
           : S_ISBLK(st.st_mode)  ? "a block device"
           : S_ISDIR(st.st_mode)  ? "a directory"
           : S_ISSOCK(st.st_mode) ? "a socket"
                                  : "a special file";
}

/* Whether a path has a ".." component: a module path joined under
 * --sysroot must stay under it. */
static bool climbs_up(const char *path)
{
    for (const char *p = path; (p = strstr(p, "..")); p += 2)
        if ((p == path || p[-1] == '/') && (p[2] == '\0' || p[2] == '/'))
            return true;
    return false;
}

enum cand_result { CAND_NONE, CAND_OK, CAND_MISMATCH };

/* Checks whether path is an ELF file with the wanted build-id (any ELF file
 * when want_len is 0). need_debug: it must carry .debug_info (a debuginfo
 * file). need_phdrs: it must have program headers (usable as the module's
 * file). On mismatch, found_hex gets the file's build-id ("none"). */
static enum cand_result check_elf(const char *path, const uint8_t *want, size_t want_len,
                                  bool need_debug, bool need_phdrs,
                                  char *found_hex, size_t found_hex_size)
{
    int fd = open_regular_file(path);
    if (fd < 0)
        return CAND_NONE;
    enum cand_result res = CAND_NONE;
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    if (!elf || elf_kind(elf) != ELF_K_ELF)
        goto out;
    if (need_phdrs) {
        size_t phnum = 0;
        if (elf_getphdrnum(elf, &phnum) != 0 || phnum == 0)
            goto out;
    }
    if (want_len > 0) {
        const void *id = NULL;
        ssize_t n = dwelf_elf_gnu_build_id(elf, &id);
        if (n <= 0 || (size_t)n != want_len || memcmp(id, want, want_len) != 0) {
            if (found_hex) {
                if (n > 0)
                    hex_id(id, (size_t)n, found_hex, found_hex_size);
                else
                    snprintf(found_hex, found_hex_size, "none");
            }
            res = CAND_MISMATCH;
            goto out;
        }
    }
    if (need_debug) {
        size_t shstrndx;
        bool has = false;
        if (elf_getshdrstrndx(elf, &shstrndx) == 0) {
            for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn && !has; scn = elf_nextscn(elf, scn)) {
                GElf_Shdr sh;
                if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
                    continue;
                const char *nm = elf_strptr(elf, shstrndx, sh.sh_name);
                has = nm && (strcmp(nm, ".debug_info") == 0 || strcmp(nm, ".zdebug_info") == 0);
            }
        }
        if (!has)
            goto out;
    }
    res = CAND_OK;
out:
    if (elf)
        elf_end(elf);
    close(fd);
    return res;
}

/* "DIR/.build-id/xx/rest<suffix>" */
static char *build_id_path(const char *dir, const uint8_t *id, size_t len, const char *suffix)
{
    if (len < 2)
        return NULL;
    char hex[2 * 256 + 1];
    hex_id(id, len > 256 ? 256 : len, hex, sizeof hex);
    size_t ld = strlen(dir);
    while (ld > 1 && dir[ld - 1] == '/')
        ld--;
    return xasprintf("%.*s/.build-id/%.2s/%s%s", (int)ld, dir, hex, hex + 2, suffix);
}

struct search {
    struct module *m;
    char *mismatch_path;          /* first candidate with the wrong build-id */
    char mismatch_hex[2 * 64 + 8];
    char *found;
};

/* Consumes cand. Returns true when the search is over. */
static bool try_candidate(struct search *se, char *cand, bool debug_only)
{
    if (!cand)
        return false;
    char hex[sizeof se->mismatch_hex];
    enum cand_result r = check_elf(cand, se->m->build_id, se->m->build_id_len,
                                   debug_only, true, hex, sizeof hex);
    if (r == CAND_OK) {
        se->found = cand;
        return true;
    }
    if (r == CAND_MISMATCH && !se->mismatch_path) {
        se->mismatch_path = cand;
        memcpy(se->mismatch_hex, hex, sizeof hex);
        return false;
    }
    free(cand);
    return false;
}

/* Returns the file to use for m (malloc'd) or NULL; warns as needed. */
static char *find_module_file(struct cmt_symbolizer *s, struct module *m)
{
    struct search se = { .m = m };
    const char *path = m->path;
    const char *base = *path ? base_name(path) : "";
    const uint8_t *id = m->build_id;
    size_t idlen = m->build_id_len;
    bool done = false;

    /* The recorded path itself only when absolute: a relative one (a
     * library opened as "./libx.so", or a crafted "../../etc/shadow") would
     * be resolved against the analyzer's working directory, which has
     * nothing to do with the recording. --sysroot takes either kind, but
     * never one that climbs out of it; --debuginfo-path DIR finds it by its
     * base name. */
    if (!done && s->sysroot && *path && !climbs_up(path))
        done = try_candidate(&se, path_join(s->sysroot, path), false);
    if (!done && path[0] == '/')
        done = try_candidate(&se, strdup(path), false);
    for (size_t i = 0; i < s->ndirs && !done; i++) {
        if (idlen)
            done = try_candidate(&se, build_id_path(s->dirs[i], id, idlen, ""), false);
        if (!done && *base)
            done = try_candidate(&se, path_join(s->dirs[i], base), false);
    }
    if (!done && idlen) {
        if (s->sysroot) {
            char *d = path_join(s->sysroot, "/usr/lib/debug");
            if (d)
                done = try_candidate(&se, build_id_path(d, id, idlen, ""), false);
            free(d);
        }
        if (!done)
            done = try_candidate(&se, build_id_path("/usr/lib/debug", id, idlen, ""), false);
    }
    /* Debug-only files (objcopy --only-keep-debug) keep the program headers,
     * .symtab and DWARF: enough to symbolize when the module's file itself is
     * not at hand. */
    for (size_t i = 0; i < s->ndirs && !done; i++) {
        if (idlen)
            done = try_candidate(&se, build_id_path(s->dirs[i], id, idlen, ".debug"), true);
        if (!done && *base) {
            char *dbg = xasprintf("%s.debug", base);
            if (dbg)
                done = try_candidate(&se, path_join(s->dirs[i], dbg), true);
            free(dbg);
        }
    }

    char want_hex[2 * 64 + 1];
    hex_id(id, idlen > 64 ? 64 : idlen, want_hex, sizeof want_hex);
    if (se.found && se.mismatch_path)
        module_note(s, m, "module %s: %s has build-id %s, not the recorded %s; using %s instead",
              m->label, se.mismatch_path, se.mismatch_hex, want_hex, se.found);
    else if (!se.found && se.mismatch_path)
        module_warn(s, m, "module %s: build-id mismatch: %s has build-id %s, recorded %s; "
              "no file with the recorded build-id found, showing module+offset only; --sysroot DIR or "
              "--debuginfo-path DIR finds the recorded one elsewhere",
              m->label, se.mismatch_path, se.mismatch_hex, want_hex);
    else if (!se.found && path[0] == '/' && special_file_kind(path))
        module_warn(s, m, "module %s: %s is %s, not a regular file: not opened, showing module+offset only; --sysroot DIR "
              "finds a copy elsewhere",
              m->label, path, special_file_kind(path));
    else if (!se.found && *path && path[0] != '/')
        module_warn(s, m, "module %s: recorded with a relative path, which is not looked up in the current directory; "
              "showing module+offset only: --sysroot DIR looks it up under DIR, --debuginfo-path DIR by its name",
              m->label);
    else if (!se.found && idlen)
        module_warn(s, m, "module %s: file not found (build-id %s), showing module+offset only; --sysroot DIR or "
              "--debuginfo-path DIR finds a copy elsewhere",
              m->label, want_hex);
    else if (!se.found)
        module_warn(s, m, "module %s: file not found, showing module+offset only; --sysroot DIR finds a copy elsewhere",
              m->label);
    free(se.mismatch_path);
    return se.found;
}

/* libdwfl find_debuginfo callback: our debuginfo paths first, each candidate
 * checked against the module's build-id, then elfutils' standard search. */
static int find_debuginfo_cb(Dwfl_Module *dm, void **userdata, const char *modname,
                             Dwarf_Addr base, const char *file_name,
                             const char *debuglink_file, GElf_Word debuglink_crc,
                             char **debuginfo_file_name)
{
    struct module *m = userdata ? *userdata : NULL;
    if (m && m->owner->ndirs > 0) {
        struct cmt_symbolizer *s = m->owner;
        const unsigned char *bits = NULL;
        GElf_Addr vaddr;
        int n = dwfl_module_build_id(dm, &bits, &vaddr);
        const uint8_t *id = n > 0 ? bits : NULL;
        size_t idlen = n > 0 ? (size_t)n : 0;
        const char *names[3] = {
            file_name ? base_name(file_name) : NULL,
            *m->path ? base_name(m->path) : NULL,
            NULL,
        };
        for (size_t i = 0; i < s->ndirs; i++) {
            char *cands[4] = { NULL, NULL, NULL, NULL };
            size_t nc = 0;
            if (idlen)
                cands[nc++] = build_id_path(s->dirs[i], id, idlen, ".debug");
            for (size_t k = 0; k < 2; k++) {
                if (!names[k] || (k == 1 && names[0] && strcmp(names[0], names[1]) == 0))
                    continue;
                char *dbg = xasprintf("%s.debug", names[k]);
                if (dbg)
                    cands[nc++] = path_join(s->dirs[i], dbg);
                free(dbg);
            }
            if (debuglink_file && *debuglink_file)
                cands[nc++] = path_join(s->dirs[i], base_name(debuglink_file));
            int fd = -1;
            for (size_t c = 0; c < nc; c++) {
                if (fd < 0 && cands[c] &&
                    check_elf(cands[c], id, idlen, true, false, NULL, 0) == CAND_OK) {
                    fd = open_regular_file(cands[c]);
                    if (fd >= 0) {
                        *debuginfo_file_name = cands[c];
                        cands[c] = NULL;
                    }
                }
                free(cands[c]);
            }
            if (fd >= 0)
                return fd;
        }
    }
    return dwfl_standard_find_debuginfo(dm, userdata, modname, base, file_name,
                                        debuglink_file, debuglink_crc, debuginfo_file_name);
}

/* ------------------------------------------------------------------------ */
/* Modules                                                                  */
/* ------------------------------------------------------------------------ */

static void module_load(struct cmt_symbolizer *s, struct module *m)
{
    m->state = MOD_FAILED;
    char *file = find_module_file(s, m);
    if (!file)
        return;
    m->file = strtab_intern(&s->strings, file);
    Dwfl *dwfl = dwfl_begin(&s->callbacks);
    if (!dwfl) {
        module_warn(s, m, "module %s: %s: %s", m->label, file, dwfl_errmsg(-1));
        free(file);
        return;
    }
    dwfl_report_begin(dwfl);
    /* Our descriptor, opened as every candidate is (open_regular_file), not
     * libdwfl's own open of the name: libdwfl keeps it on success. */
    int fd = open_regular_file(file);
    Dwfl_Module *dm = fd < 0 ? NULL
                             : dwfl_report_elf(dwfl, *m->path ? base_name(m->path) : base_name(file), file, fd,
                                               m->bias, true);
    if (!dm) {
        if (fd >= 0)
            close(fd);
        module_warn(s, m, "module %s: cannot load %s: %s", m->label, file, fd < 0 ? "it is no longer a regular file"
                                                                         : dwfl_errmsg(-1));
        dwfl_end(dwfl);
        free(file);
        return;
    }
    dwfl_report_end(dwfl, NULL, NULL);
    void **ud = NULL;
    dwfl_module_info(dm, &ud, NULL, NULL, NULL, NULL, NULL, NULL);
    if (ud)
        *ud = m;
    m->dwfl = dwfl;
    m->dm = dm;
    m->state = MOD_READY;
    free(file);
}

static void module_check_dwarf(struct cmt_symbolizer *s, struct module *m)
{
    if (m->dwarf_checked)
        return;
    m->dwarf_checked = true;
    Dwarf_Addr bias;
    m->dw = dwfl_module_getdwarf(m->dm, &bias);
    if (m->dw)
        return;
    m->no_dwarf = true;
    bool is_new;
    m->dwarf_error = strtab_intern_len(&s->warnset, dwfl_errmsg(-1), strlen(dwfl_errmsg(-1)), &is_new);
}

/* Where a module's debug information would come from: a system library's
 * from its distribution's debug package; a module inside a Python package
 * (a pip wheel: libtorch, NVIDIA's libraries) from nowhere, since wheels
 * ship none; anything else is the user's to build with -g. */
enum dwarf_remedy { REMEDY_PACKAGE, REMEDY_NONE, REMEDY_BUILD };

static enum dwarf_remedy dwarf_remedy_of(const struct module *m)
{
    const char *p = m->path ? m->path : "";
    if (strstr(p, "/site-packages/") || strstr(p, "/dist-packages/"))
        return REMEDY_NONE;
    if (!strncmp(p, "/usr/", 5) || !strncmp(p, "/lib/", 5) || !strncmp(p, "/lib64/", 7) || !strncmp(p, "/bin/", 5))
        return REMEDY_PACKAGE;
    return REMEDY_BUILD;
}

static const char *const remedy_one[] = {
    [REMEDY_PACKAGE] = "install its debug symbols (its -dbg or -dbgsym package) or give --debuginfo-path DIR "
                       "where its debug file is",
    [REMEDY_BUILD] = "build it with -g, or give --debuginfo-path DIR where its debug file is",
};

/* A module without DWARF one of whose frames is shown without a line, and
 * whose debug information can be had: listed in the one warning of them. */
static void nodwarf_add(struct cmt_symbolizer *s, struct module *m)
{
    enum dwarf_remedy remedy = dwarf_remedy_of(m);
    if (remedy == REMEDY_NONE)
        return;
    if (s->n_nodwarf == s->nodwarf_cap) {
        size_t ncap = s->nodwarf_cap ? s->nodwarf_cap * 2 : 8;
        struct module **n = realloc(s->nodwarf, ncap * sizeof *n);
        if (!n)
            return;
        s->nodwarf = n;
        s->nodwarf_cap = ncap;
    }
    s->nodwarf[s->n_nodwarf++] = m;
    if (s->n_nodwarf == 1)
        s->nodwarf_first = xasprintf("module %s: no DWARF debug info for %s (%s): its frames shown have no file "
                                     "and line; %s",
                                     m->label, m->file, m->dwarf_error ? m->dwarf_error : "", remedy_one[remedy]);
}

void cmt_symbolizer_frame_shown(struct cmt_symbolizer *s, const struct cmt_frame *fr, uint32_t modules_known)
{
    if (!s || !fr || fr->ip == 0)
        return;
    struct module *m = find_module(s, fr->ip - 1, modules_known);
    if (!m || m->shown)
        return;
    m->shown = true;
    m->shown_no_dwarf = m->no_dwarf;
    s->warnings_dirty = true;
}

/* The one warning of the modules without DWARF: the first module's own
 * while it is alone, else their names (up to a line's worth). */
void cmt_symbolizer_forget_shown(struct cmt_symbolizer *s)
{
    if (!s)
        return;
    /* The warnings said for a shown module's problem go (they come back
     * when one of its frames is shown again); the others (a copy used in
     * place of the recorded file, module_note) stay. */
    for (size_t k = 0; k < s->nmods; k++)
        s->mods[k]->shown = s->mods[k]->shown_no_dwarf = false;
    s->warnings_dirty = true;
}

/* The list said, from the modules, in their order (the trace's: ids
 * increase with the modules' loads), each module's copy note then its
 * problem; a text said of several modules (the same path recorded twice)
 * once, where its first module puts it. The first MAX_WARNINGS, then a
 * count of the rest; the modules without DWARF in the one warning of them,
 * in the same order. */
static void warnings_build(struct cmt_symbolizer *s)
{
    s->nwarnings = 0;
    s->warnings_dropped = 0;
    s->n_nodwarf = 0;
    free(s->nodwarf_first);
    s->nodwarf_first = NULL;
    s->nodwarf_msg_n = 0;
    struct map said = {0};
    for (size_t k = 0; k < s->nmods; k++) {
        struct module *m = s->mods[k];
        const char *w[2] = {m->copy_note, m->shown ? m->problem : NULL};
        for (size_t j = 0; j < 2; j++) {
            uint64_t dummy;
            if (!w[j] || map_get(&said, (uint64_t)(uintptr_t)w[j], 1, &dummy))
                continue;
            map_put(&said, (uint64_t)(uintptr_t)w[j], 1, 1); /* out of memory: said twice at worst */
            warning_push(s, w[j]);
        }
        if (m->shown && m->shown_no_dwarf)
            nodwarf_add(s, m);
    }
    map_free(&said);
    s->warnings_dirty = false;
}

static const char *nodwarf_warning(struct cmt_symbolizer *s)
{
    if (s->n_nodwarf == 1)
        return s->nodwarf_first;
    if (s->nodwarf_msg_n == s->n_nodwarf)
        return s->nodwarf_msg;
    char names[600];
    size_t used = 0, shown = 0;
    names[0] = '\0';
    for (size_t i = 0; i < s->n_nodwarf; i++) {
        const char *base = strrchr(s->nodwarf[i]->label, '/');
        base = base ? base + 1 : s->nodwarf[i]->label;
        int n = snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "", base);
        if (n < 0 || (size_t)n >= sizeof names - used - 16) {
            names[used] = '\0';
            break;
        }
        used += (size_t)n;
        shown++;
    }
    char more[32] = "";
    if (shown < s->n_nodwarf)
        snprintf(more, sizeof more, " and %zu more", s->n_nodwarf - shown);
    bool packages = true, builds = true;
    for (size_t i = 0; i < s->n_nodwarf; i++) {
        packages = packages && dwarf_remedy_of(s->nodwarf[i]) == REMEDY_PACKAGE;
        builds = builds && dwarf_remedy_of(s->nodwarf[i]) == REMEDY_BUILD;
    }
    snprintf(s->nodwarf_msg, sizeof s->nodwarf_msg,
             "no DWARF debug info in %zu modules (%s%s): their frames shown have no file and line; %s", s->n_nodwarf,
             names, more,
             packages ? "install their debug symbols (their -dbg or -dbgsym packages) or give --debuginfo-path DIR "
                        "where their debug files are"
             : builds ? "build them with -g, or give --debuginfo-path DIR where their debug files are"
                      : "install the system libraries' debug symbols (-dbg or -dbgsym packages), build the others "
                        "with -g, or give --debuginfo-path DIR where their debug files are");
    s->nodwarf_msg_n = s->n_nodwarf;
    return s->nodwarf_msg;
}

static void module_free(struct module *m)
{
    free(m->syms.sized);
    free(m->syms.sizeless);
    free(m->syms.sized_maxhi);
    if (m->dwfl)
        dwfl_end(m->dwfl);
    for (size_t i = 0; i < m->ncuv; i++)
        free(m->cuv[i].r);
    free(m->cuv);
    map_free(&m->cus);
    free(m->build_id);
    free(m);
}

static int cmp_order(const void *a, const void *b, void *arg)
{
    struct module *const *mods = arg;
    const struct module *x = mods[*(const uint32_t *)a];
    const struct module *y = mods[*(const uint32_t *)b];
    if (x->lo != y->lo)
        return x->lo < y->lo ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

static void rebuild_order(struct cmt_symbolizer *s)
{
    for (size_t i = 0; i < s->nmods; i++)
        s->order[i] = (uint32_t)i;
    qsort_r(s->order, s->nmods, sizeof *s->order, cmp_order, s->mods);
    uint64_t mx = 0;
    for (size_t i = 0; i < s->nmods; i++) {
        const struct module *m = s->mods[s->order[i]];
        if (m->hi > mx)
            mx = m->hi;
        s->maxhi[i] = mx;
    }
    s->order_dirty = false;
}

static struct module *find_module(struct cmt_symbolizer *s, uint64_t pc, uint32_t known)
{
    if (s->order_dirty)
        rebuild_order(s);
    /* last position with lo <= pc */
    size_t lo = 0, hi = s->nmods;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->mods[s->order[mid]]->lo <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    struct module *best = NULL;
    for (size_t j = lo; j-- > 0 && s->maxhi[j] > pc;) {
        struct module *m = s->mods[s->order[j]];
        if (m->lo <= pc && pc < m->hi && (known == 0 || m->id <= known) &&
            (!best || m->id > best->id || (m->id == best->id && m->index > best->index)))
            best = m;
    }
    return best;
}

/* ------------------------------------------------------------------------ */
/* DWARF                                                                    */
/* ------------------------------------------------------------------------ */

struct range_vec {
    struct sub_range *r;
    size_t n, cap;
    bool oom;
};

static void index_walk(Dwarf_Die *parent, struct range_vec *v, int depth)
{
    Dwarf_Die child;
    if (depth > 32 || dwarf_child(parent, &child) != 0)
        return;
    do {
        switch (dwarf_tag(&child)) {
        case DW_TAG_subprogram: {
            Dwarf_Addr base, start, end;
            ptrdiff_t off = 0;
            while ((off = dwarf_ranges(&child, off, &base, &start, &end)) > 0) {
                if (end <= start)
                    continue;
                if (v->n == v->cap) {
                    size_t ncap = v->cap ? v->cap * 2 : 64;
                    struct sub_range *nr = realloc(v->r, ncap * sizeof *nr);
                    if (!nr) {
                        v->oom = true;
                        return;
                    }
                    v->r = nr;
                    v->cap = ncap;
                }
                v->r[v->n++] = (struct sub_range){ start, end, dwarf_dieoffset(&child) };
            }
            /* functions nested in it (GNU C nested functions, ...) */
            index_walk(&child, v, depth + 1);
            break;
        }
        case DW_TAG_lexical_block:
        case DW_TAG_namespace:
        case DW_TAG_module:
        case DW_TAG_class_type:
        case DW_TAG_structure_type:
        case DW_TAG_union_type:
        case DW_TAG_interface_type:
            index_walk(&child, v, depth + 1);
            break;
        default:
            break;
        }
    } while (!v->oom && dwarf_siblingof(&child, &child) == 0);
}

static int cmp_range(const void *a, const void *b)
{
    const struct sub_range *x = a, *y = b;
    if (x->lo != y->lo)
        return x->lo < y->lo ? -1 : 1;
    return (x->hi > y->hi) - (x->hi < y->hi);
}

static const struct cu_index *cu_index_get(struct module *m, Dwarf_Die *cudie)
{
    uint64_t key = dwarf_dieoffset(cudie), v;
    if (map_get(&m->cus, key, 0, &v))
        return &m->cuv[v];
    if (m->ncuv == m->cuvcap) {
        size_t ncap = m->cuvcap ? m->cuvcap * 2 : 16;
        struct cu_index *nv = realloc(m->cuv, ncap * sizeof *nv);
        if (!nv)
            return NULL;
        m->cuv = nv;
        m->cuvcap = ncap;
    }
    struct range_vec rv = { 0 };
    index_walk(cudie, &rv, 0);
    if (rv.oom) {
        free(rv.r);
        rv.r = NULL;
        rv.n = 0;
    }
    qsort(rv.r, rv.n, sizeof *rv.r, cmp_range);
    if (map_put(&m->cus, key, 0, m->ncuv) != 0) {
        free(rv.r);
        return NULL;
    }
    m->cuv[m->ncuv] = (struct cu_index){ rv.r, rv.n };
    return &m->cuv[m->ncuv++];
}

static bool is_scope_tag(int tag)
{
    switch (tag) {
    case DW_TAG_lexical_block:
    case DW_TAG_inlined_subroutine:
    case DW_TAG_try_block:
    case DW_TAG_catch_block:
    case DW_TAG_with_stmt:
        return true;
    default:
        return false;
    }
}

/* From the physical function's DIE, walks down the scopes containing pc and
 * collects chain[0] = sub, chain[1..] = the inlined subroutines, outer to
 * inner. Returns the chain length. */
static int descend(Dwarf_Die *sub, Dwarf_Addr pc, Dwarf_Die *chain, int max)
{
    int n = 0;
    chain[n++] = *sub;
    Dwarf_Die cur = *sub;
    for (int depth = 0; depth < 256; depth++) {
        Dwarf_Die child;
        if (dwarf_child(&cur, &child) != 0)
            break;
        bool found = false;
        do {
            if (is_scope_tag(dwarf_tag(&child)) && dwarf_haspc(&child, pc) == 1) {
                found = true;
                break;
            }
        } while (dwarf_siblingof(&child, &child) == 0);
        if (!found)
            break;
        if (dwarf_tag(&child) == DW_TAG_inlined_subroutine) {
            if (n == max) { /* keep the innermost: drop the outermost inlined */
                memmove(&chain[1], &chain[2], (size_t)(max - 2) * sizeof *chain);
                n--;
            }
            chain[n++] = child;
        }
        cur = child;
    }
    return n;
}

/* Fallback when the CU index does not know pc: dwarf_getscopes. Its scopes
 * past an inlined subroutine are the abstract origin's, so take the
 * innermost scope and ask for its concrete parents. */
static int chain_by_getscopes(Dwarf *dw, Dwarf_Die *cudie, Dwarf_Addr pc, Dwarf_Die *chain, int max)
{
    Dwarf_Die *scopes = NULL;
    int ns = dwarf_getscopes(cudie, pc, &scopes);
    if (ns <= 0) {
        free(scopes);
        return 0;
    }
    Dwarf_Die inner;
    Dwarf_Die *ok = dwarf_offdie(dw, dwarf_dieoffset(&scopes[0]), &inner);
    free(scopes);
    scopes = NULL;
    if (!ok)
        return 0;
    ns = dwarf_getscopes_die(&inner, &scopes);
    int sub = -1;
    for (int i = 0; i < ns; i++) {
        if (dwarf_tag(&scopes[i]) == DW_TAG_subprogram) {
            sub = i;
            break;
        }
    }
    int n = 0;
    if (sub >= 0) {
        Dwarf_Die tmp[MAX_CHAIN];
        int k = 0;
        for (int i = 0; i <= sub && k < MAX_CHAIN; i++) {
            int tag = dwarf_tag(&scopes[i]);
            if (tag == DW_TAG_inlined_subroutine || tag == DW_TAG_subprogram)
                tmp[k++] = scopes[i]; /* innermost first */
        }
        if (k > 0 && dwarf_tag(&tmp[k - 1]) != DW_TAG_subprogram)
            tmp[k - 1] = scopes[sub]; /* truncated: keep the physical function */
        /* chain is outer to inner */
        int keep = k < max ? k : max;
        chain[n++] = tmp[k - 1];
        for (int i = keep - 2; i >= 0; i--)
            chain[n++] = tmp[i];
    }
    free(scopes);
    return n;
}

static int find_chain(struct module *m, Dwarf_Die *cudie, Dwarf_Addr pc, Dwarf_Die *chain, int max)
{
    const struct cu_index *ci = cu_index_get(m, cudie);
    if (ci && ci->n > 0) {
        size_t lo = 0, hi = ci->n;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (ci->r[mid].lo <= pc)
                lo = mid + 1;
            else
                hi = mid;
        }
        /* A few predecessors in case of overlapping ranges. */
        for (size_t j = lo, tries = 0; j-- > 0 && tries < 4; tries++) {
            if (ci->r[j].lo <= pc && pc < ci->r[j].hi) {
                Dwarf_Die sub;
                if (dwarf_offdie(m->dw, ci->r[j].die, &sub))
                    return descend(&sub, pc, chain, max);
            }
        }
    }
    return chain_by_getscopes(m->dw, cudie, pc, chain, max);
}

/* The DIE's linkage name (mangled, so qualified), or NULL when it has none. */
static const char *die_linkage_name(Dwarf_Die *die)
{
    Dwarf_Attribute attr;
    const char *n = NULL;
    if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr))
        n = dwarf_formstring(&attr);
    if (!n && dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr))
        n = dwarf_formstring(&attr);
    return n;
}

static const char *die_function_name(struct cmt_symbolizer *s, Dwarf_Die *die)
{
    const char *n = die_linkage_name(die);
    return function_name(s, n ? n : dwarf_diename(die));
}

/* A source file name as libdw gives it, made absolute with the CU's
 * DW_AT_comp_dir when it is relative (DWARF 5 directory entries are relative
 * to the compilation directory), then interned. Not normalized: "dir/../x"
 * stays as it is, since symbolic links on the traced machine are unknown. */
static const char *source_file(struct cmt_symbolizer *s, const char *f, const char *comp_dir)
{
    if (!f || !*f)
        return NULL;
    if (f[0] == '/' || !comp_dir || comp_dir[0] != '/')
        return strtab_intern(&s->strings, f);
    uint64_t v;
    if (map_get(&s->joined, (uint64_t)(uintptr_t)f, (uint64_t)(uintptr_t)comp_dir, &v))
        return (const char *)(uintptr_t)v;
    const char *rel = f;
    while (rel[0] == '.' && rel[1] == '/')
        rel += 2;
    char *full = path_join(comp_dir, rel);
    const char *r = full ? strtab_intern(&s->strings, full) : NULL;
    free(full);
    if (!r)
        return strtab_intern(&s->strings, f);
    map_put(&s->joined, (uint64_t)(uintptr_t)f, (uint64_t)(uintptr_t)comp_dir, (uint64_t)(uintptr_t)r);
    return r;
}

static const char *cu_comp_dir(Dwarf_Die *cudie)
{
    Dwarf_Attribute attr;
    return cudie ? dwarf_formstring(dwarf_attr(cudie, DW_AT_comp_dir, &attr)) : NULL;
}

static int die_udata(Dwarf_Die *die, unsigned name, Dwarf_Word *out)
{
    Dwarf_Attribute attr;
    return dwarf_formudata(dwarf_attr(die, name, &attr), out);
}

/* ------------------------------------------------------------------------ */
/* ELF symbols                                                              */
/* ------------------------------------------------------------------------ */
/* dwfl_module_addrinfo scans the whole symbol table on every call; with
 * .symtab of tens of thousands of symbols and 10^5 addresses that is far too
 * slow, so each module's code symbols are sorted once. The choice follows
 * elfutils' addrsym: the containing sized symbol with the closest start, the
 * better binding among aliases; failing that, the closest sizeless symbol
 * (assembly label) at or below the address, provided no sized symbol below
 * the address extends past it. */

static int binding_value(const GElf_Sym *sym)
{
    switch (GELF_ST_BIND(sym->st_info)) {
    case STB_GLOBAL:
        return 3;
    case STB_WEAK:
        return 2;
    case STB_LOCAL:
        return 1;
    default:
        return 0;
    }
}

static int cmp_sym(const void *a, const void *b)
{
    /* by start, then from worst to best: binding up, index down */
    const struct sym_ent *x = a, *y = b;
    if (x->lo != y->lo)
        return x->lo < y->lo ? -1 : 1;
    if (x->binding != y->binding)
        return x->binding < y->binding ? -1 : 1;
    return (x->ndx < y->ndx) - (x->ndx > y->ndx);
}

/* Absolute end of the section a symbol is defined in (0 when unknown). */
static uint64_t section_end(Elf *elf, GElf_Word shndx, Dwarf_Addr bias)
{
    GElf_Shdr sh;
    Elf_Scn *scn = elf ? elf_getscn(elf, shndx) : NULL;
    if (!scn || !gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC))
        return 0;
    return sh.sh_addr + sh.sh_size + bias;
}

static void build_sym_index(struct module *m)
{
    m->syms_built = true;
    int nsyms = dwfl_module_getsymtab(m->dm);
    if (nsyms <= 1)
        return;
    struct sym_ent *sized = malloc((size_t)nsyms * sizeof *sized);
    struct sym_ent *sizeless = malloc((size_t)nsyms * sizeof *sizeless);
    uint64_t *maxhi = malloc((size_t)nsyms * sizeof *maxhi);
    if (!sized || !sizeless || !maxhi) {
        free(sized);
        free(sizeless);
        free(maxhi);
        return;
    }
    size_t ns = 0, nl = 0;
    for (int i = 1; i < nsyms; i++) {
        GElf_Sym sym;
        GElf_Addr addr;
        GElf_Word shndx;
        Elf *elf;
        Dwarf_Addr bias;
        const char *name = dwfl_module_getsym_info(m->dm, i, &sym, &addr, &shndx, &elf, &bias);
        if (!name || !*name || shndx == SHN_UNDEF || shndx == SHN_ABS)
            continue;
        int type = GELF_ST_TYPE(sym.st_info);
        if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE)
            continue;
        struct sym_ent e = { addr, addr + sym.st_size, name, binding_value(&sym), i };
        if (sym.st_size > 0 && e.hi > e.lo) {
            sized[ns++] = e;
        } else {
            e.hi = section_end(elf, shndx, bias);
            if (e.hi > e.lo)
                sizeless[nl++] = e;
        }
    }
    qsort(sized, ns, sizeof *sized, cmp_sym);
    qsort(sizeless, nl, sizeof *sizeless, cmp_sym);
    uint64_t mx = 0;
    for (size_t i = 0; i < ns; i++) {
        if (sized[i].hi > mx)
            mx = sized[i].hi;
        maxhi[i] = mx;
    }
    m->syms = (struct sym_index){ sized, sizeless, maxhi, ns, nl };
}

/* Number of entries with lo <= pc (entries sorted by lo). */
static size_t upper_bound(const struct sym_ent *v, size_t n, uint64_t pc)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid].lo <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static const char *elf_symbol_name(struct module *m, uint64_t pc)
{
    if (!m->syms_built)
        build_sym_index(m);
    const struct sym_index *x = &m->syms;
    size_t k = upper_bound(x->sized, x->nsized, pc);
    const struct sym_ent *best = NULL;
    /* walking down: the first container has the closest start; among
     * aliases with that start the sort put the best one last */
    for (size_t j = k; j-- > 0 && x->sized_maxhi[j] > pc;) {
        const struct sym_ent *e = &x->sized[j];
        if (best && e->lo != best->lo)
            break;
        if (pc < e->hi && !best)
            best = e;
    }
    if (best)
        return best->name;
    uint64_t min_label = k > 0 ? x->sized_maxhi[k - 1] : 0;
    size_t l = upper_bound(x->sizeless, x->nsizeless, pc);
    if (l > 0 && x->sizeless[l - 1].lo >= min_label && pc < x->sizeless[l - 1].hi)
        return x->sizeless[l - 1].name;
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Resolution                                                               */
/* ------------------------------------------------------------------------ */

/* The name of the function the DIE of the physical (not inlined) frame at
 * pc describes. Its linkage name when it has one; else its DWARF name is
 * bare: GCC gives a function of internal linkage (an anonymous namespace's,
 * a static member of one's class) no DW_AT_linkage_name, so its DW_AT_name
 * "malloc" lacked "c10::cuda::(anonymous namespace)::...", which fold rules,
 * suppressions and the allocator detection match. The ELF symbol table's
 * entry for the same address, a mangled C++ name, carries it: that one,
 * demangled as every name, when it names this function (the DWARF name is
 * in it). Only in C++ units: a C function's symbol is its DWARF name
 * anyway, and the symbol table is sorted only for a module that needs it. */
static bool cu_is_cxx(Dwarf_Die *cudie)
{
    switch (cudie ? dwarf_srclang(cudie) : -1) {
    case DW_LANG_C_plus_plus:
    case DW_LANG_C_plus_plus_03:
    case DW_LANG_C_plus_plus_11:
    case DW_LANG_C_plus_plus_14:
    case DW_LANG_ObjC_plus_plus:
        return true;
    default:
        return false;
    }
}

static const char *physical_function_name(struct cmt_symbolizer *s, struct module *m, Dwarf_Die *cudie, uint64_t pc,
                                          Dwarf_Die *die)
{
    const char *linkage = die_linkage_name(die);
    if (linkage)
        return function_name(s, linkage);
    const char *bare = dwarf_diename(die);
    const char *raw = cu_is_cxx(cudie) ? elf_symbol_name(m, pc) : NULL;
    if (bare && raw && raw[0] == '_' && raw[1] == 'Z') {
        const char *sym = function_name(s, raw);
        if (sym && strstr(sym, bare))
            return sym;
    }
    return function_name(s, bare);
}

/* Fills out[] (capacity MAX_CHAIN) for ip in module m; returns the count. */
static size_t resolve_in_module(struct cmt_symbolizer *s, struct module *m, uint64_t ip,
                                struct cmt_frame *out)
{
    const uint64_t pc = ip - 1;
    struct cmt_frame base = {
        .ip = ip,
        .module = m->path,
        .module_offset = ip - m->bias,
    };
    out[0] = base;
    if (m->state == MOD_UNLOADED)
        module_load(s, m);
    if (m->state != MOD_READY)
        return 1;
    module_check_dwarf(s, m);

    Dwarf_Die chain[MAX_CHAIN];
    int n = 0;
    Dwarf_Die cu_mem, *cudie = NULL;
    if (m->dw) {
        Dwarf_Addr cubias = 0;
        Dwarf_Die *c = dwfl_module_addrdie(m->dm, pc, &cubias);
        if (c) {
            cu_mem = *c;
            cudie = &cu_mem;
            n = find_chain(m, cudie, pc - cubias, chain, MAX_CHAIN);
        }
    }
    const char *comp_dir = cu_comp_dir(cudie);

    /* innermost source location from the line table */
    const char *file = NULL;
    int line = 0, col = 0;
    Dwfl_Line *dl = m->dw ? dwfl_module_getsrc(m->dm, pc) : NULL;
    if (dl) {
        Dwarf_Addr a;
        const char *f = dwfl_lineinfo(dl, &a, &line, &col, NULL, NULL);
        file = source_file(s, f, comp_dir);
        if (!file)
            line = col = 0;
    }

    const char *physical = n > 0 ? physical_function_name(s, m, cudie, pc, &chain[0]) : NULL;
    if (!physical)
        physical = function_name(s, elf_symbol_name(m, pc));
    if (n <= 1) {
        out[0].function = physical;
        out[0].file = file;
        out[0].line = line;
        out[0].column = col;
        return 1;
    }

    Dwarf_Files *files = NULL;
    size_t nfiles = 0;
    if (dwarf_getsrcfiles(cudie, &files, &nfiles) != 0)
        files = NULL;
    /* out[0] = chain[n-1] (innermost), out[n-1] = chain[0] (physical) */
    for (int i = 0; i < n; i++) {
        Dwarf_Die *d = &chain[n - 1 - i];
        struct cmt_frame *f = &out[i];
        *f = base;
        f->function = i == n - 1 ? physical : die_function_name(s, d);
        f->inlined = i < n - 1;
        if (i == 0) {
            f->file = file;
            f->line = line;
            f->column = col;
        } else {
            /* call site: the attributes of the inlined subroutine inside */
            Dwarf_Die *callee = &chain[n - i];
            Dwarf_Word v;
            if (files && die_udata(callee, DW_AT_call_file, &v) == 0 && v < nfiles)
                f->file = source_file(s, dwarf_filesrc(files, v, NULL, NULL), comp_dir);
            if (die_udata(callee, DW_AT_call_line, &v) == 0 && v <= INT_MAX)
                f->line = (int)v;
            if (die_udata(callee, DW_AT_call_column, &v) == 0 && v <= INT_MAX)
                f->column = (int)v;
        }
    }
    return (size_t)n;
}

void cmt_symbolizer_get_stats(const struct cmt_symbolizer *s, struct cmt_symbolizer_stats *out)
{
    *out = s->stats;
}

size_t cmt_symbolizer_resolve(struct cmt_symbolizer *s, uint64_t ip, uint32_t modules_known,
                              struct cmt_frame *out, size_t max)
{
    if (!s || !out || max == 0)
        return 0;
    struct module *m = ip > 0 ? find_module(s, ip - 1, modules_known) : NULL;
    uint64_t mkey = m ? (uint64_t)m->index + 1 : 0;
    uint64_t v;
    s->stats.lookups++;
    if (map_get(&s->cache, ip, mkey, &v)) {
        s->stats.cache_hits++;
        size_t start = v >> 8, cnt = v & 0xff;
        size_t w = cnt < max ? cnt : max;
        memcpy(out, &s->pool[start], w * sizeof *out);
        return w;
    }

    struct cmt_frame tmp[MAX_CHAIN];
    size_t cnt;
    if (m) {
        cnt = resolve_in_module(s, m, ip, tmp);
    } else {
        tmp[0] = (struct cmt_frame){ .ip = ip };
        cnt = 1;
    }
    s->stats.resolved++;
    if (s->npool + cnt > CACHE_MAX_FRAMES) {
        /* Bounded: start afresh rather than grow with the trace. */
        if (s->cache.slots)
            memset(s->cache.slots, 0, s->cache.cap * sizeof *s->cache.slots);
        s->cache.count = 0;
        s->npool = 0;
        s->stats.cache_resets++;
    }

    if (s->npool + cnt > s->poolcap) {
        size_t ncap = s->poolcap ? s->poolcap * 2 : 1024;
        while (ncap < s->npool + cnt)
            ncap *= 2;
        struct cmt_frame *np = realloc(s->pool, ncap * sizeof *np);
        if (np) {
            s->pool = np;
            s->poolcap = ncap;
        }
    }
    if (s->npool + cnt <= s->poolcap && s->npool < (SIZE_MAX >> 9)) {
        memcpy(&s->pool[s->npool], tmp, cnt * sizeof *tmp);
        if (map_put(&s->cache, ip, mkey, ((uint64_t)s->npool << 8) | cnt) == 0)
            s->npool += cnt;
    }
    size_t w = cnt < max ? cnt : max;
    memcpy(out, tmp, w * sizeof *out);
    return w;
}

/* ------------------------------------------------------------------------ */
/* Lifetime                                                                 */
/* ------------------------------------------------------------------------ */

static char *absolute_dir(const char *dir)
{
    char *r = realpath(dir, NULL);
    if (r)
        return r;
    if (dir[0] == '/')
        return strdup(dir);
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        return strdup(dir);
    return path_join(cwd, dir);
}

static char *build_debuginfo_path(const struct cmt_symbolizer *s)
{
    size_t cap = 64, len = 0;
    char *out = malloc(cap);
    if (!out)
        return NULL;
    out[0] = '\0';
#define APPEND(str)                                                         \
    do {                                                                    \
        const char *a_ = (str);                                             \
        size_t l_ = strlen(a_);                                             \
        if (len + l_ + 2 > cap) {                                           \
            while (len + l_ + 2 > cap)                                      \
                cap *= 2;                                                   \
            char *n_ = realloc(out, cap);                                   \
            if (!n_) {                                                      \
                free(out);                                                  \
                return NULL;                                                \
            }                                                               \
            out = n_;                                                       \
        }                                                                   \
        memcpy(out + len, a_, l_ + 1);                                      \
        len += l_;                                                          \
    } while (0)
    for (size_t i = 0; i < s->ndirs; i++) {
        char *abs = absolute_dir(s->dirs[i]);
        if (!abs)
            continue;
        if (!strchr(abs, ':')) { /* ':' separates elements; such dirs are searched by us only */
            APPEND(abs);
            APPEND(":");
        }
        free(abs);
    }
    if (s->sysroot) {
        char *d = path_join(s->sysroot, "/usr/lib/debug");
        char *abs = d ? absolute_dir(d) : NULL;
        free(d);
        if (abs && !strchr(abs, ':')) {
            APPEND(abs);
            APPEND(":");
        }
        free(abs);
    }
    APPEND(":.debug:/usr/lib/debug");
#undef APPEND
    return out;
}

struct cmt_symbolizer *cmt_symbolizer_new(const struct cmt_symbolizer_options *opts)
{
    static const struct cmt_symbolizer_options defaults = CMT_SYMBOLIZER_OPTIONS_INIT;
    if (!opts)
        opts = &defaults;
    elf_version(EV_CURRENT);
    if (!hash_seed) /* once per process: the maps of every symbolizer hash with it */
        hash_seed = cmt_hash_multiplier();
    struct cmt_symbolizer *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->demangle = opts->demangle;
    if (opts->n_debuginfo_paths > 0 && opts->debuginfo_paths) {
        s->dirs = calloc(opts->n_debuginfo_paths, sizeof *s->dirs);
        if (!s->dirs)
            goto fail;
        for (size_t i = 0; i < opts->n_debuginfo_paths; i++) {
            const char *d = opts->debuginfo_paths[i];
            if (!d || !*d)
                continue;
            if (!(s->dirs[s->ndirs] = strdup(d)))
                goto fail;
            s->ndirs++;
        }
    }
    if (opts->sysroot && *opts->sysroot && !(s->sysroot = strdup(opts->sysroot)))
        goto fail;
    if (!(s->debuginfo_path = build_debuginfo_path(s)))
        goto fail;
    s->callbacks.find_elf = dwfl_build_id_find_elf;
    s->callbacks.find_debuginfo = find_debuginfo_cb;
    s->callbacks.section_address = dwfl_offline_section_address;
    s->callbacks.debuginfo_path = &s->debuginfo_path;
    return s;
fail:
    cmt_symbolizer_free(s);
    return NULL;
}

void cmt_symbolizer_add_module(struct cmt_symbolizer *s, const struct cmt_module_info *mi)
{
    if (!s || !mi || s->nmods >= UINT32_MAX - 1)
        return;
    if (s->nmods == s->modcap) {
        size_t ncap = s->modcap ? s->modcap * 2 : 32;
        struct module **nm = realloc(s->mods, ncap * sizeof *nm);
        if (!nm)
            return;
        s->mods = nm;
        uint32_t *no = realloc(s->order, ncap * sizeof *no);
        if (!no)
            return;
        s->order = no;
        uint64_t *nh = realloc(s->maxhi, ncap * sizeof *nh);
        if (!nh)
            return;
        s->maxhi = nh;
        s->modcap = ncap;
    }
    struct module *m = calloc(1, sizeof *m);
    if (!m)
        return;
    m->owner = s;
    m->index = (uint32_t)s->nmods;
    m->id = mi->id;
    m->path = strtab_intern(&s->strings, mi->path ? mi->path : "");
    if (m->path && *m->path) {
        m->label = m->path;
    } else {
        char *l = xasprintf("#%" PRIu32 " (no path recorded)", mi->id);
        m->label = l ? strtab_intern(&s->strings, l) : NULL;
        free(l);
    }
    if (!m->path || !m->label) {
        free(m);
        return;
    }
    m->bias = mi->bias;
    m->lo = mi->lo;
    m->hi = mi->hi;
    if (mi->build_id && mi->build_id_len > 0) {
        m->build_id = malloc(mi->build_id_len);
        if (!m->build_id) {
            free(m);
            return;
        }
        memcpy(m->build_id, mi->build_id, mi->build_id_len);
        m->build_id_len = mi->build_id_len;
    }
    s->mods[s->nmods++] = m;
    s->order_dirty = true;
}

size_t cmt_symbolizer_warning_count(const struct cmt_symbolizer *s)
{
    if (s && s->warnings_dirty)
        warnings_build((struct cmt_symbolizer *)s);
    return s ? s->nwarnings + (s->warnings_dropped ? 1 : 0) + (s->n_nodwarf && s->nodwarf_first ? 1 : 0) : 0;
}

/* The list is rebuilt (warnings_build) when a module's notes or a frame
 * shown changed since it was last read; the modules' warning comes last. */
const char *cmt_symbolizer_warning(const struct cmt_symbolizer *s, size_t i)
{
    if (!s)
        return NULL;
    if (s->warnings_dirty)
        warnings_build((struct cmt_symbolizer *)s);
    if (i < s->nwarnings)
        return s->warnings[i];
    if (s->warnings_dropped && i == s->nwarnings) {
        struct cmt_symbolizer *m = (struct cmt_symbolizer *)s;
        snprintf(m->dropped_msg, sizeof m->dropped_msg,
                 "%llu more warnings about modules not shown (the first %d are above)",
                 (unsigned long long)s->warnings_dropped, MAX_WARNINGS);
        return m->dropped_msg;
    }
    if (i == s->nwarnings + (s->warnings_dropped ? 1 : 0) && s->n_nodwarf && s->nodwarf_first)
        return nodwarf_warning((struct cmt_symbolizer *)s);
    return NULL;
}

void cmt_symbolizer_free(struct cmt_symbolizer *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nmods; i++)
        module_free(s->mods[i]);
    free(s->mods);
    free(s->order);
    free(s->maxhi);
    for (size_t i = 0; i < s->ndirs; i++)
        free(s->dirs[i]);
    free(s->dirs);
    free(s->sysroot);
    free(s->debuginfo_path);
    map_free(&s->cache);
    map_free(&s->demangled);
    map_free(&s->joined);
    free(s->pool);
    strtab_free(&s->strings);
    strtab_free(&s->warnset);
    free(s->warnings);
    free(s->nodwarf);
    free(s->nodwarf_first);
    if (s->stdcxx_handle)
        dlclose(s->stdcxx_handle);
    free(s);
}
