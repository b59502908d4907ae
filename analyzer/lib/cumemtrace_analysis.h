/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYSIS_API_H
#define CUMEMTRACE_ANALYSIS_API_H

#include <stddef.h>
#include <stdint.h>

/* libcumemtrace_analysis.so: the analyzer as a library, for the Python
 * package (docs/python.md): the report the command builds, as its JSON,
 * and a trace followed while it is written. Its ABI is the package's own
 * and follows its version; it is not a public C API. Every string it
 * returns is malloc'd: give it back with cumemtrace_free. Calls on one
 * follower are not made from two threads at once; report calls are
 * serialised inside. */

#ifdef __cplusplus
extern "C" {
#endif

/* "0.1.0 (trace format 2.4)". */
const char *cumemtrace_analysis_version(void);

/* `cumemtrace report --format json OPTIONS... TRACE`, built by the same
 * code as the command. Returns the command's exit status (0; 2: bad
 * options, a file that is no trace; also 2 for a damaged or truncated
 * trace, whose report covers the events before the damage and is
 * returned). *json: the report (NULL when none was built); *messages: what
 * the command would have printed on stderr (NULL when nothing). */
int cumemtrace_report_json(const char *trace, const char *const *options, size_t n_options, char **json,
                           char **messages);

struct cumemtrace_follower;
/* Follows trace (docs/python.md, "How the plugin knows what a test left"):
 * phases whose name starts with window_prefix are windows. The leak
 * suppressions applied are those of `check`: suppression_files, then
 * CUMEMTRACE_SUPPRESSIONS, then the built-in list unless
 * no_default_suppressions. NULL with *error set when it cannot. */
struct cumemtrace_follower *cumemtrace_follow_open(const char *trace, const char *window_prefix,
                                                   const char *const *suppression_files, size_t n_files,
                                                   int no_default_suppressions, char **error);
/* Reads what was committed since. 0, or -1 with *error set. */
int cumemtrace_follow_poll(struct cumemtrace_follower *f, char **error);
/* JSON: the windows closed since the last call (NULL: out of memory). */
char *cumemtrace_follow_take(struct cumemtrace_follower *f);
/* JSON: what window id still holds now (NULL: no such window). */
char *cumemtrace_follow_held(struct cumemtrace_follower *f, uint32_t id);
void cumemtrace_follow_close(struct cumemtrace_follower *f);

void cumemtrace_free(void *p);

#ifdef __cplusplus
}
#endif

#endif
