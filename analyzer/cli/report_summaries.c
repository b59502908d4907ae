/* SPDX-License-Identifier: MIT */
/* `cumemtrace report SUMMARY...|DIR`: the comparison and the job view from
 * the summaries of `cumemtrace summarize` (summary_file.h), without the
 * traces (docs/report.md, "A job at scale"). Each summary holds a trace's
 * comparison row and job member as `report` fills them from the trace;
 * here they are read, ordered as `report` orders traces (by the rank the
 * trace recorded, then as given) and grouped by the same code. Memory: one
 * member per summary (about 30 KiB), whatever the traces' length. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "memory_budget.h"
#include "report_summaries.h"
#include "size_parse.h"
#include "summary_file.h"

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

bool cmt_summaries_input(const char *path)
{
    return !cmt_cli_is_stdin(path) && (is_dir(path) || cmt_summary_file_is_summary(path));
}

struct input_list {
    char **paths; /* malloc'd */
    size_t n, cap;
};

static int push_path(struct input_list *l, const char *dir, const char *name)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        char **grown = realloc(l->paths, cap * sizeof *grown);
        if (!grown)
            return -1;
        l->paths = grown;
        l->cap = cap;
    }
    char *p = NULL;
    if (dir ? asprintf(&p, "%s/%s", dir, name) < 0 : !(p = strdup(name)))
        return -1;
    l->paths[l->n++] = p;
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The summaries of a directory (*.cmtsum), by name. */
static int list_dir(const char *dir, struct input_list *l)
{
    DIR *d = opendir(dir);
    if (!d) {
        cmt_cli_error("report: cannot list %s: %s", dir, strerror(errno));
        return -1;
    }
    size_t first = l->n;
    size_t suffix = strlen(CMT_SUMMARY_SUFFIX);
    struct dirent *e;
    int rc = 0;
    while (rc == 0 && (e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] == '.' || len <= suffix || strcmp(e->d_name + len - suffix, CMT_SUMMARY_SUFFIX) != 0)
            continue;
        if (push_path(l, dir, e->d_name) != 0) {
            cmt_cli_error("report: out of memory; give fewer traces at a time, or free memory");
            rc = -1;
        }
    }
    closedir(d);
    if (rc == 0 && l->n == first) {
        cmt_cli_error("report: %s holds no summary (*%s): make them with `cumemtrace summarize`, or give traces",
                      dir, CMT_SUMMARY_SUFFIX);
        rc = -1;
    }
    if (rc == 0)
        qsort(l->paths + first, l->n - first, sizeof *l->paths, by_name);
    return rc;
}

static void free_list(struct input_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->paths[i]);
    free(l->paths);
}

/* The inputs as summary files; -1 after saying why when one is a trace. */
static int expand_inputs(char **paths, size_t n, struct input_list *l)
{
    const char *a_summary = NULL;
    for (size_t i = 0; i < n && !a_summary; i++)
        if (cmt_summaries_input(paths[i]))
            a_summary = paths[i];
    for (size_t i = 0; i < n; i++) {
        if (is_dir(paths[i])) {
            if (list_dir(paths[i], l) != 0)
                return -1;
            continue;
        }
        /* a file there but not a summary: a trace among summaries (a file
         * that cannot be read is said as the summary it was given as) */
        struct stat st;
        if (stat(paths[i], &st) == 0 && S_ISREG(st.st_mode) && !cmt_summary_file_is_summary(paths[i]) &&
            st.st_size > 0) {
            cmt_cli_error("report: %s is not a summary, and %s is: give traces or summaries, not both (summarise "
                          "the traces with `cumemtrace summarize`)",
                          paths[i], a_summary);
            return -1;
        }
        if (push_path(l, NULL, paths[i]) != 0) {
            cmt_cli_error("report: out of memory; give fewer traces at a time, or free memory");
            return -1;
        }
    }
    return 0;
}

struct ordered {
    int64_t rank;
    size_t given;
};

static int by_rank(const void *pa, const void *pb)
{
    const struct ordered *a = pa, *b = pb;
    uint64_t ra = (uint64_t)a->rank, rb = (uint64_t)b->rank; /* -1 last */
    if (ra != rb)
        return ra < rb ? -1 : 1;
    return a->given < b->given ? -1 : a->given > b->given;
}

/* Reads every summary into sums and members (given order). Returns the exit
 * status so far, or -1 when the summaries do not belong in one report. */
