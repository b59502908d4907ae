/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_OUTPUT_DIR_H
#define CUMEMTRACE_ANALYZER_OUTPUT_DIR_H

#include <stddef.h>

/* Whether the directory a trace template writes into can take a trace,
 * asked by `cumemtrace run` before the program starts: a template with a
 * typo in its directory, a read-only mount or a full disk would otherwise
 * be found only by the shim, once the program runs (docs/check.md, "When no
 * trace can be written"). What only the shim can know (every candidate name
 * taken, a disk that fills later) reaches `run` through the manifest
 * (manifest.h). */

/* The smallest first segment the shim falls back to on a nearly full disk
 * (preload/trace_file.h, CMT_SMALL_SEGMENT_SIZE): less free space than this
 * and no trace can be created. */
#define CMT_OUTPUT_MIN_FREE (64u << 10)

/* Checks the directory part of tmpl (an absolute or relative template,
 * "cumemtrace.%p.bin" when NULL or empty). Returns 0 when it can take a
 * trace, or when it cannot be known now (the directory part names %h, %p,
 * %r or %t: the shim expands them); else -1 with dir the directory checked
 * and why the reason ("it does not exist", "it is on a read-only file
 * system", ...). */
int cmt_output_dir_check(const char *tmpl, char *dir, size_t dirlen, char *why, size_t whylen);

#endif
