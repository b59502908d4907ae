/* SPDX-License-Identifier: MIT */
#include "suppressions.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frames.h"

#define MAX_SUPPRESSION_FILE (16u << 20)

void cmt_suppressions_init(struct cmt_suppressions *s)
{
    memset(s, 0, sizeof *s);
}

void cmt_suppressions_free(struct cmt_suppressions *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->items[i].pattern);
        free(s->items[i].source);
        free(s->items[i].reason);
    }
    free(s->items);
    free(s->labels);
    free(s->memo);
    memset(s, 0, sizeof *s);
}

static int add(struct cmt_suppressions *s, const char *pattern, size_t len, const char *source, unsigned line,
               bool is_default, const char *reason, size_t reason_len)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        struct cmt_suppression *more = realloc(s->items, cap * sizeof *more);
        if (!more)
            return -1;
        s->items = more;
        s->cap = cap;
    }
    struct cmt_suppression *x = &s->items[s->n];
    memset(x, 0, sizeof *x);
    x->pattern = strndup(pattern, len);
    x->source = strdup(source);
    x->reason = strndup(reason ? reason : "", reason ? reason_len : 0);
    if (!x->pattern || !x->source || !x->reason) {
        free(x->pattern);
        free(x->source);
        free(x->reason);
        return -1;
    }
    x->line = line;
    x->is_default = is_default;
    s->n++;
    return 0;
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* What a comment line says an entry is for: its text up to the first ": ",
 * ", ", "; " or ". " (or its end), a final '.' dropped; and before a
 * parenthesis the line does not close (the comment goes on below it: "(a
 * trace checked" read as an unbalanced label). */
static size_t reason_clause(const char *a, const char *b)
{
    const char *e = a;
    while (e < b && !((*e == ':' || *e == ',' || *e == ';' || *e == '.') && (e + 1 == b || e[1] == ' ')) &&
           !(*e == '(' && !memchr(e, ')', (size_t)(b - e))))
        e++;
    while (e > a && is_blank(e[-1]))
        e--;
    return (size_t)(e - a);
}

int cmt_suppressions_parse(struct cmt_suppressions *s, const char *text, size_t len, const char *source,
                           bool is_default, char *err, size_t errlen)
{
    const char *p = text, *end = text + len;
    unsigned line = 0;
    /* The comment block right above the entries of a paragraph says what
     * they are for (its first line's first clause); a blank line ends it. */
    const char *reason = NULL;
    size_t reason_len = 0;
    bool in_comment = false;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            eol = end;
        line++;
        const char *a = p, *b = eol;
        p = eol < end ? eol + 1 : end;
        while (a < b && is_blank(*a))
            a++;
        while (b > a && is_blank(b[-1]))
            b--;
        if (a == b) {
            reason = NULL;
            in_comment = false;
            continue;
        }
        if (*a == '#') {
            if (!in_comment) {
                const char *c = a + 1;
                while (c < b && (is_blank(*c) || *c == '#'))
                    c++;
                reason = c;
                reason_len = reason_clause(c, b);
                in_comment = true;
            }
            continue;
        }
        in_comment = false;
        const char *colon = memchr(a, ':', (size_t)(b - a));
        if (*a == '{' || *a == '}') {
            snprintf(err, errlen, "%s:%u: this looks like a valgrind suppression; cumemtrace reads lines of the "
                                  "form leak:PATTERN",
                     source, line);
            return -1;
        }
        if (!colon) {
            snprintf(err, errlen, "%s:%u: expected leak:PATTERN, got '%.*s'", source, line, (int)(b - a), a);
            return -1;
        }
        if ((size_t)(colon - a) != 4 || memcmp(a, "leak", 4) != 0) {
            snprintf(err, errlen, "%s:%u: unknown suppression type '%.*s' (cumemtrace understands leak:PATTERN)",
                     source, line, (int)(colon - a), a);
            return -1;
        }
        const char *pat = colon + 1;
        while (pat < b && is_blank(*pat))
            pat++;
        if (pat == b) {
            snprintf(err, errlen, "%s:%u: empty pattern after 'leak:'; write leak:PATTERN, such as leak:libfoo.so",
                     source, line);
            return -1;
        }
        if (add(s, pat, (size_t)(b - pat), source, line, is_default, reason, reason_len) != 0) {
            snprintf(err, errlen, "%s: out of memory", source);
            return -1;
        }
    }
    return 0;
}

