/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_PERFETTO_H
#define CUMEMTRACE_ANALYZER_PERFETTO_H

#include <stdint.h>
#include <stdio.h>

#include "export_model.h"

/* Chrome Trace Event JSON (the "JSON Array/Object Format" that
 * ui.perfetto.dev and chrome://tracing load), docs/export.md: one process
 * per trace, named; counter tracks of live bytes per account and kind, each
 * timeline bucket (at most CMT_TIMELINE_BUCKETS over the run) as two
 * samples: its highest live bytes at its start and its last at its middle;
 * the device samples (used, pool reserved and used) as recorded, at most
 * the forensics' bounded series; an instant event per failed allocation
 * kept (its stack in args); the steps as slices. Times are whole
 * microseconds (rounded down) on one axis: every trace is placed by its
 * wall-clock start, the earliest at 0. */
void cmt_perfetto_render(const struct cmt_perfetto_model *m, FILE *out);

#endif
