/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_SANITIZER_RUNTIME_H
#define CUMEMTRACE_ANALYZER_SANITIZER_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>

/* The sanitizer runtime a program needs before anything else is loaded.
 * A program built with gcc -fsanitize=address (thread, undefined, ...)
 * names its runtime among its DT_NEEDED entries (libasan.so.8); ASan then
 * refuses to start unless it comes first in the initial library list, so a
 * preloaded profiler must go after it (`cumemtrace run`, docs/cli.md). */

/* True when the file name at entry[0, len) (a path or a bare name) is a
 * sanitizer runtime: libasan, libtsan, libubsan, liblsan, libhwasan,
 * libclang_rt.*. */
bool cmt_is_sanitizer_runtime(const char *entry, size_t len);

/* Looks program up as execvp would (a name without '/' in PATH) and reads
 * its dynamic section. Returns true and its sanitizer runtime's DT_NEEDED
 * name (e.g. "libasan.so.8", which the dynamic loader resolves in
 * LD_PRELOAD as it would the dependency) in out; false when it needs none,
 * is not an ELF file (a script) or cannot be read. */
bool cmt_sanitizer_runtime_needed(const char *program, char *out, size_t len);

#endif
