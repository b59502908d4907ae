/* SPDX-License-Identifier: MIT */
/* cumemtrace summarize [-o OUT] [--jobs N] [OPTIONS] TRACE...  (docs/cli.md)
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
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "command_options.h"
#include "cmt_version.h"
#include "one_trace.h"
#include "size_parse.h"
#include "summarize.h"
#include "summary_file.h"
#include "symbol_options.h"
#include "time_arg.h"
#include "whatif_report.h"

static void summarize_usage(FILE *out)
{
    fputs("usage: cumemtrace summarize [OPTIONS] TRACE...\n"
          "\n"
          "Sums each trace up for the job view, where the trace lies: one small file per\n"
          "trace (TRACE with .bin replaced by .cmtsum, beside it) holding what `report`\n"
          "keeps of it for the comparison and the job view. `cumemtrace report` given the\n"
          "summaries of a job (or their directory) shows them with the figures it gives\n"
          "from the traces, without the traces on one machine. Several traces are\n"
          "summarised in parallel, one per core.\n"
          "\n"
          "  -o, --output PATH      the summary's file (one trace), or the directory the\n"
          "                         summaries go to (created if missing)\n"
          "  --jobs N               traces summarised at once (default: one per core)\n"
          "  --at TIME              replay up to TIME after the start of the trace\n"
          "  --include-cached       count what a caching allocator holds at exit as leaks\n"
          "  --context-allowance SIZE  as for report\n"
          "  --suppressions FILE    leak:PATTERN lines, as for check (repeatable; also the\n"
          "                         files in CUMEMTRACE_SUPPRESSIONS)\n"
          "  --no-default-suppressions  do not apply the built-in list\n"
          "  --full-stacks, --fold PATTERN, --unfold PATTERN, --debuginfo-path DIR,\n"
          "  --sysroot DIR, --no-symbols   how call sites are named, as for report\n"
          CMT_MEMORY_OPTION_HELP
          "\n"
          "The options that shape figures are recorded in each summary: report refuses\n"
          "summaries made with different ones.\n"
          "\n"
          "Exit status: 0 every trace summarised; 2 bad options, or a trace that could\n"
          "not be read, is damaged or cut (its summary says so, and report exits 2), or\n"
          "a summary that could not be written.\n",
          out);
}

void cmt_summarize_options_init(struct cmt_summarize_options *o)
{
    memset(o, 0, sizeof *o);
    /* report's defaults (cmd_report.c): the figures must be its own */
    o->opt = (struct cmt_report_options){
        .top = 10, .max_frames = 8, .tree_min_percent = 1.0, .chart_width = 64, .chart_height = 6,
        .holder_peaks = true};
    o->opt.frames.symbolizer.demangle = true;
    o->n_whatif = cmt_whatif_candidates(o->whatif, sizeof o->whatif / sizeof o->whatif[0]);
    cmt_suppressions_init(&o->suppressions);
}

int cmt_summarize_options_ready(struct cmt_summarize_options *o, const char *cmd)
{
    char err[800];
    cmt_frames_args_apply(&o->symbols, &o->opt.frames);
    if (cmt_suppressions_load_all(&o->suppressions, o->suppression_files, o->n_suppression_files,
                                  o->no_default_suppressions, err, sizeof err) != 0) {
        cmt_cli_error("%s: %s", cmd, err);
        return -1;
    }
    if (cmt_suppressions_attach(&o->suppressions, &o->opt) != 0) {
        cmt_cli_error("summarize: out of memory; give fewer traces at a time, or free memory");
        return -1;
    }
    /* what shapes the figures, recorded in each summary; the suppression
     * files of the environment change the leaks too */
    const char *env = getenv("CUMEMTRACE_SUPPRESSIONS");
    struct cmt_figure_options f = {.at_ns = o->opt.at_set ? o->opt.at_ns : 0,
                                   .include_cached = o->opt.include_cached,
                                   .allowance_set = o->opt.context_allowance_set,
                                   .allowance = o->opt.context_allowance,
                                   .suppression_files = o->suppression_files,
                                   .n_suppression_files = o->n_suppression_files,
                                   .no_default_suppressions = o->no_default_suppressions,
                                   .symbols = &o->symbols,
                                   .env_suppressions = o->no_default_suppressions ? NULL : env};
    cmt_figure_options_describe(&f, o->settings, sizeof o->settings);
    return 0;
}

