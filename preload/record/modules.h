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

/* Writes a MODULE record for every object not recorded yet. */
void cmt_modules_refresh_locked(void);

/* Records the modules loaded since the last scan, if any; returns the number
 * of modules recorded so far (the modules_known of a STACK record). */
uint32_t cmt_modules_sync_locked(void);

/* The shim's own text range, to drop its frames from stacks. */
void cmt_modules_self_range(uint64_t *lo, uint64_t *hi);

#endif
