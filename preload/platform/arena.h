/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_ARENA_H
#define CUMEMTRACE_PRELOAD_ARENA_H

#include <stddef.h>

/* Bump allocator over anonymous mmap blocks, for the shim's own tables. Never
 * calls malloc: hooks can run inside the program's allocator, in signal
 * handlers, or before libc's malloc is usable. Memory is never returned (the
 * tables it holds live as long as the process). Callers serialise. */
void *cmt_arena_alloc(size_t size);

/* A zeroed block of its own, for tables that are replaced when they grow. */
void *cmt_arena_alloc_pages(size_t size);

/* In a forked child the arena is kept: the child inherits a copy of it. */

#endif
