/* SPDX-License-Identifier: MIT */
#include "json_writer.h"

#include <inttypes.h>
#include <math.h>

void cmt_json_init(struct cmt_json *j, FILE *out, bool pretty)
{
    j->out = out;
    j->pretty = pretty;
    j->depth = 0;
    j->need_comma[0] = false;
    j->after_key = false;
}

static void newline(struct cmt_json *j)
{
    if (!j->pretty)
        return;
    fputc('\n', j->out);
    for (int i = 0; i < j->depth; i++)
        fputs("  ", j->out);
}

/* Called before every value or key. */
static void separate(struct cmt_json *j)
{
    if (j->after_key) {
        j->after_key = false;
        return;
    }
    if (j->need_comma[j->depth])
        fputc(',', j->out);
    if (j->depth > 0)
        newline(j);
    j->need_comma[j->depth] = true;
}

static void open_scope(struct cmt_json *j, char c)
{
    separate(j);
    fputc(c, j->out);
    if (j->depth < 63)
        j->depth++;
    j->need_comma[j->depth] = false;
}

static void close_scope(struct cmt_json *j, char c)
{
    bool had = j->need_comma[j->depth];
    if (j->depth > 0)
        j->depth--;
    if (had)
        newline(j);
    fputc(c, j->out);
}

void cmt_json_begin_object(struct cmt_json *j) { open_scope(j, '{'); }
void cmt_json_end_object(struct cmt_json *j) { close_scope(j, '}'); }
void cmt_json_begin_array(struct cmt_json *j) { open_scope(j, '['); }
void cmt_json_end_array(struct cmt_json *j) { close_scope(j, ']'); }

static void write_escaped(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", out); break;
        case '\\': fputs("\\\\", out); break;
        case '\n': fputs("\\n", out); break;
        case '\r': fputs("\\r", out); break;
        case '\t': fputs("\\t", out); break;
        default:
            if (*p < 0x20)
                fprintf(out, "\\u%04x", *p);
            else
                fputc(*p, out);
        }
    }
    fputc('"', out);
}

void cmt_json_key(struct cmt_json *j, const char *key)
{
    separate(j);
    write_escaped(j->out, key);
    fputs(j->pretty ? ": " : ":", j->out);
    j->after_key = true;
}

void cmt_json_string(struct cmt_json *j, const char *s)
{
    separate(j);
    if (s)
        write_escaped(j->out, s);
    else
        fputs("null", j->out);
}

void cmt_json_uint(struct cmt_json *j, uint64_t v)
{
    separate(j);
    fprintf(j->out, "%" PRIu64, v);
}

void cmt_json_int(struct cmt_json *j, int64_t v)
{
    separate(j);
    fprintf(j->out, "%" PRId64, v);
}

void cmt_json_double(struct cmt_json *j, double v)
{
    separate(j);
    if (isfinite(v))
        fprintf(j->out, "%.6g", v);
    else
        fputs("null", j->out);
}

void cmt_json_bool(struct cmt_json *j, bool v)
{
    separate(j);
    fputs(v ? "true" : "false", j->out);
}

void cmt_json_null(struct cmt_json *j)
{
    separate(j);
    fputs("null", j->out);
}

void cmt_json_finish(struct cmt_json *j)
{
    fputc('\n', j->out);
}
