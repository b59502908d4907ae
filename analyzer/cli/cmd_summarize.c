/* SPDX-License-Identifier: MIT */
/* cumemtrace summarize [-o OUT] [-j N] [OPTIONS] TRACE...  (docs/cli.md)
 *
 * Each trace summed up for the job view into a small file of its own
 * (summary_file.h), where the trace lies: the launcher that ran the job runs
 * this per node or per rank, and `report` reads the summaries. A summary
 * holds what `report` keeps of the trace, filled by the same code
 * (cmt_report_build_one), so the job view from summaries gives the figures
 * it gives from the traces.
 *
 * Several traces are summarised by worker processes, one per core: the
 * analysis of one trace is single-threaded and keeps state of its own
 * (symbolizer caches), so processes rather than threads; each takes the
 * next trace from a counter they share. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmt_version.h"
#include "report_cli.h"
#include "summary_file.h"

void cmt_summarize_defaults(struct report_cli *cli)
{
    *cli = (struct report_cli){.summarize = true};
    cmt_report_cli_defaults(cli);
    cmt_frames_args_apply(&cli->symbols, &cli->opt.frames);
    cli->n_whatif = cmt_whatif_candidates(cli->whatif, sizeof cli->whatif / sizeof cli->whatif[0]);
}

/* The options that shaped the figures, as recorded: those given, and the
 * suppression files of the environment (they change the leaks). */
static void settings_of(const struct report_cli *cli, char *out, size_t len)
{
    const char *env = getenv("CUMEMTRACE_SUPPRESSIONS");
    int w = snprintf(out, len, "%s", cli->figure_options);
    size_t used = w < 0 ? 0 : (size_t)w < len ? (size_t)w : len - 1;
    if (env && *env && !cli->no_default_suppressions)
        snprintf(out + used, len - used, "%sCUMEMTRACE_SUPPRESSIONS=%s", used ? " " : "", env);
}

/* Writes s to path through a temporary file renamed into place, so a reader
 * never sees half a summary. Returns 0, or -1 after saying why. */
static int write_summary(const char *path, const struct cmt_trace_summary *s)
{
    char tmp[PATH_MAX + 32];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "we");
    if (!f) {
        cmt_cli_error("summarize: cannot create %s: %s; check that its directory exists and is writable", tmp,
                      strerror(errno));
        return -1;
    }
    int rc = cmt_summary_write(f, s);
    if (fclose(f) != 0)
        rc = -1;
    if (rc == 0 && rename(tmp, path) != 0)
        rc = -1;
    if (rc != 0) {
        cmt_cli_error("summarize: writing %s failed: %s; check the free space (df) and `ulimit -f`", path,
                      strerror(errno));
        unlink(tmp);
    }
    return rc;
}

/* Summarises one trace into out. Returns its exit status. */
static int summarize_one(const char *trace, const char *out, const struct report_cli *cli)
{
    struct cmt_trace_summary *s = calloc(1, sizeof *s);
    if (!s) {
        cmt_cli_error("summarize: %s: out of memory; free memory", trace);
        return CMT_EXIT_USAGE;
    }
    snprintf(s->made_by, sizeof s->made_by, "%s", CMT_VERSION);
    settings_of(cli, s->settings, sizeof s->settings);
    cmt_analysis_peek_rank(trace, &s->order_rank);
    struct cmt_built_report b;
    int status = cmt_report_build_one(trace, cli, &b, &s->process, &s->member);
    if (b.built) {
        if (b.a.damaged)
            snprintf(s->damage, sizeof s->damage, "%s", b.a.message);
        else if (cmt_reader_truncated(b.a.reader))
            snprintf(s->damage, sizeof s->damage, "trace is truncated: the file ends at offset %llu",
                     (unsigned long long)b.a.info.file_size);
        int st = cmt_cli_damage_status(trace, &b.a, "summary");
        if (st != CMT_EXIT_OK)
            status = st;
        cmt_report_free_one(&b);
    }
    /* A trace that could not be read still gets a summary that says so:
     * the job view then names it, as it does from the traces. */
    if (write_summary(out, s) != 0)
        status = CMT_EXIT_USAGE;
    free(s);
    return status;
}

/* What the workers share: the next trace to take, and each one's status. */
struct shared_work {
    size_t next;
    int status[];
};

static void worker(struct shared_work *w, const char *const *traces, const char *const *outs, size_t n,
                   const struct report_cli *cli)
{
    /* one write per line: the workers' messages do not interleave */
    static char line_buf[8192];
    setvbuf(stderr, line_buf, _IOLBF, sizeof line_buf);
    for (;;) {
        size_t i = __atomic_fetch_add(&w->next, 1, __ATOMIC_RELAXED);
        if (i >= n)
            break;
        w->status[i] = summarize_one(traces[i], outs[i], cli);
    }
    fflush(NULL);
}

