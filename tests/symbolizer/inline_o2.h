/* SPDX-License-Identifier: MIT */
#ifndef CMT_INLINE_O2_H
#define CMT_INLINE_O2_H
/* Lines of the calls in inline_o2.c, set when inl_outer runs. */
extern int inl_line_leaf, inl_line_mid, inl_line_outer, inl_line_nested;
/* Returns the return address of a call made inside inl_leaf, inlined into
 * inl_mid, inlined into inl_outer. */
void *inl_outer(void);
/* The same chain inside a nested function "nested" of inl_nested_host. */
void *inl_nested_host(void);
#endif
