/* SPDX-License-Identifier: MIT
 * Compiled with -O2 -g: a two-level chain of always_inline functions inside
 * one physical function. The global stores after each call keep the calls
 * out of tail position and record the expected lines. */
#include "symtest.h"

#include "inline_o2.h"

int inl_line_leaf, inl_line_mid, inl_line_outer, inl_line_nested;

static inline __attribute__((always_inline)) void *inl_leaf(void)
{
    void *r = symt_ra(); inl_line_leaf = __LINE__;
    return r;
}

static inline __attribute__((always_inline)) void *inl_mid(void)
{
    void *r = inl_leaf(); inl_line_mid = __LINE__;
    return r;
}

__attribute__((noinline)) void *inl_outer(void)
{
    void *r = inl_mid(); inl_line_outer = __LINE__;
    return r;
}

/* The same chain inside a GNU C nested function: its DIE is a child of
 * inl_nested_host's DIE, which the symbolizer's per-CU index of top-level
 * subprograms does not cover (the dwarf_getscopes fallback). */
__attribute__((noinline)) void *inl_nested_host(void)
{
    __attribute__((noinline)) void *nested(void)
    {
        void *r = inl_mid(); inl_line_nested = __LINE__;
        return r;
    }
    void *r = nested(); inl_line_outer += 0;
    return r;
}
