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

/* Length of the well-formed UTF-8 sequence at p (RFC 3629: no overlong
 * forms, no surrogates, nothing above U+10FFFF), or 0 when p starts none. */
static int utf8_sequence(const unsigned char *p)
{
    unsigned char c = p[0];
    if (c < 0x80)
        return 1;
    int n;
    unsigned char lo = 0x80, hi = 0xbf; /* the range of the second byte */
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        if (c == 0xe0)
            lo = 0xa0; /* overlong below U+0800 */
        else if (c == 0xed)
            hi = 0x9f; /* surrogates U+D800..U+DFFF */
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        if (c == 0xf0)
            lo = 0x90; /* overlong below U+10000 */
        else if (c == 0xf4)
            hi = 0x8f; /* above U+10FFFF */
    } else {
        return 0; /* a continuation byte, 0xc0, 0xc1 or 0xf5..0xff */
    }
    if (p[1] < lo || p[1] > hi)
        return 0;
    for (int i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xbf)
            return 0; /* also stops at the terminating NUL */
    return n;
}

/* JSON text is UTF-8 (RFC 8259): trace strings are bytes (paths, symbol
 * names, a crafted trace's anything), so each byte that does not start a
 * well-formed sequence is written as U+FFFD, as a strict parser would need. */
static void write_escaped(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        switch (*p) {
        case '"': fputs("\\\"", out); break;
        case '\\': fputs("\\\\", out); break;
        case '\n': fputs("\\n", out); break;
        case '\r': fputs("\\r", out); break;
        case '\t': fputs("\\t", out); break;
        default:
            if (*p < 0x20) {
                fprintf(out, "\\u%04x", *p);
            } else {
                int n = utf8_sequence(p);
                if (n == 0) {
                    fputs("\\ufffd", out);
                    n = 1;
                } else {
                    fwrite(p, 1, (size_t)n, out);
                }
                p += n;
                continue;
            }
        }
        p++;
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

void cmt_json_decimal(struct cmt_json *j, uint64_t v, unsigned decimals)
{
    separate(j);
    if (decimals > 19)
        decimals = 19;
    uint64_t scale = 1;
    for (unsigned i = 0; i < decimals; i++)
        scale *= 10;
    if (decimals == 0)
        fprintf(j->out, "%" PRIu64, v);
    else
        fprintf(j->out, "%" PRIu64 ".%0*" PRIu64, v / scale, (int)decimals, v % scale);
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
