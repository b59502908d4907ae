/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_MODULES_H
#define CUMEMTRACE_PRELOAD_MODULES_H

#include <stdbool.h>
#include <stdint.h>

/* The module map: every loaded object (path, load bias, mapped range,
 * build-id) written to the metadata stream once, so the analyzer can
 * symbolize later, on this or another machine. Libraries loaded later with
 * dlopen are added when a new stack is recorded after the loader's object
 * list changed. All functions need cmt_recorder.meta.lock held. */

void cmt_modules_reset(void);

/* Who wants to hear of modules (the Python runtime, the PyTorch bridge):
 * told in the order they listened. The module map names no feature. Each
 * function may be NULL. */
struct dl_phdr_info;
struct cmt_module_listener {
    /* A new trace: nothing of it recorded yet. */
    void (*trace_reset)(void);
    /* A module recorded for the first time in this trace; path is its
     * arena copy, [lo, hi) its mapped range. Metadata lock held. */
    void (*module_locked)(const struct dl_phdr_info *info, const char *path, uint64_t lo, uint64_t hi);
    /* A scan of the loaded objects ended, outside dl_iterate_phdr.
     * Metadata lock held. */
    void (*scan_done_locked)(void);
};

/* At load, before any trace starts (shim/shim.c). At most
 * CMT_MAX_MODULE_LISTENERS. */
#define CMT_MAX_MODULE_LISTENERS 4
void cmt_modules_listen(const struct cmt_module_listener *listener);

/* Writes a MODULE record for every object not recorded yet. */
void cmt_modules_refresh_locked(void);

/* Records the modules loaded since the last scan, if any; returns the number
 * of modules recorded so far (the modules_known of a STACK record). */
uint32_t cmt_modules_sync_locked(void);

/* The shim's own text range, to drop its frames from stacks. */
void cmt_modules_self_range(uint64_t *lo, uint64_t *hi);

#endif
