/* SPDX-License-Identifier: MIT */
/* Call sites as `check` names them: where they are (compiler-style
 * locations) and what identifies them from one run to the next. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

const struct cmt_frame *cmt_check_location_frame(const struct cmt_stack_frames *sf)
{
    /* The frame that names the call site (frames.h: the user's Python line
     * rather than where libtorch allocated), when it has a line; else the
     * first frame shown that has one. */
    const struct cmt_frame *site = cmt_stack_site(sf);
    if (site && site->file && site->file[0] && site->line > 0)
        return site;
    for (size_t i = 0; i < sf->n; i++)
        if (sf->frames[i].file && sf->frames[i].file[0] && sf->frames[i].line > 0)
            return &sf->frames[i];
    return NULL;
}

/* Removes "." and ".." components and doubled slashes without touching the
 * file system: DWARF names files as comp_dir + "../src/x.c". */
static void normalize(const char *path, char *buf, size_t len)
{
    bool absolute = path[0] == '/';
    size_t starts[PATH_MAX / 2];
    size_t depth = 0, u = 0, kept_up = 0;
    buf[0] = '\0';
    if (absolute && len > 1)
        buf[u++] = '/';
    for (const char *p = path; *p;) {
        while (*p == '/')
            p++;
        const char *e = p;
        while (*e && *e != '/')
            e++;
        size_t n = (size_t)(e - p);
        if (n == 0)
            break;
        if (n == 1 && p[0] == '.') {
            /* nothing */
        } else if (n == 2 && p[0] == '.' && p[1] == '.' && depth > kept_up) {
            u = starts[--depth];
        } else if (n == 2 && p[0] == '.' && p[1] == '.' && absolute) {
            /* "/.." is "/" */
        } else if (u + n + 2 < len && depth < sizeof starts / sizeof starts[0]) {
            starts[depth++] = u;
            if (n == 2 && p[0] == '.' && p[1] == '.')
                kept_up = depth; /* a leading ".." of a relative path stays */
            if (u > 0 && buf[u - 1] != '/')
                buf[u++] = '/';
            memcpy(buf + u, p, n);
            u += n;
        }
        p = e;
    }
    if (u == 0 && len > 1)
        buf[u++] = '.';
    buf[u < len ? u : len - 1] = '\0';
}

bool cmt_check_path(const struct cmt_check *c, const char *path, char *buf, size_t len)
{
    if (!path || !*path) {
        snprintf(buf, len, "%s", path ? path : "");
        return false;
    }
    normalize(path, buf, len);
    size_t n = strlen(c->source_root);
    if (n == 0 || buf[0] != '/')
        return false;
    if (n == 1 && c->source_root[0] == '/') {
        memmove(buf, buf + 1, strlen(buf));
        return true;
    }
    if (strncmp(buf, c->source_root, n) != 0 || buf[n] != '/' || !buf[n + 1])
        return false;
    memmove(buf, buf + n + 1, strlen(buf + n + 1) + 1);
    return true;
}

void cmt_check_describe_frame(const struct cmt_check *c, const struct cmt_frame *fr, char *buf, size_t len)
{
    if (fr->function && fr->file && fr->file[0] && fr->line > 0) {
        char path[PATH_MAX];
        cmt_check_path(c, fr->file, path, sizeof path);
        snprintf(buf, len, "%s at %s:%d%s", fr->function, path, fr->line, fr->inlined ? " (inlined)" : "");
        return;
    }
    cmt_frame_describe(fr, buf, len);
}

void cmt_check_location(const struct cmt_check *c, const struct cmt_check_trace *t, uint64_t stack, char *buf,
                        size_t len)
{
    const struct cmt_stack_frames *sf = cmt_frames_get(t->report.frames, stack);
    const struct cmt_frame *f = cmt_check_location_frame(sf);
    if (f) {
        char path[PATH_MAX];
        cmt_check_path(c, f->file, path, sizeof path);
        snprintf(buf, len, "%s:%d", path, f->line);
        return;
    }
    for (size_t i = 0; i < sf->n; i++)
        if (sf->frames[i].module && sf->frames[i].module[0]) {
            snprintf(buf, len, "%s", cmt_basename(sf->frames[i].module));
            return;
        }
    snprintf(buf, len, "%s", t->path);
}

char *cmt_check_site_key(const struct cmt_stack_frames *sf, unsigned kind, bool with_lines)
{
    char *frames = cmt_frames_site_identity(sf, with_lines);
    if (!frames)
        return NULL;
    char *key = NULL;
    if (asprintf(&key, "%s%s%s", cmt_kind_name(kind), sf->n ? "\n" : "", frames) < 0)
        key = NULL;
    free(frames);
    return key;
}

uint64_t cmt_check_hash(const char *text, uint64_t seed)
{
    /* FNV-1a, 64 bits: fingerprints only need to be stable, not secret. */
    uint64_t h = 0xcbf29ce484222325ull ^ (seed * 0x9e3779b97f4a7c15ull);
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        h ^= *p;
        h *= 0x100000001b3ull;
    }
    return h;
}