static int read_all(const struct input_list *l, struct cmt_process_summary *sums, struct cmt_job_member *members,
                    struct ordered *order, char *settings, size_t settings_len)
{
    struct cmt_trace_summary *s = malloc(sizeof *s);
    if (!s) {
        cmt_cli_error("report: out of memory; give fewer traces at a time, or free memory");
        return -1;
    }
    int status = CMT_EXIT_OK;
    const char *reference = NULL; /* the first summary read: the others must share its settings */
    char err[700];
    for (size_t i = 0; i < l->n; i++) {
        const char *path = l->paths[i];
        order[i] = (struct ordered){-1, i};
        if (cmt_summary_read(path, s, err, sizeof err) != 0) {
            cmt_cli_error("report: %s: %s", path, err);
            char why[800];
            snprintf(why, sizeof why, "summary not read: %s", err);
            cmt_summary_failed(path, why, &sums[i]);
            cmt_job_member_failed(path, &members[i]);
            status = CMT_EXIT_USAGE;
            continue;
        }
        if (!reference) {
            reference = path;
            snprintf(settings, settings_len, "%s", s->settings);
        } else if (strcmp(settings, s->settings) != 0) {
            char mine[sizeof s->settings + 2], theirs[sizeof s->settings + 2];
            snprintf(mine, sizeof mine, settings[0] ? "'%s'" : "the defaults", settings);
            snprintf(theirs, sizeof theirs, s->settings[0] ? "'%s'" : "the defaults", s->settings);
            cmt_cli_error("report: %s was summarised with %s, %s with %s: their figures do not compare; "
                          "summarise every trace of the job with the same options",
                          reference, mine, path, theirs);
            free(s);
            return -1;
        }
        if (!s->process.analysed) {
            cmt_cli_error("report: %s (summary %s): %s", s->process.trace, path, s->process.error);
            status = CMT_EXIT_USAGE;
        } else if (s->damage[0]) {
            cmt_cli_error("report: %s (summary %s): %s; its figures cover the events before it", s->process.trace,
                          path, s->damage);
            status = CMT_EXIT_USAGE;
        }
        order[i].rank = s->order_rank;
        sums[i] = s->process;
        members[i] = s->member;
    }
    free(s);
    return status;
}

/* Puts the entries of sums, members and paths in the order of order
 * (order[k].given is the entry that goes to k), in place: one member at a
 * time is copied, not all. */
static int permute(struct ordered *order, size_t n, struct cmt_process_summary *sums, struct cmt_job_member *members,
                   char **paths)
{
    bool *done = calloc(n ? n : 1, sizeof *done);
    struct cmt_job_member *tm = malloc(sizeof *tm);
    struct cmt_process_summary *ts = malloc(sizeof *ts);
    if (!done || !tm || !ts) {
        free(done);
        free(tm);
        free(ts);
        return -1;
    }
    for (size_t start = 0; start < n; start++) {
        if (done[start])
            continue;
        /* the cycle through start: k takes what order[k].given held */
        *tm = members[start];
        *ts = sums[start];
        char *tp = paths[start];
        size_t k = start;
        for (;;) {
            done[k] = true;
            size_t from = order[k].given;
            if (from == start) {
                members[k] = *tm;
                sums[k] = *ts;
                paths[k] = tp;
                break;
            }
            members[k] = members[from];
            sums[k] = sums[from];
            paths[k] = paths[from];
            k = from;
        }
    }
    free(done);
    free(tm);
    free(ts);
    return 0;
}

int cmt_summaries_load(char **paths, size_t n, struct cmt_loaded_summaries *l)
{
    memset(l, 0, sizeof *l);
    struct input_list in = {0};
    if (expand_inputs(paths, n, &in) != 0) {
        free_list(&in);
        return -1;
    }
    /* one member and one row per summary: refused up front when they would
     * pass the memory budget (a directory of a million files) */
    uint64_t need = (uint64_t)in.n * (sizeof(struct cmt_process_summary) + sizeof(struct cmt_job_member) +
                                      sizeof(struct ordered));
    uint64_t budget = cmt_memory_budget();
    if (budget && need > budget) {
        char need_s[32], budget_s[32];
        cmt_format_size(need, need_s, sizeof need_s);
        cmt_format_size(budget, budget_s, sizeof budget_s);
        cmt_cli_error("report: %zu summaries need %s, over the memory budget of %s (--max-memory): give fewer at a "
                      "time, or a larger --max-memory",
                      in.n, need_s, budget_s);
        free_list(&in);
        return -1;
    }
    l->paths = in.paths;
    l->n = in.n;
    l->summaries = calloc(in.n ? in.n : 1, sizeof *l->summaries);
    l->members = calloc(in.n ? in.n : 1, sizeof *l->members);
    struct ordered *order = calloc(in.n ? in.n : 1, sizeof *order);
    int status = -1;
    if (!l->summaries || !l->members || !order) {
        cmt_cli_error("report: out of memory; give fewer traces at a time, or free memory");
        goto out;
    }
    status = read_all(&in, l->summaries, l->members, order, l->settings, sizeof l->settings);
    if (status < 0)
        goto out;
    qsort(order, in.n, sizeof *order, by_rank);
    if (permute(order, in.n, l->summaries, l->members, l->paths) != 0) {
        cmt_cli_error("report: out of memory; give fewer traces at a time, or free memory");
        status = -1;
        goto out;
    }
    l->grouped = cmt_job_set_build(&l->jobs, l->members, in.n) == 0;
    l->set = (struct cmt_summary_set){.n = in.n,
                                      .paths = (const char *const *)l->paths,
                                      .summaries = l->summaries,
                                      .members = l->members,
                                      .jobs = l->grouped ? &l->jobs : NULL,
                                      .settings = l->settings};
out:
    free(order);
    if (status < 0)
        cmt_summaries_free(l);
    return status;
}

void cmt_summaries_free(struct cmt_loaded_summaries *l)
{
    if (l->grouped)
        cmt_job_set_free(&l->jobs);
    struct input_list in = {.paths = l->paths, .n = l->n};
    free_list(&in);
    free(l->summaries);
    free(l->members);
    memset(l, 0, sizeof *l);
}
