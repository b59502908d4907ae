/* SPDX-License-Identifier: MIT */
#include "path_template.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int append(char *out, size_t cap, size_t *len, const char *s, size_t n)
{
    if (*len + n >= cap)
        return -1;
    memcpy(out + *len, s, n);
    *len += n;
    out[*len] = '\0';
    return 0;
}

int cmt_expand_path_template(const char *tmpl, const struct cmt_template_vars *vars, char *out, size_t cap)
{
    size_t len = 0;
    char num[32];
    if (cap == 0)
        return -1;
    out[0] = '\0';
    for (const char *p = tmpl; *p; p++) {
        int rc;
        if (*p != '%' || p[1] == '\0') {
            rc = append(out, cap, &len, p, 1);
        } else {
            p++;
            switch (*p) {
            case 'p':
                snprintf(num, sizeof num, "%ld", vars->pid);
                rc = append(out, cap, &len, num, strlen(num));
                break;
            case 't':
                snprintf(num, sizeof num, "%llu", (unsigned long long)vars->start_time);
                rc = append(out, cap, &len, num, strlen(num));
                break;
            case 'h': {
                const char *h = vars->hostname && *vars->hostname ? vars->hostname : "localhost";
                rc = append(out, cap, &len, h, strlen(h));
                break;
            }
            case 'r': {
                const char *r = vars->rank ? vars->rank : "0";
                rc = append(out, cap, &len, r, strlen(r));
                break;
            }
            case '%':
                rc = append(out, cap, &len, "%", 1);
                break;
            default:
                rc = append(out, cap, &len, p - 1, 2);
                break;
            }
        }
        if (rc != 0)
            return -1;
    }
    return 0;
}

int cmt_path_with_suffix(const char *path, unsigned n, char *out, size_t cap)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    const char *dot = strrchr(base, '.');
    if (dot == base)
        dot = NULL; /* ".hidden" has no extension */
    int w;
    if (dot)
        w = snprintf(out, cap, "%.*s.%u%s", (int)(dot - path), path, n, dot);
    else
        w = snprintf(out, cap, "%s.%u", path, n);
    return (w < 0 || (size_t)w >= cap) ? -1 : 0;
}
