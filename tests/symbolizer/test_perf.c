/* SPDX-License-Identifier: MIT
 * 100,000 distinct addresses in one module with DWARF (this program's code,
 * mostly perf_funcs.c), then the same addresses again from the cache, then
 * 100,000 distinct addresses in a module without DWARF (libc's symbols).
 *
 * Counted, not timed (a time bound flakes on a loaded machine): each
 * distinct address is resolved from its module once, and the second pass is
 * answered by the cache alone. The times are printed, for the record.
 *
 * usage: test_perf [N [--no-timing]]   (default 100000; under valgrind: a
 * smaller N; --no-timing is accepted and changes nothing) */
#include "perf_funcs.h"
#include "symbolizer.h"
#include "symtest.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAXMOD 512
static struct symt_module mods[MAXMOD];

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Resolves ip = lo + 1 .. lo + n; returns the seconds taken and counts the
 * addresses with a function and with a line. */
static double pass(struct cmt_symbolizer *s, uint64_t lo, size_t n, size_t *with_function,
                   size_t *with_line, size_t *perf_named)
{
    struct cmt_frame f[16];
    *with_function = *with_line = *perf_named = 0;
    double t0 = now();
    for (size_t i = 0; i < n; i++) {
        size_t k = cmt_symbolizer_resolve(s, lo + 1 + i, 0, f, 16);
        if (k == 0)
            abort();
        const struct cmt_frame *p = &f[k - 1];
        if (p->function) {
            (*with_function)++;
            if (strncmp(p->function, "perf_fn_", 8) == 0)
                (*perf_named)++;
        }
        if (f[0].line > 0)
            (*with_line)++;
    }
    return now() - t0;
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000;
    size_t nmods = symt_collect_modules(mods, MAXMOD);
    CHECK(perf_first(3) >= 0);

    struct symt_module *self = symt_module_of(mods, nmods, (void *)perf_fn_a000);
    CHECK(self == &mods[0]);
    if (!self)
        return 1;
    /* from the first generated function on (they are laid out in order) */
    uint64_t start = (uint64_t)(uintptr_t)perf_fn_a000;
    CHECK(start >= self->exec_lo && start < self->exec_hi);
    uint64_t seg = self->exec_hi - start;
    printf("code from perf_fn_a000 on: %llu bytes\n", (unsigned long long)seg);
    CHECK(seg >= n + 1);
    if (seg < n + 1)
        return 1;

    struct cmt_symbolizer *s = cmt_symbolizer_new(NULL);
    symt_add_all(s, mods, nmods);
    size_t wf, wl, pn;
    struct cmt_symbolizer_stats st0, st1, st2;
    cmt_symbolizer_get_stats(s, &st0);
    double t1 = pass(s, start - 1, n, &wf, &wl, &pn);
    cmt_symbolizer_get_stats(s, &st1);
    printf("DWARF module, %zu distinct addresses: %.3f s (%zu with function, %zu with line, %zu in perf_fn_*)\n",
           n, t1, wf, wl, pn);
    /* each address resolved from the module once */
    CHECK(st1.lookups - st0.lookups == n);
    CHECK(st1.resolved - st0.resolved == n);
    CHECK(st1.cache_hits == st0.cache_hits);
    /* nearly all of it is perf_funcs.c code */
    CHECK(pn > n * 9 / 10);
    CHECK(wl > n * 9 / 10);
    size_t wf2, wl2, pn2;
    double t2 = pass(s, start - 1, n, &wf2, &wl2, &pn2);
    cmt_symbolizer_get_stats(s, &st2);
    printf("same addresses, cached: %.3f s\n", t2);
    CHECK(wf2 == wf && wl2 == wl && pn2 == pn);
    /* the second pass: the cache alone */
    CHECK(st2.cache_hits - st1.cache_hits == n);
    CHECK(st2.resolved == st1.resolved);
    CHECK(st2.cache_resets == 0);
    CHECK_INT(cmt_symbolizer_warning_count(s), 0);

    /* libc: ELF symbols only (its debug info is not installed, usually) */
    struct symt_module *libc = symt_module_of(mods, nmods, (void *)printf);
    CHECK(libc != NULL);
    if (libc && libc->exec_hi - libc->exec_lo >= n + 1) {
        struct cmt_symbolizer_stats st3;
        double t3 = pass(s, libc->exec_lo, n, &wf, &wl, &pn);
        cmt_symbolizer_get_stats(s, &st3);
        printf("%s, %zu distinct addresses: %.3f s (%zu with function, %zu with line)\n",
               libc->path, n, t3, wf, wl);
        CHECK(st3.resolved - st2.resolved == n);
        CHECK(wf > n / 2);
    }
    for (size_t i = 0; i < cmt_symbolizer_warning_count(s); i++)
        printf("warning: %s\n", cmt_symbolizer_warning(s, i));
    cmt_symbolizer_free(s);

    if (symt_failures) {
        fprintf(stderr, "%d check(s) failed\n", symt_failures);
        return 1;
    }
    printf("ok\n");
    return 0;
}
