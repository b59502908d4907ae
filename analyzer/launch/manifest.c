/* SPDX-License-Identifier: MIT */
#include "manifest.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cmt_manifest_parse_line(const char *line, struct cmt_manifest_entry *e)
{
    memset(e, 0, sizeof *e);
    e->kind = CMT_MANIFEST_TRACE;
    const char *tab = strchr(line, '\t');
    const char *kinds[] = {"!create ", "!stop "};
    for (int k = 0; k < 2 && line[0] == '!' && tab; k++) {
        size_t kl = strlen(kinds[k]);
        if (strncmp(line, kinds[k], kl) != 0)
            continue;
        char *end;
        long pid = strtol(line + kl, &end, 10);
        if (end == line + kl || *end != ' ' || end > tab)
            break;
        e->kind = k == 0 ? CMT_MANIFEST_CREATE : CMT_MANIFEST_STOP;
        e->pid = pid;
        e->reason = strndup(end + 1, (size_t)(tab - end - 1));
        e->path = strdup(tab + 1);
        return e->reason && e->path ? 0 : -1;
    }
    e->path = strdup(line);
    return e->path ? 0 : -1;
}

static bool listed(const struct cmt_manifest *m, const struct cmt_manifest_entry *e)
{
    for (size_t i = 0; i < m->n; i++)
        if (m->entries[i].kind == e->kind && m->entries[i].pid == e->pid && !strcmp(m->entries[i].path, e->path))
            return true;
    return false;
}

int cmt_manifest_read(const char *path, struct cmt_manifest *m)
{
    memset(m, 0, sizeof *m);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    int rc = 0;
    while ((got = getline(&line, &cap, f)) > 0) {
        if (line[got - 1] == '\n')
            line[--got] = '\0';
        if (got == 0)
            continue;
        struct cmt_manifest_entry e;
        if (cmt_manifest_parse_line(line, &e) != 0) {
            free(e.reason);
            free(e.path);
            rc = -1;
            break;
        }
        if (listed(m, &e)) {
            free(e.reason);
            free(e.path);
            continue;
        }
        struct cmt_manifest_entry *more = realloc(m->entries, (m->n + 1) * sizeof *more);
        if (!more) {
            free(e.reason);
            free(e.path);
            rc = -1;
            break;
        }
        m->entries = more;
        m->entries[m->n++] = e;
    }
    free(line);
    fclose(f);
    return rc;
}

void cmt_manifest_free(struct cmt_manifest *m)
{
    for (size_t i = 0; i < m->n; i++) {
        free(m->entries[i].reason);
        free(m->entries[i].path);
    }
    free(m->entries);
    memset(m, 0, sizeof *m);
}