void cmt_summarize_options_free(struct cmt_summarize_options *o)
{
    cmt_suppressions_free(&o->suppressions);
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
static int summarize_one(const char *trace, const char *out, const struct cmt_summarize_options *o)
{
    struct cmt_trace_summary *s = calloc(1, sizeof *s);
    if (!s) {
        cmt_cli_error("summarize: %s: out of memory; free memory", trace);
        return CMT_EXIT_USAGE;
    }
    snprintf(s->made_by, sizeof s->made_by, "%s", CMT_VERSION);
    snprintf(s->settings, sizeof s->settings, "%s", o->settings);
    cmt_analysis_peek_rank(trace, &s->order_rank);
    struct cmt_built_report b;
    /* Only what a summary keeps (model/compare.c, model/job.c: the peaks,
     * the holders' own peaks, leaks, growth, failures, IPC, the timeline's
     * cells): no usage view, no forensics, no what-if replay, no phases. */
    struct cmt_trace_build how = {.opt = &o->opt, .no_usage = true, .no_forensics = true, .no_whatif = true,
                                  .no_phases = true, .whatif = o->whatif, .n_whatif = o->n_whatif};
    int status = cmt_report_build_one(trace, &how, &b, &s->process, &s->member);
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
                   const struct cmt_summarize_options *o)
{
    /* one write per line: the workers' messages do not interleave */
    static char line_buf[8192];
    setvbuf(stderr, line_buf, _IOLBF, sizeof line_buf);
    for (;;) {
        size_t i = __atomic_fetch_add(&w->next, 1, __ATOMIC_RELAXED);
        if (i >= n)
            break;
        w->status[i] = summarize_one(traces[i], outs[i], o);
    }
    fflush(NULL);
}

static size_t cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (size_t)n : 1;
}

