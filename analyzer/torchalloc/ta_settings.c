/* SPDX-License-Identifier: MIT */
/* PYTORCH_CUDA_ALLOC_CONF read as PyTorch 2.11 reads it: tokens split at
 * ',', ':', '[' and ']' with spaces dropped; large_segment_size_mb first
 * (the lower bounds of max_split_size_mb and max_non_split_rounding_mb
 * follow it), then every key in order, each reset to its default unless
 * given. */
#include "ta_settings.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TOKENS 128
#define TOKEN_LEN 64
#define LARGE_BUFFER (20 * CMT_TA_MIB) /* kLargeBuffer */
#define MIN_LARGE_ALLOC (10 * CMT_TA_MIB) /* kMinLargeAlloc */

struct tokens {
    char t[MAX_TOKENS][TOKEN_LEN];
    size_t n;
};

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

static int tokenize(const char *text, struct tokens *tk, char *err, size_t errlen)
{
    tk->n = 0;
    size_t len = 0;
    for (const char *p = text;; p++) {
        bool sep = *p == ',' || *p == ':' || *p == '[' || *p == ']';
        if ((sep || !*p) && len) {
            tk->t[tk->n++][len] = '\0';
            len = 0;
        }
        if (!*p)
            return 0;
        if (tk->n == MAX_TOKENS)
            return fail(err, errlen, "more than %d words", MAX_TOKENS);
        if (sep) {
            tk->t[tk->n][0] = *p;
            tk->t[tk->n++][1] = '\0';
        } else if (*p != ' ') {
            if (len + 1 == TOKEN_LEN)
                return fail(err, errlen, "a word longer than %d characters", TOKEN_LEN - 1);
            tk->t[tk->n][len++] = *p;
        }
    }
}

static bool is(const struct tokens *tk, size_t i, const char *s)
{
    return i < tk->n && strcmp(tk->t[i], s) == 0;
}

static int expect(const struct tokens *tk, size_t i, const char *s, char *err, size_t errlen)
{
    if (is(tk, i, s))
        return 0;
    return fail(err, errlen, "expected '%s' %s%s", s, i < tk->n ? "before " : "at the end", i < tk->n ? tk->t[i] : "");
}

static int to_u64(const struct tokens *tk, size_t i, const char *key, uint64_t *out, char *err, size_t errlen)
{
    if (i >= tk->n)
        return fail(err, errlen, "%s needs a value", key);
    char *end;
    errno = 0;
    unsigned long long v = strtoull(tk->t[i], &end, 10);
    if (errno || end == tk->t[i] || *end || tk->t[i][0] == '-')
        return fail(err, errlen, "%s needs a whole number, got '%s'", key, tk->t[i]);
    *out = v;
    return 0;
}

static int to_double(const struct tokens *tk, size_t i, const char *key, double *out, char *err, size_t errlen)
{
    if (i >= tk->n)
        return fail(err, errlen, "%s needs a value", key);
    char *end;
    errno = 0;
    double v = strtod(tk->t[i], &end);
    if (errno || end == tk->t[i] || *end)
        return fail(err, errlen, "%s needs a number, got '%s'", key, tk->t[i]);
    *out = v;
    return 0;
}

static int to_bool(const struct tokens *tk, size_t i, const char *key, bool *out, char *err, size_t errlen)
{
    if (is(tk, i, "True") || is(tk, i, "true") || is(tk, i, "1")) {
        *out = true;
        return 0;
    }
    if (is(tk, i, "False") || is(tk, i, "false") || is(tk, i, "0")) {
        *out = false;
        return 0;
    }
    return fail(err, errlen, "%s needs True or False, got '%s'", key, i < tk->n ? tk->t[i] : "");
}

static bool power_of_two(uint64_t v)
{
    return v && !(v & (v - 1));
}

static unsigned log2_floor(uint64_t v)
{
    return 63u - (unsigned)__builtin_clzll(v);
}

/* A size in MiB at least min_mb: stored in bytes (PyTorch caps the MiB
 * figure so the product cannot overflow). */
static int mib_value(const struct tokens *tk, size_t i, const char *key, uint64_t min_mb, bool strictly_above,
                     uint64_t *out, char *err, size_t errlen)
{
    uint64_t v;
    if (to_u64(tk, i, key, &v, err, errlen) != 0)
        return -1;
    if (strictly_above ? v <= min_mb : v < min_mb)
        return fail(err, errlen, "%s must be %s %llu", key, strictly_above ? "above" : "at least",
                    (unsigned long long)min_mb);
    if (v > UINT64_MAX / CMT_TA_MIB)
        v = UINT64_MAX / CMT_TA_MIB;
    *out = v * CMT_TA_MIB;
    return 0;
}