int cmt_suppressions_load_file(struct cmt_suppressions *s, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot read the suppressions file %s: %s; check the path", path, strerror(errno));
        return -1;
    }
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    int rc = 0;
    while (buf) {
        if (len == cap) {
            if (cap >= MAX_SUPPRESSION_FILE) {
                snprintf(err, errlen, "the suppressions file %s is larger than %u MiB: split it into several files",
                         path, MAX_SUPPRESSION_FILE >> 20);
                rc = -1;
                break;
            }
            char *more = realloc(buf, cap * 2);
            if (!more) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = more;
            cap *= 2;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0)
            break;
    }
    if (!buf) {
        snprintf(err, errlen, "%s: out of memory", path);
        rc = -1;
    } else if (rc == 0 && ferror(f)) {
        snprintf(err, errlen, "cannot read the suppressions file %s: %s; check the path", path, strerror(errno));
        rc = -1;
    } else if (rc == 0) {
        rc = cmt_suppressions_parse(s, buf, len, path, false, err, errlen);
    }
    free(buf);
    fclose(f);
    return rc;
}

/* Where needle occurs in text at or after from, or NULL; an empty needle
 * occurs at from. */
static const char *find(const char *from, const char *needle, size_t n)
{
    if (n == 0)
        return from;
    for (const char *p = from; *p; p++)
        if (*p == *needle && strncmp(p, needle, n) == 0)
            return p;
    return NULL;
}

bool cmt_suppression_pattern_match(const char *pattern, const char *text)
{
    if (!pattern || !text || !*text)
        return false;
    size_t plen = strlen(pattern);
    bool anchor_start = plen > 0 && pattern[0] == '^';
    const char *pat = pattern + (anchor_start ? 1 : 0);
    plen -= anchor_start ? 1 : 0;
    bool anchor_end = plen > 0 && pat[plen - 1] == '$';
    if (anchor_end)
        plen--;
    size_t tlen = strlen(text);
    const char *pos = text;
    bool first = true;
    /* Segments between '*': the first is pinned to the start when anchored,
     * the last to the end; the others are found left to right, leftmost
     * first, which is enough for a pattern with only '*' wildcards. */
    const char *seg = pat, *pend = pat + plen;
    while (seg <= pend) {
        const char *star = memchr(seg, '*', (size_t)(pend - seg));
        const char *seg_end = star ? star : pend;
        size_t n = (size_t)(seg_end - seg);
        bool last = !star;
        if (first && anchor_start) {
            if (strncmp(text, seg, n) != 0)
                return false;
            pos = text + n;
            if (last && anchor_end)
                return pos == text + tlen;
        } else if (last && anchor_end) {
            if (n > (size_t)(text + tlen - pos))
                return false;
            return strncmp(text + tlen - n, seg, n) == 0;
        } else {
            const char *hit = find(pos, seg, n);
            if (!hit)
                return false;
            pos = hit + n;
        }
        first = false;
        if (last)
            break;
        seg = star + 1;
    }
    return true;
}

static bool frame_matches(const char *pattern, const struct cmt_frame *f)
{
    return cmt_suppression_pattern_match(pattern, f->function) ||
           cmt_suppression_pattern_match(pattern, f->file) ||
           cmt_suppression_pattern_match(pattern, cmt_basename(f->file)) ||
           cmt_suppression_pattern_match(pattern, f->module) ||
           cmt_suppression_pattern_match(pattern, cmt_basename(f->module));
}

static bool is_profiler_frame(const struct cmt_frame *f)
{
    return strncmp(cmt_basename(f->module), "libcumemtrace.so", 16) == 0;
}

long cmt_suppressions_match(const struct cmt_suppressions *s, const struct cmt_frame *frames, size_t n)
{
    for (size_t i = 0; i < s->n; i++)
        for (size_t k = 0; k < n; k++)
            if (!is_profiler_frame(&frames[k]) && frame_matches(s->items[i].pattern, &frames[k]))
                return (long)i;
    return -1;
}

int cmt_suppressions_load_all(struct cmt_suppressions *s, const char *const *files, size_t n_files,
                              bool no_default, char *err, size_t errlen)
{
    for (size_t i = 0; i < n_files; i++)
        if (cmt_suppressions_load_file(s, files[i], err, errlen) != 0)
            return -1;
    const char *env = getenv("CUMEMTRACE_SUPPRESSIONS");
    if (env && *env) {
        char *list = strdup(env);
        if (!list) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        char *save = NULL;
        for (char *p = strtok_r(list, ":", &save); p; p = strtok_r(NULL, ":", &save)) {
            if (cmt_suppressions_load_file(s, p, err, errlen) != 0) {
                size_t used = strlen(err);
                snprintf(err + used, errlen - used, " (named in CUMEMTRACE_SUPPRESSIONS)");
                free(list);
                return -1;
            }
        }
        free(list);
    }
    if (!no_default && cmt_suppressions_parse(s, cmt_default_suppressions, strlen(cmt_default_suppressions),
                                              "default", true, err, errlen) != 0)
        return -1;
    return 0;
}

