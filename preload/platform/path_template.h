/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_PATH_TEMPLATE_H
#define CUMEMTRACE_PRELOAD_PATH_TEMPLATE_H

#include <stddef.h>
#include <stdint.h>

struct cmt_template_vars {
    long pid;
    const char *hostname;
    uint64_t start_time; /* seconds since the epoch */
    const char *rank;    /* NULL: no rank variable set (job_identity.h) */
};

/* Expands %p (pid), %h (host name), %t (start time, seconds since the epoch),
 * %r (the rank, cmt_job_identity_read: from RANK, OMPI_COMM_WORLD_RANK,
 * PMI_RANK or SLURM_PROCID; "0" when none is set) and %% into out. Any other %x is copied as is. Returns 0,
 * or -1 when the result does not fit in cap bytes (the template is then not
 * used: a bounded path can never be silently cut short). */
int cmt_expand_path_template(const char *tmpl, const struct cmt_template_vars *vars, char *out, size_t cap);

/* Writes path with ".N" inserted before the last component's extension
 * (trace.bin -> trace.1.bin), or appended when there is none. Returns 0 or -1
 * when it does not fit. */
int cmt_path_with_suffix(const char *path, unsigned n, char *out, size_t cap);

#endif
