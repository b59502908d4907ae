/* SPDX-License-Identifier: MIT
 * Symbolizer tests on this very process: its own functions (-O0), an inline
 * chain (-O2), addresses outside every module, overlapping modules told
 * apart by modules_known, build-id mismatches, and separated debug info
 * found through debuginfo paths and a sysroot.
 *
 * usage: test_symbolizer LIBSYMDBG.so OBJCOPY   (either may be "": the
 * tests needing it are skipped) */
#include "inline_o2.h"
#include "symbolizer.h"
#include "symtest.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXMOD 512
static struct symt_module mods[MAXMOD];
static size_t nmods;
static const char *dbglib_path, *objcopy_path;

static __attribute__((noinline)) void *site_a(int *line)
{
    void *r = symt_ra(); *line = __LINE__;
    return r;
}

static __attribute__((noinline)) void *site_static_b(int *line)
{
    int pad = *line + 1;
    void *r = symt_ra(); *line = __LINE__ + 0 * pad;
    return r;
}

volatile int sink;

/* The return address belongs to the line after the call. */
static __attribute__((noinline)) void *site_next_line(int *line)
{
    void *r = NULL;
    *line = __LINE__ + 1;
    symt_ra_into(&r);
    sink = 3;
    return r;
}

/* A nested function: its DIE lives inside site_nested_host's. */
static __attribute__((noinline)) void *site_nested_host(int *line)
{
    __attribute__((noinline)) void *nested_site(void)
    {
        void *r = symt_ra(); *line = __LINE__;
        return r;
    }
    void *r = nested_site();
    sink = 4;
    return r;
}

static struct cmt_symbolizer *new_sym(const char *const *dirs, size_t ndirs, const char *sysroot)
{
    struct cmt_symbolizer_options o = CMT_SYMBOLIZER_OPTIONS_INIT;
    o.debuginfo_paths = dirs;
    o.n_debuginfo_paths = ndirs;
    o.sysroot = sysroot;
    struct cmt_symbolizer *s = cmt_symbolizer_new(&o);
    if (!s) {
        fprintf(stderr, "cmt_symbolizer_new failed\n");
        exit(1);
    }
    return s;
}

/* Resolves ip and checks that it yields exactly one frame with these
 * fields (function/file_base NULL: must be unknown). */
static void expect_one(const char *what, struct cmt_symbolizer *s, uint64_t ip, uint32_t known,
                       const char *function, const char *file_base, int line,
                       const char *module, uint64_t offset)
{
    int before = symt_failures;
    struct cmt_frame f[8];
    size_t n = cmt_symbolizer_resolve(s, ip, known, f, 8);
    CHECK_INT(n, 1);
    /* As the frames layer does for a frame it shows without a line: the
     * module's problems are warned from then on (frames.c). */
    if (n >= 1 && !f[0].file)
        cmt_symbolizer_frame_shown(s, &f[0], known);
    if (n >= 1) {
        CHECK_U64(f[0].ip, ip);
        CHECK_STR(f[0].function, function);
        CHECK_STR(symt_basename(f[0].file), file_base);
        CHECK_INT(f[0].line, line);
        if (file_base)
            CHECK(f[0].file[0] == '/'); /* full path from DWARF */
        if (line)
            CHECK(f[0].column > 0);
        else
            CHECK_INT(f[0].column, 0);
        CHECK_STR(f[0].module, module);
        CHECK_U64(f[0].module_offset, offset);
        CHECK(!f[0].inlined);
    }
    if (symt_failures != before) {
        fprintf(stderr, "  in: %s\n", what);
        symt_print_frames(what, f, n);
    }
}

static void expect_warnings(const char *what, struct cmt_symbolizer *s, size_t count, const char *first)
{
    int before = symt_failures;
    CHECK_INT(cmt_symbolizer_warning_count(s), count);
    if (count > 0)
        CHECK_STR(cmt_symbolizer_warning(s, 0), first);
    CHECK(cmt_symbolizer_warning(s, cmt_symbolizer_warning_count(s)) == NULL);
    if (symt_failures != before) {
        fprintf(stderr, "  in: %s; warnings:\n", what);
        for (size_t i = 0; i < cmt_symbolizer_warning_count(s); i++)
            fprintf(stderr, "    %s\n", cmt_symbolizer_warning(s, i));
    }
}

