/* SPDX-License-Identifier: MIT */
#include "timeline_chart.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "size_parse.h"

/* Rows (1 .. height) a value fills, out of height for the scale. */
static size_t level(uint64_t v, uint64_t scale, size_t height)
{
    if (v == 0 || scale == 0)
        return 0;
    /* round up: any live byte shows */
    unsigned __int128 x = (unsigned __int128)v * height + scale - 1;
    size_t l = (size_t)(x / scale);
    return l > height ? height : l;
}

void cmt_timeline_chart(FILE *out, const struct cmt_timeline_model *chart, size_t series, size_t height,
                        const char *indent, uint64_t start)
{
    if (height == 0 || series >= chart->n_series || chart->n == 0)
        return;
    const struct cmt_timeline_model *v = chart;
    const struct cmt_timeline_model_series *s = &chart->series[series];
    const struct cmt_timeline_cell *cells = s->cells;
    char top[32], d1[32], d2[32];
    cmt_format_size(s->peak, top, sizeof top);
    size_t label_w = strlen(top) > 3 ? strlen(top) : 3;
    char *line = malloc(v->n + 1);
    if (!line)
        return;
    for (size_t row = height; row >= 1; row--) {
        for (size_t c = 0; c < v->n; c++) {
            size_t lo = level(cells[c].min, s->peak, height), hi = level(cells[c].max, s->peak, height);
            line[c] = row <= lo ? '#' : row <= hi ? ':' : ' ';
        }
        size_t end = v->n;
        while (end > 0 && line[end - 1] == ' ')
            end--;
        line[end] = '\0';
        fprintf(out, "%s%*s |%s\n", indent, (int)label_w, row == height ? top : "", line);
    }
    for (size_t c = 0; c < v->n; c++)
        line[c] = c == s->peak_bucket && s->peak ? '^' : '-';
    line[v->n] = '\0';
    fprintf(out, "%s%*s +%s\n", indent, (int)label_w, "0", line);
    uint64_t end_rel = v->end > start ? v->end - start : 0;
    cmt_format_duration(v->origin > start ? v->origin - start : 0, d1, sizeof d1);
    cmt_format_duration(end_rel, d2, sizeof d2);
    int pad = (int)v->n - (int)strlen(d1) - (int)strlen(d2);
    fprintf(out, "%s%*s  %s%*s%s\n", indent, (int)label_w, "", d1, pad > 1 ? pad : 1, "", d2);
    free(line);
}
