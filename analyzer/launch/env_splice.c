/* SPDX-License-Identifier: MIT */
#include "env_splice.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sanitizer_runtime.h"

int cmt_preload_splice(const char *old, const char *shim, const char *runtime, char **out)
{
    *out = NULL;
    if (!old)
        old = "";
    if (strstr(old, shim))
        return 0; /* already there (a nested run) */
    size_t len = strlen(shim) + strlen(old) + (runtime ? strlen(runtime) : 0) + 3;
    char *v = malloc(len);
    if (!v)
        return -1;
    v[0] = 0;
    size_t n = 0, pos = 0;
    bool placed = false;
    size_t first_len = strcspn(old, ": ");
    if (runtime && !cmt_is_sanitizer_runtime(old, first_len))
        n += (size_t)sprintf(v + n, "%s", runtime);
    while (old[pos]) {
        size_t start = pos;
        while (old[pos] && old[pos] != ':' && old[pos] != ' ')
            pos++;
        size_t elen = pos - start;
        if (elen) {
            if (!placed && !cmt_is_sanitizer_runtime(old + start, elen)) {
                n += (size_t)sprintf(v + n, "%s%s", n ? ":" : "", shim);
                placed = true;
            }
            n += (size_t)sprintf(v + n, "%s%.*s", n ? ":" : "", (int)elen, old + start);
        }
        if (old[pos])
            pos++;
    }
    if (!placed)
        sprintf(v + n, "%s%s", n ? ":" : "", shim);
    *out = v;
    return 0;
}

char *cmt_output_absolute(const char *tmpl, const char *cwd)
{
    if (!tmpl || !*tmpl)
        tmpl = "cumemtrace.%p.bin";
    if (tmpl[0] == '/')
        return strdup(tmpl);
    size_t len = strlen(cwd) + strlen(tmpl) + 2;
    char *abs = malloc(len);
    if (abs)
        snprintf(abs, len, "%s/%s", cwd, tmpl);
    return abs;
}

const char *cmt_nvtx_injection(const char *current, const char *shim)
{
    return current && *current ? NULL : shim;
}
