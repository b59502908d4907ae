/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_LOG_H
#define CUMEMTRACE_PRELOAD_LOG_H

/* Messages to stderr, prefixed "cumemtrace: ". Formatted into a stack buffer
 * and written with one write(2): no stdio locks (a hook may run while the
 * program holds them) and no allocation. */
void cmt_log_warning(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cmt_log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
