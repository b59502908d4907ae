/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_HOLDER_PEAKS_H
#define CUMEMTRACE_ANALYZER_HOLDER_PEAKS_H

#include "report.h"

/* Each holder's own peak on each device (memory_holder.h): the most its
 * device-resident allocations had live at once, PyTorch's being what
 * torch.cuda.max_memory_reserved() reports with its cache on. Holders come
 * from symbolized frames: the analysis follows them as the trace is read
 * (read_passes.h), each stack classified when an event first names it;
 * when it did not (or a stack was named before its record) the trace is
 * read once more: only the events, replayed with the report's classes (a
 * replay that keeps only its live set and accounts, cmt_replay_live_only),
 * so that a release releases what the analysis's replay released. Fills own_peak and
 * has_own_peaks of r's device accounts; does nothing when no stack has a
 * holder. Returns 0, or -1 when out of memory. */
int cmt_holder_peaks_build(struct cmt_report *r, const struct cmt_analysis *an);

#endif
