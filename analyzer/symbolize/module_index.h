/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_MODULE_INDEX_H
#define CUMEMTRACE_ANALYZER_MODULE_INDEX_H

#include <stdint.h>

#include "trace_model.h"

/* Which recorded module holds an address, without symbols: the module with
 * the highest id up to a limit (the modules a stack knew) whose range holds
 * it. A segment tree over the modules' range ends answers in O(log^2 n)
 * however the ranges overlap; a scan of every module per frame made a
 * crafted trace of 20,000 overlapping modules take minutes. */
struct cmt_module_index;

/* NULL when out of memory. */
struct cmt_module_index *cmt_module_index_new(const struct cmt_trace_model *model);
/* The module id, or 0 when no module up to max_id holds ip. */
uint32_t cmt_module_index_find(const struct cmt_module_index *x, uint64_t ip, uint32_t max_id);
void cmt_module_index_free(struct cmt_module_index *x);

#endif
