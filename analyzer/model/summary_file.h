/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_SUMMARY_FILE_H
#define CUMEMTRACE_ANALYZER_SUMMARY_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "compare.h"
#include "job.h"

/* A trace summed up for the job view, in a file of its own: what `report`
 * keeps of each trace of a job (its comparison row, compare.h, and its job
 * member, job.h) made where the trace lies (`cumemtrace summarize`, `run
 * --summary`), so that the job view of 1,024 ranks needs 1,024 small files
 * on one machine, not 1,024 traces (docs/report.md, "A job at scale").
 *
 * The file (little-endian, docs/trace-format.md, "Summaries"):
 *   magic "CMTSUMRY", u16 major, u16 minor, u32 header size (24), u64 body
 *   size; the body (fields in the order summary_file.c writes them: strings
 *   as u32 length + bytes, no NUL); u64 FNV-1a of the body.
 * A summary is untrusted input, read with a trace's care: every length,
 * count and index is checked against its field, and a damaged file is
 * refused with its offset, the field and what is wrong. */

#define CMT_SUMMARY_MAGIC "CMTSUMRY"
#define CMT_SUMMARY_MAJOR 1
#define CMT_SUMMARY_MINOR 0
#define CMT_SUMMARY_HEADER_SIZE 24u
/* A summary is a few KiB (32 KiB at most with every list full): anything
 * far above is not one. */
#define CMT_SUMMARY_MAX_BODY (1u << 20)
/* A file name ending in this is a summary (`report DIR` reads them). */
#define CMT_SUMMARY_SUFFIX ".cmtsum"

struct cmt_trace_summary {
    char made_by[32];    /* the cumemtrace version that wrote it */
    char settings[1024]; /* the options that shaped its figures, as given ("" the defaults) */
    int64_t order_rank;  /* the rank `report` orders traces by (its PROCESS record's; -1 none) */
    char damage[600];    /* why the trace's figures stop early (damaged, cut); "" read to its end */
    struct cmt_process_summary process;
    struct cmt_job_member member;
};

/* Writes s to out. Returns 0, or -1 with errno set when writing failed. */
int cmt_summary_write(FILE *out, const struct cmt_trace_summary *s);

/* Whether the first bytes of data (len of them) are a summary's magic. */
bool cmt_summary_is_magic(const void *data, size_t len);
/* Whether path is a summary (starts with the magic); false also when it
 * cannot be read. */
bool cmt_summary_file_is_summary(const char *path);

/* Reads a summary from the bytes of a file (size of them) into s. Returns
 * 0, or -1 with err filled: the offset, the field and what is wrong. */
int cmt_summary_decode(const uint8_t *data, size_t size, struct cmt_trace_summary *s, char *err, size_t errlen);
/* Reads the file path into s. Returns 0, or -1 with err filled (without
 * the path). */
int cmt_summary_read(const char *path, struct cmt_trace_summary *s, char *err, size_t errlen);

/* The summary's name for a trace: a trailing ".bin" replaced by ".cmtsum",
 * else ".cmtsum" added; in dir when dir is not NULL (the trace's own
 * directory otherwise). Returns 0, or -1 when it does not fit. */
int cmt_summary_path_for(const char *trace, const char *dir, char *out, size_t len);

#endif
