/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_THREAD_BLOCK_H
#define CUMEMTRACE_PRELOAD_THREAD_BLOCK_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

/* Per-thread tables kept out of the shim's static TLS. The shim's TLS is
 * initial-exec (one instruction to reach on the hot path), and a library
 * with initial-exec TLS can be dlopen'ed (ctypes, an NVTX tool path) only
 * while it fits in glibc's small static TLS surplus (about 1.6 KiB): 4 KiB
 * of per-thread tables made every dlopen of the shim fail with "cannot
 * allocate memory in static TLS block". So a module keeps one pointer in TLS
 * and its table in a block of its own: mapped at the thread's first need
 * (mmap: no malloc, no lock, safe in a hook), unmapped at thread exit, when
 * the module's pointer is cleared first. */
struct cmt_thread_block {
    pthread_key_t key;
    bool ok;
    size_t size;
};

/* At load, before the program creates keys of its own (glibc keeps the
 * first 32 keys' values in the thread descriptor: setting them never
 * allocates). */
void cmt_thread_block_init(struct cmt_thread_block *b, size_t size);

/* The calling thread's block, zeroed at first; *slot is the module's TLS
 * pointer, set here and cleared at thread exit. NULL when no block can be
 * had (the module then does without its table). */
void *cmt_thread_block_get(struct cmt_thread_block *b, void **slot);

#endif
