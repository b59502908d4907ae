/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_JSON_WRITER_H
#define CUMEMTRACE_ANALYZER_JSON_WRITER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* A streaming JSON writer: commas and nesting handled here, so renderers only
 * say what goes where. Output is compact unless pretty is set. */
struct cmt_json {
    FILE *out;
    bool pretty;
    int depth;
    bool need_comma[64];
    bool after_key;
};

void cmt_json_init(struct cmt_json *j, FILE *out, bool pretty);
void cmt_json_begin_object(struct cmt_json *j);
void cmt_json_end_object(struct cmt_json *j);
void cmt_json_begin_array(struct cmt_json *j);
void cmt_json_end_array(struct cmt_json *j);
void cmt_json_key(struct cmt_json *j, const char *key);
void cmt_json_string(struct cmt_json *j, const char *s); /* NULL writes null */
void cmt_json_uint(struct cmt_json *j, uint64_t v);
void cmt_json_int(struct cmt_json *j, int64_t v);
void cmt_json_double(struct cmt_json *j, double v);
void cmt_json_bool(struct cmt_json *j, bool v);
void cmt_json_null(struct cmt_json *j);
/* Finishes the document with a newline. */
void cmt_json_finish(struct cmt_json *j);

#endif