static uint64_t u(const void *p)
{
    return (uint64_t)(uintptr_t)p;
}

static void test_own_functions(void)
{
    struct cmt_symbolizer *s = cmt_symbolizer_new(NULL); /* defaults */
    CHECK(s != NULL);
    symt_add_all(s, mods, nmods);
    int la = 0, lb = 0;
    void *a = site_a(&la);
    void *b = site_static_b(&lb);
    struct symt_module *m = symt_module_of(mods, nmods, a);
    CHECK(m == &mods[0]);
    CHECK(la > 0 && lb > 0);
    expect_one("site_a", s, u(a), 0, "site_a", "test_symbolizer.c", la, mods[0].path, u(a) - mods[0].info.bias);
    expect_one("site_static_b", s, u(b), 0, "site_static_b", "test_symbolizer.c", lb, mods[0].path,
               u(b) - mods[0].info.bias);
    int lc = 0;
    void *c = site_next_line(&lc);
    expect_one("site_next_line", s, u(c), 0, "site_next_line", "test_symbolizer.c", lc, mods[0].path,
               u(c) - mods[0].info.bias);
    int ln = 0;
    void *nst = site_nested_host(&ln);
    expect_one("nested function", s, u(nst), 0, "nested_site", "test_symbolizer.c", ln, mods[0].path,
               u(nst) - mods[0].info.bias);
    /* modules_known covering the module gives the same answer */
    expect_one("site_a known=1", s, u(a), 1, "site_a", "test_symbolizer.c", la, mods[0].path,
               u(a) - mods[0].info.bias);

    /* cached: identical frames, same string pointers */
    struct cmt_frame f1[4], f2[4];
    CHECK_INT(cmt_symbolizer_resolve(s, u(a), 0, f1, 4), 1);
    CHECK_INT(cmt_symbolizer_resolve(s, u(a), 0, f2, 4), 1);
    CHECK(f1[0].ip == f2[0].ip && f1[0].function == f2[0].function && f1[0].file == f2[0].file &&
          f1[0].line == f2[0].line && f1[0].column == f2[0].column && f1[0].module == f2[0].module &&
          f1[0].module_offset == f2[0].module_offset && f1[0].inlined == f2[0].inlined);
    CHECK_INT(cmt_symbolizer_resolve(s, u(a), 0, f1, 0), 0);
    expect_warnings("own functions", s, 0, NULL);
    cmt_symbolizer_free(s);
}