/* roundup_power2_divisions:N (every interval) or [MiB:N,...,>:N]. */
static int parse_divisions(const struct tokens *tk, size_t *ip, struct cmt_ta_settings *s, char *err, size_t errlen)
{
    static const char key[] = "roundup_power2_divisions";
    size_t i = *ip;
    if (!is(tk, i, "[")) {
        uint64_t v;
        if (to_u64(tk, i, key, &v, err, errlen) != 0)
            return -1;
        if (!power_of_two(v) || v > UINT32_MAX)
            return fail(err, errlen, "%s must be a power of 2, got %llu", key, (unsigned long long)v);
        for (size_t k = 0; k < CMT_TA_ROUNDUP_INTERVALS; k++)
            s->roundup_power2_divisions[k] = (uint32_t)v;
        *ip = i;
        return 0;
    }
    bool first = true;
    size_t last = 0;
    while (++i < tk->n && !is(tk, i, "]")) {
        size_t boundary_at = i;
        uint64_t v;
        if (expect(tk, ++i, ":", err, errlen) != 0 || to_u64(tk, ++i, key, &v, err, errlen) != 0)
            return -1;
        if ((v && !power_of_two(v)) || v > UINT32_MAX)
            return fail(err, errlen, "%s: divisions must be 0 or a power of 2, got %llu", key, (unsigned long long)v);
        if (is(tk, boundary_at, ">")) {
            for (size_t k = last + 1; k < CMT_TA_ROUNDUP_INTERVALS; k++)
                s->roundup_power2_divisions[k] = (uint32_t)v;
        } else {
            uint64_t b;
            if (to_u64(tk, boundary_at, key, &b, err, errlen) != 0)
                return -1;
            if (!power_of_two(b))
                return fail(err, errlen, "%s: interval %llu (MiB) is no power of 2", key, (unsigned long long)b);
            size_t index = log2_floor(b);
            if (index > CMT_TA_ROUNDUP_INTERVALS - 1)
                index = CMT_TA_ROUNDUP_INTERVALS - 1;
            if (first)
                for (size_t k = 0; k < index; k++)
                    s->roundup_power2_divisions[k] = (uint32_t)v;
            first = false;
            s->roundup_power2_divisions[index] = (uint32_t)v;
            last = index;
        }
        if (!is(tk, i + 1, "]") && expect(tk, ++i, ",", err, errlen) != 0)
            return -1;
    }
    if (!is(tk, i, "]"))
        return fail(err, errlen, "%s: '[' without its ']'", key);
    *ip = i;
    return 0;
}

/* Keys that do not change device memory: pinned host memory, the lock
 * around cudaMalloc, CUDA graphs' stream reuse. */
