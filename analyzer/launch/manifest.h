/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_MANIFEST_H
#define CUMEMTRACE_ANALYZER_MANIFEST_H

#include <stddef.h>

/* The manifest of a `run --check` (CUMEMTRACE_MANIFEST): every traced
 * process appends one line per trace it writes, its path, and one per trace
 * it could not create or keep (preload/recorder.c writes them):
 *     PATH                        a trace
 *     !create PID REASON\tPATH    no trace: PATH could not be created
 *     !stop PID REASON\tPATH      PATH stopped recording on a write error
 * docs/check.md, "The manifest", is the user's view. */

enum cmt_manifest_kind {
    CMT_MANIFEST_TRACE,  /* a trace was written */
    CMT_MANIFEST_CREATE, /* the shim could not create it */
    CMT_MANIFEST_STOP    /* it stopped recording on a write error */
};

struct cmt_manifest_entry {
    enum cmt_manifest_kind kind;
    long pid;     /* CREATE, STOP: the process that said so */
    char *reason; /* CREATE, STOP: the shim's words; NULL for a trace */
    char *path;
};

struct cmt_manifest {
    struct cmt_manifest_entry *entries; /* in the order written; a trace path once */
    size_t n;
};

/* Reads the manifest at path (a missing or empty one has no entries).
 * Lines it cannot parse are taken as paths, as older shims wrote only
 * those. Returns 0, or -1 when out of memory (what was read is kept). */
int cmt_manifest_read(const char *path, struct cmt_manifest *m);
void cmt_manifest_free(struct cmt_manifest *m);

/* Parses one line (without its newline) into e (its strings malloc'd).
 * Returns 0, or -1 when out of memory. */
int cmt_manifest_parse_line(const char *line, struct cmt_manifest_entry *e);

#endif