static void test_inline_chain(void)
{
    struct cmt_symbolizer *s = new_sym(NULL, 0, NULL);
    symt_add_all(s, mods, nmods);
    void *ip = inl_outer();
    struct symt_module *m = symt_module_of(mods, nmods, ip);
    CHECK(m == &mods[0]);
    struct cmt_frame f[8];
    size_t n = cmt_symbolizer_resolve(s, u(ip), 0, f, 8);
    int before = symt_failures;
    CHECK_INT(n, 3);
    if (n == 3) {
        static const char *const names[3] = { "inl_leaf", "inl_mid", "inl_outer" };
        const int lines[3] = { inl_line_leaf, inl_line_mid, inl_line_outer };
        for (int i = 0; i < 3; i++) {
            CHECK_U64(f[i].ip, u(ip));
            CHECK_STR(f[i].function, names[i]);
            CHECK_STR(symt_basename(f[i].file), "inline_o2.c");
            CHECK_INT(f[i].line, lines[i]);
            CHECK(f[i].column > 0);
            CHECK_INT(f[i].inlined, i < 2);
            CHECK_STR(f[i].module, mods[0].path);
            CHECK_U64(f[i].module_offset, u(ip) - mods[0].info.bias);
        }
        CHECK(lines[0] != lines[1] && lines[1] != lines[2]);
    }
    /* fewer slots: the innermost frames */
    struct cmt_frame g[2];
    CHECK_INT(cmt_symbolizer_resolve(s, u(ip), 0, g, 1), 1);
    CHECK_STR(g[0].function, "inl_leaf");
    CHECK_INT(g[0].line, inl_line_leaf);
    CHECK_INT(cmt_symbolizer_resolve(s, u(ip), 0, g, 2), 2);
    CHECK_STR(g[1].function, "inl_mid");
    CHECK_INT(g[1].line, inl_line_mid);
    if (symt_failures != before)
        symt_print_frames("inline chain", f, n);

    /* the chain inside a nested function */
    before = symt_failures;
    ip = inl_nested_host();
    n = cmt_symbolizer_resolve(s, u(ip), 0, f, 8);
    CHECK_INT(n, 3);
    if (n == 3) {
        static const char *const names[3] = { "inl_leaf", "inl_mid", "nested" };
        const int lines[3] = { inl_line_leaf, inl_line_mid, inl_line_nested };
        for (int i = 0; i < 3; i++) {
            CHECK_STR(f[i].function, names[i]);
            CHECK_STR(symt_basename(f[i].file), "inline_o2.c");
            CHECK_INT(f[i].line, lines[i]);
            CHECK_INT(f[i].inlined, i < 2);
        }
    }
    if (symt_failures != before)
        symt_print_frames("inline chain in a nested function", f, n);
    expect_warnings("inline", s, 0, NULL);
    cmt_symbolizer_free(s);
}

static void test_outside(void)
{
    struct cmt_symbolizer *s = new_sym(NULL, 0, NULL);
    symt_add_all(s, mods, nmods);
    CHECK(symt_module_of(mods, nmods, (void *)0x1000) == NULL);
    CHECK(symt_module_of(mods, nmods, (void *)0xfff) == NULL);
    expect_one("0x1000", s, 0x1000, 0, NULL, NULL, 0, NULL, 0);
    expect_one("0", s, 0, 0, NULL, NULL, 0, NULL, 0);
    expect_one("all ones", s, UINT64_MAX, 0, NULL, NULL, 0, NULL, 0);
    /* no modules at all */
    struct cmt_symbolizer *e = new_sym(NULL, 0, NULL);
    int la;
    void *a = site_a(&la);
    expect_one("no modules", e, u(a), 0, NULL, NULL, 0, NULL, 0);
    expect_warnings("outside", s, 0, NULL);
    expect_warnings("no modules", e, 0, NULL);
    cmt_symbolizer_free(e);
    cmt_symbolizer_free(s);
}

/* A library unloaded and another loaded at the same address: the stack
 * says which modules it knew. */
static void test_modules_known(void)
{
    struct cmt_symbolizer *s = new_sym(NULL, 0, NULL);
    cmt_symbolizer_add_module(s, &mods[0].info); /* id 1 */
    struct cmt_module_info other = mods[0].info;
    other.id = 2;
    other.path = "/nonexistent/cmt-replaced.so";
    other.bias = mods[0].info.bias + 0x1000;
    other.build_id = NULL;
    other.build_id_len = 0;
    cmt_symbolizer_add_module(s, &other);
    int la;
    uint64_t a = u(site_a(&la));
    expect_one("known=1", s, a, 1, "site_a", "test_symbolizer.c", la, mods[0].path, a - mods[0].info.bias);
    expect_one("known=2", s, a, 2, NULL, NULL, 0, other.path, a - other.bias);
    expect_one("known=0", s, a, 0, NULL, NULL, 0, other.path, a - other.bias);
    expect_one("known=1 again", s, a, 1, "site_a", "test_symbolizer.c", la, mods[0].path,
               a - mods[0].info.bias);
    expect_warnings("modules_known", s, 1,
                    "module /nonexistent/cmt-replaced.so: file not found, showing module+offset only; "
                    "--sysroot DIR finds a copy elsewhere");
    /* a module with no path and a build-id nobody has */
    struct cmt_module_info anon = other;
    uint8_t id[20];
    memset(id, 0xab, sizeof id);
    anon.id = 3;
    anon.path = NULL;
    anon.build_id = id;
    anon.build_id_len = sizeof id;
    cmt_symbolizer_add_module(s, &anon);
    expect_one("anonymous", s, a, 3, NULL, NULL, 0, "", a - anon.bias);
    CHECK_INT(cmt_symbolizer_warning_count(s), 2);
    CHECK_STR(cmt_symbolizer_warning(s, 1),
              "module #3 (no path recorded): file not found (build-id "
              "abababababababababababababababababababab), showing module+offset only; --sysroot DIR or "
              "--debuginfo-path DIR finds a copy elsewhere");
    cmt_symbolizer_free(s);
}

