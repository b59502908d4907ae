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
void cmt_json_double(struct cmt_json *j, double v); /* 6 significant digits: ratios, rates */
/* v / 10^decimals written exactly with that many decimals (at most 19), in
 * integer arithmetic: 1234567 with 3 reads 1234.567. For figures a double's
 * 6 digits would round, such as nanoseconds written as microseconds. */
void cmt_json_decimal(struct cmt_json *j, uint64_t v, unsigned decimals);
void cmt_json_bool(struct cmt_json *j, bool v);
void cmt_json_null(struct cmt_json *j);
/* Finishes the document with a newline. */
void cmt_json_finish(struct cmt_json *j);

#endif
