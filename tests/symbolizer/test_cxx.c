/* SPDX-License-Identifier: MIT
 * C++ names: demangled by default (__cxa_demangle found at run time),
 * mangled with demangle = false. A function in an anonymous namespace of a
 * library (anon_ns.cpp), whose DWARF has only its bare name, qualified as
 * the ELF symbol table has it, so a fold rule on that name matches. */
#include "frame_fold.h"
#include "symbolizer.h"
#include "symtest.h"

#include <stdio.h>
#include <string.h>

void *cxx_method_site(int *line);
void *cxx_template_site(int *line);
void *anon_malloc_site(int *line);

#define ANON_MALLOC "c10::cuda::CUDACachingAllocator::(anonymous namespace)::DeviceCachingAllocator::malloc(unsigned long, int*)"

#define MAXMOD 512
static struct symt_module mods[MAXMOD];

static void check(struct cmt_symbolizer *s, void *ip, int line, const char *function)
{
    struct cmt_frame f[4];
    size_t n = cmt_symbolizer_resolve(s, (uint64_t)(uintptr_t)ip, 0, f, 4);
    int before = symt_failures;
    CHECK_INT(n, 1);
    CHECK_STR(f[0].function, function);
    CHECK_STR(symt_basename(f[0].file), "cxx_sites.cpp");
    CHECK_INT(f[0].line, line);
    CHECK(!f[0].inlined);
    if (symt_failures != before)
        symt_print_frames(function, f, n);
}

/* The anonymous namespace's function: named in full, in its own file and
 * line; *out gets the frame. */
static void check_anon(struct cmt_symbolizer *s, void *ip, int line, const char *function, struct cmt_frame *out)
{
    struct cmt_frame f[4];
    size_t n = cmt_symbolizer_resolve(s, (uint64_t)(uintptr_t)ip, 0, f, 4);
    int before = symt_failures;
    CHECK_INT(n, 1);
    CHECK_STR(f[0].function, function);
    CHECK_STR(symt_basename(f[0].file), "anon_ns.cpp");
    CHECK_INT(f[0].line, line);
    CHECK_STR(symt_basename(f[0].module), "libsymanon.so");
    if (symt_failures != before)
        symt_print_frames(function, f, n);
    *out = f[0];
}

/* Rules on the qualified name match it: the default table's "c10::*"
 * (PyTorch's allocator, dispatcher...) folds it, where the bare DWARF name
 * "malloc" was the user's frame; a --keep rule on the qualified name makes it
 * the user's again, one on another name does not. */
static void check_anon_rules(const struct cmt_frame *f)
{
    struct cmt_frame bare = *f;
    bare.function = "malloc";
    struct cmt_fold_rules *r = cmt_fold_rules_new();
    CHECK(r != NULL);
    CHECK_INT(cmt_fold_rules_classify(r, f), CMT_FRAME_FOLD);
    CHECK(cmt_fold_rules_match(r, f));
    CHECK_INT(cmt_fold_rules_classify(r, &bare), CMT_FRAME_USER);
    cmt_fold_rules_free(r);
    r = cmt_fold_rules_new();
    CHECK_INT(cmt_fold_rules_keep(r, "c10::cuda::CUDACachingAllocator::(anonymous namespace)::*"), 0);
    CHECK_INT(cmt_fold_rules_classify(r, f), CMT_FRAME_USER);
    cmt_fold_rules_free(r);
    r = cmt_fold_rules_new();
    CHECK_INT(cmt_fold_rules_keep(r, "c10::cuda::OtherAllocator::*"), 0);
    CHECK_INT(cmt_fold_rules_classify(r, f), CMT_FRAME_FOLD);
    cmt_fold_rules_free(r);
    r = cmt_fold_rules_new();
    CHECK_INT(cmt_fold_rules_add(r, "*::DeviceCachingAllocator::malloc(*)"), 0);
    CHECK(cmt_fold_rules_match(r, f));
    CHECK(!cmt_fold_rules_match(r, &bare));
    cmt_fold_rules_free(r);
}

int main(void)
{
    size_t nmods = symt_collect_modules(mods, MAXMOD);
    int lm = 0, lt = 0, la = 0;
    void *m = cxx_method_site(&lm);
    void *t = cxx_template_site(&lt);
    void *a = anon_malloc_site(&la);
    struct cmt_frame anon;

    struct cmt_symbolizer *s = cmt_symbolizer_new(NULL);
    symt_add_all(s, mods, nmods);
    check(s, m, lm, "cmtsym::Widget::method(int, int*)");
    check(s, t, lt, "void* cmtsym::Widget::tmpl<long>(long, int*)");
    check_anon(s, a, la, ANON_MALLOC, &anon);
    check_anon_rules(&anon);
    CHECK_INT(cmt_symbolizer_warning_count(s), 0);
    cmt_symbolizer_free(s);

    struct cmt_symbolizer_options o = CMT_SYMBOLIZER_OPTIONS_INIT;
    o.demangle = false;
    s = cmt_symbolizer_new(&o);
    symt_add_all(s, mods, nmods);
    check(s, m, lm, "_ZN6cmtsym6Widget6methodEiPi");
    check(s, t, lt, "_ZN6cmtsym6Widget4tmplIlEEPvT_Pi");
    check_anon(s, a, la, "_ZN3c104cuda20CUDACachingAllocator12_GLOBAL__N_122DeviceCachingAllocator6mallocEmPi", &anon);
    cmt_symbolizer_free(s);

    if (symt_failures) {
        fprintf(stderr, "%d check(s) failed\n", symt_failures);
        return 1;
    }
    printf("ok\n");
    return 0;
}