static const struct symt_module *other_elf_module(void)
{
    for (size_t i = 1; i < nmods; i++)
        if (mods[i].path[0] == '/' && mods[i].info.build_id_len > 0 &&
            (mods[i].info.build_id_len != mods[0].info.build_id_len ||
             memcmp(mods[i].build_id, mods[0].build_id, mods[0].info.build_id_len) != 0))
            return &mods[i];
    return NULL;
}

static void test_build_id_mismatch(void)
{
    CHECK(mods[0].info.build_id_len > 0);
    if (mods[0].info.build_id_len == 0)
        return;
    int la, lb;
    uint64_t a = u(site_a(&la)), b = u(site_static_b(&lb));
    char *real = symt_hex(mods[0].build_id, mods[0].info.build_id_len);

    /* The file at the recorded path is another build: no symbols from it. */
    struct symt_module wrong = mods[0];
    symt_fix_pointers(&wrong);
    wrong.build_id[0] ^= 0xff;
    char *recorded = symt_hex(wrong.build_id, wrong.info.build_id_len);
    struct cmt_symbolizer *s = new_sym(NULL, 0, NULL);
    cmt_symbolizer_add_module(s, &wrong.info);
    expect_one("mismatch a", s, a, 0, NULL, NULL, 0, mods[0].path, a - mods[0].info.bias);
    expect_one("mismatch b", s, b, 0, NULL, NULL, 0, mods[0].path, b - mods[0].info.bias);
    char *msg = NULL;
    CHECK(asprintf(&msg, "module %s: build-id mismatch: %s has build-id %s, recorded %s; "
                   "no file with the recorded build-id found, showing module+offset only; --sysroot DIR or "
                   "--debuginfo-path DIR finds the recorded one elsewhere",
                   mods[0].path, mods[0].path, real, recorded) > 0);
    expect_warnings("mismatch", s, 1, msg);
    free(msg);
    cmt_symbolizer_free(s);

    /* Keep looking: the recorded path holds another file, the right one is
     * found by basename in a debuginfo path. */
    const struct symt_module *o = other_elf_module();
    CHECK(o != NULL);
    if (o) {
        const char *base = symt_basename(mods[0].path);
        char *wrong_path = symt_path("wrong/%s", base);
        char *right_dir = symt_path("right");
        char *right_path = symt_path("right/%s", base);
        CHECK_INT(symt_copy(o->path, wrong_path), 0);
        CHECK_INT(symt_copy(mods[0].path, right_path), 0);
        struct symt_module moved = mods[0];
        symt_fix_pointers(&moved);
        snprintf(moved.path, sizeof moved.path, "%s", wrong_path);
        const char *dirs[1] = { right_dir };
        s = new_sym(dirs, 1, NULL);
        cmt_symbolizer_add_module(s, &moved.info);
        expect_one("found elsewhere", s, a, 0, "site_a", "test_symbolizer.c", la, wrong_path,
                   a - mods[0].info.bias);
        char *ohex = symt_hex(o->build_id, o->info.build_id_len);
        CHECK(asprintf(&msg, "module %s: %s has build-id %s, not the recorded %s; using %s instead",
                       wrong_path, wrong_path, ohex, real, right_path) > 0);
        expect_warnings("found elsewhere", s, 1, msg);
        free(msg);
        free(ohex);
        cmt_symbolizer_free(s);
        free(wrong_path);
        free(right_dir);
        free(right_path);
    }
    free(real);
    free(recorded);
}

