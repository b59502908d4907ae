/* SPDX-License-Identifier: MIT
 * A shared library built with -g -O0; the test strips a copy of it and
 * points the symbolizer at the separated debug info. */
#include <stddef.h>

void *dbglib_site(int *line);

static __attribute__((noinline, noipa)) void *dbg_ra(void)
{
    return __builtin_return_address(0);
}

void *dbglib_site(int *line)
{
    void *r = dbg_ra(); *line = __LINE__;
    return r;
}

/* A C function under a C++ mangled name: the C test process (libstdc++ not
 * loaded) checks that the symbolizer finds __cxa_demangle by itself. */
void *dbglib_mangled(int *line) __asm__("_ZN6cmtsym14dbglib_mangledEPi");

void *dbglib_mangled(int *line)
{
    void *r = dbg_ra(); *line = __LINE__;
    return r;
}
