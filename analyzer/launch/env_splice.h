/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_ENV_SPLICE_H
#define CUMEMTRACE_ANALYZER_ENV_SPLICE_H

/* The environment `cumemtrace run` gives the program (docs/cli.md, "run"),
 * as pure functions of the environment it found: the callers set it. */

/* LD_PRELOAD with the shim inserted: first, so our hooks shadow cudart's
 * for the program and other preloads still find the real functions behind
 * us; only sanitizer runtimes go ahead of it (they refuse to start
 * otherwise). runtime: the sanitizer runtime the program needs (its
 * DT_NEEDED name, or NULL), put first by itself unless old already starts
 * with one. Entries of old are separated by ':' or spaces (ld.so accepts
 * both); the result by ':'. Returns 0 with *out a malloc'd value, or with
 * *out NULL when old already holds the shim (a nested run: leave it);
 * -1 when out of memory. old may be NULL. */
int cmt_preload_splice(const char *old, const char *shim, const char *runtime, char **out);

/* The trace path template made absolute against cwd (every process of the
 * run writes where `run --check` looks, whatever directory it changed to);
 * "cumemtrace.%p.bin" when tmpl is NULL or empty. Returns a malloc'd
 * string, NULL when out of memory. */
char *cmt_output_absolute(const char *tmpl, const char *cwd);

/* NVTX_INJECTION64_PATH for the program: the shim when current is unset
 * or empty, else NULL (a tool already named there, Nsight Systems, keeps
 * its place). */
const char *cmt_nvtx_injection(const char *current, const char *shim);

#endif