int cmt_summarize_traces(const char *const *traces, const char *const *out_paths, size_t n,
                         const struct cmt_summarize_options *o)
{
    size_t jobs = o->jobs ? o->jobs : cores();
    if (jobs > n)
        jobs = n;
    int status = CMT_EXIT_OK;
    if (jobs <= 1) {
        for (size_t i = 0; i < n; i++) {
            int st = summarize_one(traces[i], out_paths[i], o);
            if (st != CMT_EXIT_OK)
                status = st;
        }
        return status;
    }
    size_t size = sizeof(struct shared_work) + n * sizeof(int);
    struct shared_work *w = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (w == MAP_FAILED) {
        cmt_cli_error("summarize: cannot share work between processes (mmap: %s); give --jobs 1", strerror(errno));
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
            worker(w, traces, out_paths, n, o);
            _exit(0);
        }
        pids[started] = pid;
    }
    if (started == 0)
        worker(w, traces, out_paths, n, o); /* no process could start: this one does it all */
    for (size_t k = 0; k < started; k++)
        while (waitpid(pids[k], NULL, 0) < 0 && errno == EINTR)
            ;
    for (size_t i = 0; i < n; i++) {
        if (w->status[i] < 0) {
            cmt_cli_error("summarize: %s: the process summarising it ended before it was done (killed, or out of "
                          "memory); summarise it again with --jobs 1",
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

static int summarize_main(char **traces, size_t n, const struct cmt_summarize_options *o)
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
    if (o->output && (n > 1 || is_dir(o->output))) {
        dir = o->output;
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
        if (o->output && !dir)
            snprintf(outs[i], sizeof outs[i], "%s", o->output);
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
        status = cmt_summarize_traces((const char *const *)traces, out_ptrs, n, o);
    free(outs);
    free(out_ptrs);
    return status;
}

enum { OPT_JOBS = CMT_CLI_OWN_FIRST };

static const struct option summarize_options[] = {
    {"jobs", required_argument, NULL, OPT_JOBS},
};

/* summarize's own option, --jobs N (the shared ones: command_options.c).
 * No short form: -j is --json in every command that has it (docs/cli.md). */
static int summarize_option(void *ctx, int value, const char *arg, const char *option)
{
    struct cmt_summarize_options *o = ctx;
    (void)value;
    (void)option;
    if (cmt_cli_parse_count(arg, &o->jobs) != 0 || o->jobs == 0 || o->jobs > 1024) {
        cmt_cli_error("summarize: --jobs needs a count from 1 to 1024, got '%s'", arg);
        return -1;
    }
    return 0;
}

static const struct cmt_cli_command summarize_command = {
    .name = "summarize",
    .view = CMT_VIEW_JOB,
    .takes = CMT_TAKES_OUTPUT | CMT_TAKES_SYMBOLS | CMT_TAKES_AT | CMT_TAKES_INCLUDE_CACHED | CMT_TAKES_ALLOWANCE |
             CMT_TAKES_SUPPRESSIONS,
    .own = summarize_options,
    .n_own = sizeof summarize_options / sizeof summarize_options[0],
    .own_option = summarize_option,
    .usage = summarize_usage,
};

/* Parses options into o; returns -1 when done with an exit status in
 * *status (help, errors), else the index of the first trace. */
static int parse_options(int argc, char **argv, struct cmt_summarize_options *o, int *status)
{
    struct cmt_cli_options *common = calloc(1, sizeof *common);
    if (!common) {
        cmt_cli_error("summarize: out of memory; give fewer traces at a time, or free memory");
        *status = CMT_EXIT_USAGE;
        return -1;
    }
    /* -j N was --jobs here once; it is --json elsewhere: said, not a bare "unknown option" */
    for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
        if (!strncmp(argv[i], "-j", 2)) {
            cmt_cli_error("summarize: -j is not --jobs: give the number of traces summarised at once as --jobs N "
                          "(-j means --json in the other commands)");
            cmt_cli_try_help("summarize");
            free(common);
            *status = CMT_EXIT_USAGE;
            return -1;
        }
    int first = cmt_cli_parse(&summarize_command, argc, argv, common, o, status);
    if (first >= 0 && cmt_cli_some_traces("summarize", argc, first) != 0) {
        *status = CMT_EXIT_USAGE;
        first = -1;
    }
    if (first >= 0) {
        o->output = common->output;
        o->opt.at_ns = common->at_ns;
        o->opt.at_set = common->at_ns != 0;
        o->opt.include_cached = common->include_cached;
        o->opt.context_allowance = common->context_allowance;
        o->opt.context_allowance_set = common->context_allowance_set;
        for (size_t i = 0; i < common->n_suppression_files && i < CMT_SUMMARIZE_MAX_SUPPRESSION_FILES; i++)
            o->suppression_files[o->n_suppression_files++] = common->suppression_files[i];
        o->no_default_suppressions = common->no_default_suppressions;
        o->symbols = common->symbols;
    }
    free(common);
    return first;
}

int cmt_cmd_summarize(int argc, char **argv)
{
    struct cmt_summarize_options *o = malloc(sizeof *o);
    if (!o) {
        cmt_cli_error("summarize: out of memory; give fewer traces at a time, or free memory");
        return CMT_EXIT_USAGE;
    }
    cmt_summarize_options_init(o);
    int status;
    int first = parse_options(argc, argv, o, &status);
    if (first >= 0)
        status = cmt_summarize_options_ready(o, "summarize") != 0
                     ? CMT_EXIT_USAGE
                     : summarize_main(argv + first, (size_t)(argc - first), o);
    cmt_summarize_options_free(o);
    free(o);
    return status;
}