static bool ignored_key(const char *k)
{
    static const char *const keys[] = {"release_lock_on_cudamalloc",   "pinned_use_cuda_host_register",
                                       "pinned_num_register_threads",  "pinned_use_background_threads",
                                       "graph_capture_record_stream_reuse", "pinned_use_host_register"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (strcmp(k, keys[i]) == 0)
            return true;
    return false;
}

static int parse_key(const struct tokens *tk, size_t *ip, struct cmt_ta_settings *s, char *err, size_t errlen)
{
    size_t i = *ip;
    const char *key = tk->t[i];
    if (expect(tk, ++i, ":", err, errlen) != 0)
        return fail(err, errlen, "%s needs ':' and a value", key);
    ++i;
    int rc = 0;
    if (strcmp(key, "large_segment_size_mb") == 0) {
        uint64_t ignored;
        rc = to_u64(tk, i, key, &ignored, err, errlen); /* read in the first pass */
    } else if (strcmp(key, "max_split_size_mb") == 0) {
        rc = mib_value(tk, i, key, s->large_segment_size / CMT_TA_MIB, false, &s->max_split_size, err, errlen);
    } else if (strcmp(key, "max_non_split_rounding_mb") == 0) {
        rc = mib_value(tk, i, key, s->large_segment_size / CMT_TA_MIB, false, &s->max_non_split_rounding_size, err,
                       errlen);
    } else if (strcmp(key, "garbage_collection_threshold") == 0) {
        rc = to_double(tk, i, key, &s->garbage_collection_threshold, err, errlen);
        if (rc == 0 && !(s->garbage_collection_threshold > 0 && s->garbage_collection_threshold < 1))
            rc = fail(err, errlen, "%s must be above 0 and below 1", key);
    } else if (strcmp(key, "roundup_power2_divisions") == 0) {
        rc = parse_divisions(tk, &i, s, err, errlen);
    } else if (strcmp(key, "expandable_segments") == 0) {
        rc = to_bool(tk, i, key, &s->expandable_segments, err, errlen);
    } else if (strcmp(key, "per_process_memory_fraction") == 0) {
        double f;
        rc = to_double(tk, i, key, &f, err, errlen);
        if (rc == 0 && !(f >= 0 && f <= 1))
            rc = fail(err, errlen, "%s must be between 0 and 1", key);
        s->fraction_set = rc == 0 && f < 1.0;
        s->memory_fraction = f;
    } else if (strcmp(key, "backend") == 0) {
        if (is(tk, i, "cudaMallocAsync"))
            rc = fail(err, errlen, "backend:cudaMallocAsync is CUDA's stream-ordered allocator, not the caching "
                                   "allocator this replays");
        else if (!is(tk, i, "native"))
            rc = fail(err, errlen, "backend must be native or cudaMallocAsync, got '%s'", i < tk->n ? tk->t[i] : "");
    } else if (ignored_key(key)) {
        if (i >= tk->n)
            rc = fail(err, errlen, "%s needs a value", key);
    } else {
        rc = fail(err, errlen, "'%s' is no key of PyTorch's caching allocator", key);
    }
    *ip = i;
    return rc;
}

void cmt_ta_settings_default(struct cmt_ta_settings *s)
{
    memset(s, 0, sizeof *s);
    s->max_split_size = UINT64_MAX;
    s->large_segment_size = LARGE_BUFFER;
    s->max_non_split_rounding_size = LARGE_BUFFER;
    s->memory_fraction = 1.0;
}

int cmt_ta_settings_parse(const char *text, struct cmt_ta_settings *s, char *err, size_t errlen)
{
    cmt_ta_settings_default(s);
    struct tokens *tk = malloc(sizeof *tk);
    if (!tk)
        return fail(err, errlen, "out of memory");
    int rc = tokenize(text, tk, err, errlen);
    if (rc == 0 && tk->n == 1 && is(tk, 0, "default"))
        tk->n = 0;
    /* large_segment_size_mb first: the others' lower bounds depend on it */
    for (size_t i = 0; rc == 0 && i + 2 < tk->n; i++)
        if (is(tk, i, "large_segment_size_mb") && is(tk, i + 1, ":"))
            rc = mib_value(tk, i + 2, "large_segment_size_mb", MIN_LARGE_ALLOC / CMT_TA_MIB, true,
                           &s->large_segment_size, err, errlen);
    s->max_non_split_rounding_size = s->large_segment_size;
    for (size_t i = 0; rc == 0 && i < tk->n; i++) {
        if (!strcmp(tk->t[i], ",") || !strcmp(tk->t[i], ":") || !strcmp(tk->t[i], "[") || !strcmp(tk->t[i], "]")) {
            rc = fail(err, errlen, "a key was expected before '%s'", tk->t[i]);
            break;
        }
        rc = parse_key(tk, &i, s, err, errlen);
        if (rc == 0 && i + 1 < tk->n)
            rc = expect(tk, ++i, ",", err, errlen);
    }
    if (rc == 0) {
        size_t n = 0;
        for (const char *p = text; *p && n + 1 < sizeof s->text; p++)
            if (*p != ' ')
                s->text[n++] = *p;
        s->text[n] = '\0';
        if (strcmp(s->text, "default") == 0)
            s->text[0] = '\0';
    }
    free(tk);
    return rc;
}

const char *cmt_ta_settings_label(const struct cmt_ta_settings *s)
{
    return s->text[0] ? s->text : "the defaults";
}

bool cmt_ta_settings_gc_inert(const struct cmt_ta_settings *s)
{
    return s->garbage_collection_threshold > 0 && !s->fraction_set;
}

uint32_t cmt_ta_settings_divisions(const struct cmt_ta_settings *s, uint64_t size)
{
    unsigned log = size ? log2_floor(size) : 0, start = 20; /* 1 MiB */
    size_t index = log > start ? log - start : 0;
    if (index > CMT_TA_ROUNDUP_INTERVALS - 1)
        index = CMT_TA_ROUNDUP_INTERVALS - 1;
    return s->roundup_power2_divisions[index];
}