static void mkdir_tmp(const char *rel)
{
    char *d = symt_path("%s", rel);
    CHECK_INT(symt_mkdirs(d), 0);
    free(d);
}

static void objcopy(const char *op, const char *src, const char *dst)
{
    const char *argv[] = { objcopy_path, op, src, dst, NULL };
    int rc = symt_run(argv);
    if (rc != 0) {
        fprintf(stderr, "objcopy %s %s %s: status %d\n", op, src, dst, rc);
        exit(1);
    }
}

static void test_debuginfo(void)
{
    if (!dbglib_path || !*dbglib_path || !objcopy_path || !*objcopy_path) {
        printf("SKIP debuginfo tests: no %s\n", !dbglib_path || !*dbglib_path ? "test library" : "objcopy");
        return;
    }
    char *stripped = symt_path("stripped/libsymdbg.so");
    char *keep = symt_path("keep.debug");
    mkdir_tmp("stripped");
    objcopy("--strip-debug", dbglib_path, stripped);
    objcopy("--only-keep-debug", dbglib_path, keep);

    void *h = dlopen(stripped, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "dlopen %s: %s\n", stripped, dlerror());
        exit(1);
    }
    void *(*site)(int *);
    void *sym = dlsym(h, "dbglib_site");
    CHECK(sym != NULL);
    memcpy(&site, &sym, sizeof site);
    int line = 0, mline = 0;
    uint64_t ip = u(site(&line));
    sym = dlsym(h, "_ZN6cmtsym14dbglib_mangledEPi");
    CHECK(sym != NULL);
    memcpy(&site, &sym, sizeof site);
    uint64_t mip = u(site(&mline));
    const char *mangled_name = "cmtsym::dbglib_mangled(int*)";

    static struct symt_module all[MAXMOD];
    size_t nall = symt_collect_modules(all, MAXMOD);
    struct symt_module *lib = symt_module_of(all, nall, (void *)(uintptr_t)ip);
    CHECK(lib != NULL);
    if (!lib)
        return;
    CHECK_STR(lib->path, stripped);
    CHECK(lib->info.build_id_len > 0);
    const uint64_t off = ip - lib->info.bias;
    char *hex = symt_hex(lib->build_id, lib->info.build_id_len);
    char *bid_debug = symt_path("dbg/.build-id/%.2s/%s.debug", hex, hex + 2);
    char *dbg2 = symt_path("dbg2/libsymdbg.so.debug");
    char *full = symt_path("full/libsymdbg.so");
    CHECK_INT(symt_copy(keep, bid_debug), 0);
    CHECK_INT(symt_copy(keep, dbg2), 0);
    CHECK_INT(symt_copy(dbglib_path, full), 0);

    /* a) stripped, nothing else: the ELF symbol table names the function */
    struct cmt_symbolizer *s = new_sym(NULL, 0, NULL);
    symt_add_all(s, all, nall);
    expect_one("stripped", s, ip, 0, "dbglib_site", NULL, 0, stripped, off);
    expect_one("stripped, mangled", s, mip, 0, mangled_name, NULL, 0, stripped, mip - lib->info.bias);
    CHECK_INT(cmt_symbolizer_warning_count(s), 1);
    char *prefix = NULL;
    CHECK(asprintf(&prefix, "module %s: no DWARF debug info for %s (", stripped, stripped) > 0);
    const char *w = cmt_symbolizer_warning(s, 0);
    CHECK(w && strncmp(w, prefix, strlen(prefix)) == 0);
    CHECK(w && strstr(w, "): its frames shown have no file and line; build it with -g, or give --debuginfo-path DIR "
                         "where its debug file is") != NULL);
    if (w && strncmp(w, prefix, strlen(prefix)) != 0)
        fprintf(stderr, "  warning: %s\n", w);
    cmt_symbolizer_free(s);

    /* a2) two modules without DWARF: one warning names both, not a line
     * each (a Python job has a dozen). The second is a copy of the stripped
     * library, recorded 1 TiB above the real one. */
    char *copy = symt_path("copy/libsymdbg-copy.so");
    CHECK_INT(symt_copy(stripped, copy), 0);
    s = new_sym(NULL, 0, NULL);
    symt_add_all(s, all, nall);
    struct cmt_module_info second = lib->info;
    const uint64_t shift = 1ull << 40;
    second.id = 9999;
    second.path = copy;
    second.bias += shift;
    second.lo += shift;
    second.hi += shift;
    cmt_symbolizer_add_module(s, &second);
    expect_one("stripped", s, ip, 0, "dbglib_site", NULL, 0, stripped, off);
    expect_one("stripped copy", s, ip + shift, 0, "dbglib_site", NULL, 0, copy, off);
    expect_warnings("two modules without DWARF", s, 1,
                    "no DWARF debug info in 2 modules (libsymdbg.so, libsymdbg-copy.so): their frames shown have no "
                    "file and line; build them with -g, or give --debuginfo-path DIR where their debug files are");
    cmt_symbolizer_free(s);

    /* a3) a module without DWARF whose frames are resolved but never shown
     * (folded away: frame_fold.h) is no warning; nor is one inside a
     * Python package (a pip wheel ships no debug information), shown or
     * not. */
    s = new_sym(NULL, 0, NULL);
    symt_add_all(s, all, nall);
    struct cmt_frame unshown[8];
    CHECK_INT(cmt_symbolizer_resolve(s, ip, 0, unshown, 8), 1);
    expect_warnings("resolved, not shown", s, 0, NULL);
    cmt_symbolizer_free(s);
    char *wheel = symt_path("venv/lib/python3.12/site-packages/torch/lib/libsymdbg.so");
    CHECK_INT(symt_copy(stripped, wheel), 0);
    s = new_sym(NULL, 0, NULL);
    symt_add_all(s, all, nall);
    struct cmt_module_info in_wheel = second;
    in_wheel.path = wheel;
    cmt_symbolizer_add_module(s, &in_wheel);
    expect_one("in a wheel", s, ip + shift, 0, "dbglib_site", NULL, 0, wheel, off);
    expect_warnings("in a wheel", s, 0, NULL);
    free(wheel);
    cmt_symbolizer_free(s);
    free(copy);

    /* b) DIR/.build-id/xx/rest.debug restores file:line */
    const char *dirs[1] = { symt_path("dbg") };
    s = new_sym(dirs, 1, NULL);
    symt_add_all(s, all, nall);
    expect_one("build-id tree", s, ip, 0, "dbglib_site", "dbglib.c", line, stripped, off);
    expect_one("build-id tree, mangled", s, mip, 0, mangled_name, "dbglib.c", mline, stripped,
               mip - lib->info.bias);
    expect_warnings("build-id tree", s, 0, NULL);
    cmt_symbolizer_free(s);
    free((char *)dirs[0]);

    /* c) DIR/<basename>.debug */
    dirs[0] = symt_path("dbg2");
    s = new_sym(dirs, 1, NULL);
    symt_add_all(s, all, nall);
    expect_one("basename.debug", s, ip, 0, "dbglib_site", "dbglib.c", line, stripped, off);
    expect_warnings("basename.debug", s, 0, NULL);
    cmt_symbolizer_free(s);
    free((char *)dirs[0]);

    /* d) the recorded path does not exist here: the module's file is found
     *    by basename in a debuginfo path */
    struct symt_module moved = *lib;
    symt_fix_pointers(&moved);
    snprintf(moved.path, sizeof moved.path, "/nonexistent/cmt/libsymdbg.so");
    dirs[0] = symt_path("full");
    s = new_sym(dirs, 1, NULL);
    cmt_symbolizer_add_module(s, &moved.info);
    expect_one("by basename", s, ip, 0, "dbglib_site", "dbglib.c", line, moved.path, off);
    expect_warnings("by basename", s, 0, NULL);
    cmt_symbolizer_free(s);

    /*    ... also with no build-id recorded */
    moved.info.build_id_len = 0;
    s = new_sym(dirs, 1, NULL);
    cmt_symbolizer_add_module(s, &moved.info);
    expect_one("by basename, no build-id", s, ip, 0, "dbglib_site", "dbglib.c", line, moved.path, off);
    expect_warnings("by basename, no build-id", s, 0, NULL);
    cmt_symbolizer_free(s);
    moved.info.build_id_len = lib->info.build_id_len;
    free((char *)dirs[0]);

    /* e) only the debug file exists: it stands in for the module's file */
    dirs[0] = symt_path("dbg");
    s = new_sym(dirs, 1, NULL);
    cmt_symbolizer_add_module(s, &moved.info);
    expect_one("debug file only", s, ip, 0, "dbglib_site", "dbglib.c", line, moved.path, off);
    expect_warnings("debug file only", s, 0, NULL);
    cmt_symbolizer_free(s);
    free((char *)dirs[0]);

    /* f) sysroot: a path that exists only under it, and a path that exists
     *    on this machine too (stripped) but is looked up under it first */
    char *sysroot = symt_path("sysroot");
    char *in_root = symt_path("sysroot/opt/cmt-fake/libsymdbg.so");
    CHECK_INT(symt_copy(dbglib_path, in_root), 0);
    snprintf(moved.path, sizeof moved.path, "/opt/cmt-fake/libsymdbg.so");
    s = new_sym(NULL, 0, sysroot);
    cmt_symbolizer_add_module(s, &moved.info);
    expect_one("sysroot", s, ip, 0, "dbglib_site", "dbglib.c", line, "/opt/cmt-fake/libsymdbg.so", off);
    expect_warnings("sysroot", s, 0, NULL);
    cmt_symbolizer_free(s);
    free(in_root);
    in_root = symt_path("sysroot%s", stripped);
    CHECK_INT(symt_copy(dbglib_path, in_root), 0);
    s = new_sym(NULL, 0, sysroot);
    symt_add_all(s, all, nall);
    expect_one("sysroot first", s, ip, 0, "dbglib_site", "dbglib.c", line, stripped, off);
    expect_warnings("sysroot first", s, 0, NULL);
    cmt_symbolizer_free(s);
    free(in_root);
    free(sysroot);

    /* g) a debug file of another build under the right name is refused */
    char *wrongdbg = symt_path("dbgwrong/libsymdbg.so.debug");
    mkdir_tmp("dbgwrong");
    objcopy("--only-keep-debug", mods[0].path, wrongdbg);
    dirs[0] = symt_path("dbgwrong");
    s = new_sym(dirs, 1, NULL);
    symt_add_all(s, all, nall);
    expect_one("wrong debug file", s, ip, 0, "dbglib_site", NULL, 0, stripped, off);
    CHECK_INT(cmt_symbolizer_warning_count(s), 1);
    w = cmt_symbolizer_warning(s, 0);
    CHECK(w && strncmp(w, prefix, strlen(prefix)) == 0);
    cmt_symbolizer_free(s);
    free((char *)dirs[0]);
    free(wrongdbg);

    free(prefix);
    free(hex);
    free(bid_debug);
    free(dbg2);
    free(full);
    free(stripped);
    free(keep);
    dlclose(h);
}

int main(int argc, char **argv)
{
    dbglib_path = argc > 1 ? argv[1] : NULL;
    objcopy_path = argc > 2 ? argv[2] : NULL;
    /* Not linked with libstdc++: the symbolizer has to dlopen it to find
     * __cxa_demangle (checked with dbglib_mangled). */
    void *cxx = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_NOLOAD);
    if (cxx) {
        printf("note: libstdc++ already loaded; the demangler fallback is not exercised\n");
        dlclose(cxx);
    }
    nmods = symt_collect_modules(mods, MAXMOD);
    CHECK(nmods > 1);
    CHECK(mods[0].path[0] == '/');

    test_own_functions();
    test_inline_chain();
    test_outside();
    test_modules_known();
    test_build_id_mismatch();
    test_debuginfo();

    if (symt_failures) {
        fprintf(stderr, "%d check(s) failed\n", symt_failures);
        return 1;
    }
    printf("ok\n");
    return 0;
}
