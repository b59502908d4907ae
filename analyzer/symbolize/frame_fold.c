/* SPDX-License-Identifier: MIT
 *
 * Frame folding rules: see frame_fold.h for what is folded by default.
 */
#include "frame_fold.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

enum fold_field {
    FOLD_FUNCTION = 1u << 0,
    FOLD_FILE = 1u << 1,
    FOLD_MODULE = 1u << 2,
    FOLD_ANY = FOLD_FUNCTION | FOLD_FILE | FOLD_MODULE
};

struct fold_rule {
    char *pattern;
    unsigned fields; /* enum fold_field */
};

struct cmt_fold_rules {
    struct fold_rule *v;
    size_t n, cap;
};

static const struct {
    const char *pattern;
    unsigned fields;
} default_rules[] = {
    { "libcumemtrace.so*", FOLD_MODULE },
    { "libcudart.so*", FOLD_MODULE },
    { "libcuda.so*", FOLD_MODULE },
    /* No CUDA allocation is made by the C library itself: its frames in a
     * stack are the process/thread entry (often without symbols when libc
     * has no debug info) or a callback trampoline such as pthread_once. */
    { "libc.so*", FOLD_MODULE },
    { "cuda[A-Z]*", FOLD_FUNCTION },
    { "__cuda*", FOLD_FUNCTION },
    { "__cudart*", FOLD_FUNCTION },
    { "cudart::*", FOLD_FUNCTION },
    { "_ZN6cudart*", FOLD_FUNCTION },
    /* CUDA 13's libcudart_static.a names its internal functions
     * libcudart_static_<40 hex digits> (seen on the H200 validation run:
     * samples/gpu/compare_leaks.py). */
    { "libcudart_static_*", FOLD_FUNCTION },
    /* The C library's process and thread entry frames end every stack and
     * say nothing about who allocated. */
    { "__libc_start_call_main", FOLD_FUNCTION },
    { "__libc_start_main*", FOLD_FUNCTION },
    { "_start", FOLD_FUNCTION },
    { "start_thread", FOLD_FUNCTION },
    { "clone", FOLD_FUNCTION },
    { "clone3", FOLD_FUNCTION },
};

/* fnmatch has no compile step and takes malformed patterns literally; refuse
 * the two mistakes that would silently never match what was meant. */
static bool pattern_valid(const char *p)
{
    if (!p || !*p)
        return false;
    for (size_t i = 0; p[i]; i++) {
        if (p[i] == '\\') {
            if (!p[i + 1])
                return false;
            i++;
        } else if (p[i] == '[') {
            size_t j = i + 1;
            if (p[j] == '!' || p[j] == '^')
                j++;
            if (p[j] == ']')
                j++; /* a leading ']' is a member */
            while (p[j] && p[j] != ']')
                j++;
            if (!p[j])
                return false;
            i = j;
        }
    }
    return true;
}

static int add_rule(struct cmt_fold_rules *r, const char *pattern, unsigned fields)
{
    if (r->n == r->cap) {
        size_t ncap = r->cap ? r->cap * 2 : 16;
        struct fold_rule *nv = realloc(r->v, ncap * sizeof *nv);
        if (!nv)
            return -ENOMEM;
        r->v = nv;
        r->cap = ncap;
    }
    char *copy = strdup(pattern);
    if (!copy)
        return -ENOMEM;
    r->v[r->n++] = (struct fold_rule){ copy, fields };
    return 0;
}

struct cmt_fold_rules *cmt_fold_rules_new(void)
{
    struct cmt_fold_rules *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    for (size_t i = 0; i < sizeof default_rules / sizeof default_rules[0]; i++) {
        if (add_rule(r, default_rules[i].pattern, default_rules[i].fields) != 0) {
            cmt_fold_rules_free(r);
            return NULL;
        }
    }
    return r;
}

int cmt_fold_rules_add(struct cmt_fold_rules *r, const char *pattern)
{
    if (!r || !pattern_valid(pattern))
        return -EINVAL;
    return add_rule(r, pattern, FOLD_ANY);
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

bool cmt_fold_rules_match(const struct cmt_fold_rules *r, const struct cmt_frame *f)
{
    if (!r || !f)
        return false;
    const char *func = f->function && *f->function ? f->function : NULL;
    const char *file = f->file && *f->file ? f->file : NULL;
    const char *file_base = file ? base_name(file) : NULL;
    const char *mod_base = f->module && *f->module ? base_name(f->module) : NULL;
    if (mod_base && !*mod_base)
        mod_base = NULL;
    for (size_t i = 0; i < r->n; i++) {
        const struct fold_rule *rule = &r->v[i];
        if ((rule->fields & FOLD_FUNCTION) && func && fnmatch(rule->pattern, func, 0) == 0)
            return true;
        if ((rule->fields & FOLD_FILE) && file &&
            (fnmatch(rule->pattern, file, 0) == 0 ||
             (file_base != file && *file_base && fnmatch(rule->pattern, file_base, 0) == 0)))
            return true;
        if ((rule->fields & FOLD_MODULE) && mod_base && fnmatch(rule->pattern, mod_base, 0) == 0)
            return true;
    }
    return false;
}

void cmt_fold_rules_free(struct cmt_fold_rules *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++)
        free(r->v[i].pattern);
    free(r->v);
    free(r);
}
