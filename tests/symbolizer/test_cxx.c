/* SPDX-License-Identifier: MIT
 * C++ names: demangled by default (__cxa_demangle found at run time),
 * mangled with demangle = false. */
#include "symbolizer.h"
#include "symtest.h"

#include <stdio.h>
#include <string.h>

void *cxx_method_site(int *line);
void *cxx_template_site(int *line);

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

int main(void)
{
    size_t nmods = symt_collect_modules(mods, MAXMOD);
    int lm = 0, lt = 0;
    void *m = cxx_method_site(&lm);
    void *t = cxx_template_site(&lt);

    struct cmt_symbolizer *s = cmt_symbolizer_new(NULL);
    symt_add_all(s, mods, nmods);
    check(s, m, lm, "cmtsym::Widget::method(int, int*)");
    check(s, t, lt, "void* cmtsym::Widget::tmpl<long>(long, int*)");
    CHECK_INT(cmt_symbolizer_warning_count(s), 0);
    cmt_symbolizer_free(s);

    struct cmt_symbolizer_options o = CMT_SYMBOLIZER_OPTIONS_INIT;
    o.demangle = false;
    s = cmt_symbolizer_new(&o);
    symt_add_all(s, mods, nmods);
    check(s, m, lm, "_ZN6cmtsym6Widget6methodEiPi");
    check(s, t, lt, "_ZN6cmtsym6Widget4tmplIlEEPvT_Pi");
    cmt_symbolizer_free(s);

    if (symt_failures) {
        fprintf(stderr, "%d check(s) failed\n", symt_failures);
        return 1;
    }
    printf("ok\n");
    return 0;
}