static size_t cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (size_t)n : 1;
}

int cmt_summarize_traces(const char *const *traces, const char *const *out_paths, size_t n, const struct report_cli *cli)
{
    size_t jobs = cli->jobs ? cli->jobs : cores();
    if (jobs > n)
        jobs = n;
    int status = CMT_EXIT_OK;
    if (jobs <= 1) {
        for (size_t i = 0; i < n; i++) {
            int st = summarize_one(traces[i], out_paths[i], cli);
            if (st != CMT_EXIT_OK)
                status = st;
        }
        return status;
    }
    size_t size = sizeof(struct shared_work) + n * sizeof(int);
    struct shared_work *w = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (w == MAP_FAILED) {
        cmt_cli_error("summarize: cannot share work between processes (mmap: %s); give -j 1", strerror(errno));
        return CMT_EXIT_USAGE;
    }
    w->next = 0;
    for (size_t i = 0; i < n; i++)
        w->status[i] = -1; /* not done */
    fflush(NULL);
    pid_t *pids = calloc(jobs, sizeof *pids);
    size_t started = 0;
    for (; pids && started < jobs; started++) {
        pid_t pid = fork();
        if (pid < 0)
            break; /* the ones started do the work */
        if (pid == 0) {
            worker(w, traces, out_paths, n, cli);
            _exit(0);
        }
        pids[started] = pid;
    }
    if (started == 0)
        worker(w, traces, out_paths, n, cli); /* no process could start: this one does it all */
    for (size_t k = 0; k < started; k++)
        while (waitpid(pids[k], NULL, 0) < 0 && errno == EINTR)
            ;
    for (size_t i = 0; i < n; i++) {
        if (w->status[i] < 0) {
            cmt_cli_error("summarize: %s: the process summarising it ended before it was done (killed, or out of "
                          "memory); summarise it again with -j 1",
                          traces[i]);
            status = CMT_EXIT_USAGE;
        } else if (w->status[i] != CMT_EXIT_OK) {
            status = w->status[i];
        }
    }
    free(pids);
    munmap(w, size);
    return status;
}

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int cmt_summarize_main(char **traces, size_t n, const struct report_cli *cli)
{
    for (size_t i = 0; i < n; i++) {
        if (cmt_cli_is_stdin(traces[i])) {
            cmt_cli_error("summarize: '-' (the standard input) cannot be summarised: give the trace's path");
            return CMT_EXIT_USAGE;
        }
        if (cmt_summary_file_is_summary(traces[i])) {
            cmt_cli_error("summarize: %s is already a summary: give the traces", traces[i]);
            return CMT_EXIT_USAGE;
        }
    }
    /* -o: the summary's file for one trace, else a directory */
    const char *dir = NULL;
    if (cli->output && (n > 1 || is_dir(cli->output))) {
        dir = cli->output;
        if (!is_dir(dir) && mkdir(dir, 0777) != 0 && errno != EEXIST) {
            cmt_cli_error("summarize: cannot create the directory %s: %s; create it, or give -o a writable "
                          "directory", dir, strerror(errno));
            return CMT_EXIT_USAGE;
        }
    }
    char (*outs)[PATH_MAX] = calloc(n, sizeof *outs);
    const char **out_ptrs = calloc(n, sizeof *out_ptrs);
    if (!outs || !out_ptrs) {
        free(outs);
        free(out_ptrs);
        cmt_cli_error("summarize: out of memory; give fewer traces at a time, or free memory");
        return CMT_EXIT_USAGE;
    }
    int status = CMT_EXIT_OK;
    for (size_t i = 0; i < n && status == CMT_EXIT_OK; i++) {
        if (cli->output && !dir)
            snprintf(outs[i], sizeof outs[i], "%s", cli->output);
        else if (cmt_summary_path_for(traces[i], dir, outs[i], sizeof outs[i]) != 0) {
            cmt_cli_error("summarize: the summary's path for %s is too long; give -o a shorter directory", traces[i]);
            status = CMT_EXIT_USAGE;
        }
        out_ptrs[i] = outs[i];
        /* two traces of one name from two directories would overwrite one
         * summary with the other */
        for (size_t k = 0; k < i && status == CMT_EXIT_OK; k++)
            if (!strcmp(outs[k], outs[i])) {
                cmt_cli_error("summarize: %s and %s would both be summarised into %s; summarise them into "
                              "different directories (-o)",
                              traces[k], traces[i], outs[i]);
                status = CMT_EXIT_USAGE;
            }
    }
    if (status == CMT_EXIT_OK)
        status = cmt_summarize_traces((const char *const *)traces, out_ptrs, n, cli);
    free(outs);
    free(out_ptrs);
    return status;
}