/* ---- as the report model's filter --------------------------------------- */

/* The first suppression matching frame f alone, -1 none. */
static long first_match(const struct cmt_suppressions *s, const struct cmt_frame *f)
{
    if (is_profiler_frame(f))
        return -1;
    for (size_t i = 0; i < s->n; i++)
        if (frame_matches(s->items[i].pattern, f))
            return (long)i;
    return -1;
}

static size_t memo_hash(const struct cmt_frame *f)
{
    uint64_t h = (uint64_t)(uintptr_t)f->function * 0x9e3779b97f4a7c15ull;
    h ^= (uint64_t)(uintptr_t)f->file * 0xc2b2ae3d27d4eb4full;
    h ^= (uint64_t)(uintptr_t)f->module * 0x165667b19e3779f9ull;
    return (size_t)(h ^ (h >> 29));
}

/* Room for one more verdict; false when out of memory (then frames are
 * matched without the memo). */
static bool memo_room(struct cmt_suppressions *s)
{
    if ((s->memo_count + 1) * 2 <= s->memo_cap)
        return true;
    size_t cap = s->memo_cap ? s->memo_cap * 2 : 1024;
    struct cmt_suppression_memo_slot *t = calloc(cap, sizeof *t);
    if (!t)
        return false;
    for (size_t i = 0; i < s->memo_cap; i++) {
        const struct cmt_suppression_memo_slot *o = &s->memo[i];
        if (!o->used)
            continue;
        struct cmt_frame k = {.function = o->function, .file = o->file, .module = o->module};
        size_t j = memo_hash(&k) & (cap - 1);
        while (t[j].used)
            j = (j + 1) & (cap - 1);
        t[j] = *o;
    }
    free(s->memo);
    s->memo = t;
    s->memo_cap = cap;
    return true;
}

/* first_match, each distinct frame computed once. */
static long first_match_memo(struct cmt_suppressions *s, const struct cmt_frame *f)
{
    if (!memo_room(s))
        return first_match(s, f);
    size_t mask = s->memo_cap - 1;
    for (size_t j = memo_hash(f) & mask;; j = (j + 1) & mask) {
        struct cmt_suppression_memo_slot *m = &s->memo[j];
        if (!m->used) {
            long first = first_match(s, f);
            *m = (struct cmt_suppression_memo_slot){f->function, f->file, f->module, (int32_t)first, true};
            s->memo_count++;
            return first;
        }
        if (m->function == f->function && m->file == f->file && m->module == f->module)
            return m->first;
    }
}

/* The first suppression matching any frame of the stack: the smallest of
 * its frames' first matches (cmt_suppressions_match tries each suppression
 * over every frame in turn: the same answer). */
static long match_stack(void *ctx, struct cmt_frames *frames, uint64_t stack)
{
    struct cmt_suppressions *s = ctx;
    if (s->n == 0 || stack == 0)
        return -1;
    uint64_t serial = cmt_frames_serial(frames);
    if (s->memo_serial != serial) {
        if (s->memo)
            memset(s->memo, 0, s->memo_cap * sizeof *s->memo);
        s->memo_count = 0;
        s->memo_serial = serial;
    }
    const struct cmt_stack_frames *sf = cmt_frames_get_unfolded(frames, stack);
    long best = -1;
    for (size_t k = 0; k < sf->n && best != 0; k++) {
        long first = first_match_memo(s, &sf->frames[k]);
        if (first >= 0 && (best < 0 || first < best))
            best = first;
    }
    return best;
}

int cmt_suppressions_attach(struct cmt_suppressions *s, struct cmt_report_options *o)
{
    free(s->labels);
    s->labels = calloc(s->n ? s->n : 1, sizeof *s->labels);
    if (!s->labels)
        return -1;
    for (size_t i = 0; i < s->n; i++) {
        const struct cmt_suppression *x = &s->items[i];
        s->labels[i] = (struct cmt_report_suppression){
            .pattern = x->pattern,
            .source = x->is_default ? "default.supp" : x->source,
            .line = x->line,
            .reason = x->reason,
            .is_default = x->is_default,
        };
    }
    o->suppress_stack = match_stack;
    o->suppress_ctx = s;
    o->suppressions = s->labels;
    o->n_suppressions = s->n;
    return 0;
}
