/* SPDX-License-Identifier: MIT */
/* cumemtrace run [-o TEMPLATE] [--check [CHECK OPTIONS]] [--] PROGRAM [ARGS...]
 *
 * Runs PROGRAM with libcumemtrace.so preloaded and returns its status. The
 * program keeps our stdin/stdout/stderr, environment (plus LD_PRELOAD and the
 * CUMEMTRACE_* settings) and process group; children it starts inherit the
 * preload and write traces of their own.
 *
 * With --check, every process of the run appends its trace path to a
 * manifest file (CUMEMTRACE_MANIFEST) and the traces it lists are checked
 * once PROGRAM has exited. PROGRAM's own failure wins: its status is passed
 * on and the check only reports; when PROGRAM succeeds, the check's status is
 * ours (docs/check.md, "Exit status"). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "check_options.h"
#include "cli.h"
#include "env_splice.h"
#include "manifest.h"
#include "output_dir.h"
#include "sanitizer_runtime.h"
#include "summarize.h"
#include "summary_file.h"
#include "top.h"
#include "top_cli.h"
#include "tui.h"

#ifndef CMT_SHIM_INSTALL_RELPATH
#define CMT_SHIM_INSTALL_RELPATH "../lib/cumemtrace/libcumemtrace.so"
#endif

static volatile sig_atomic_t child_pid;
/* run --live: the program is in a process group of its own (the terminal's
 * ^C reaches the view only), so every signal is forwarded. */
static volatile sig_atomic_t forward_all;

static void run_usage(FILE *out)
{
    fputs("usage: cumemtrace run [-o TEMPLATE] [--summary] [--check [CHECK OPTIONS]] [--] PROGRAM [ARGS...]\n"
          "       cumemtrace run [-o TEMPLATE] --live [--live-output FILE] [--interval S] [--] PROGRAM [ARGS...]\n"
          "\n"
          "Runs PROGRAM with the profiler preloaded; every process it starts that\n"
          "allocates CUDA memory writes its own trace.\n"
          "\n"
          "  -o, --output TEMPLATE  trace path template (CUMEMTRACE_OUTPUT): %p pid, %h host,\n"
          "                         %t start time, %r rank; default cumemtrace.%p.bin\n"
          "  --check                when PROGRAM has exited, check the traces of every\n"
          "                         process it ran, as `cumemtrace check` does; the report\n"
          "                         goes to stderr unless --report-file is given\n"
          "  --summary              when PROGRAM has exited, sum up each trace it wrote for\n"
          "                         the job view beside it (TRACE with .bin replaced by\n"
          "                         .cmtsum), as `cumemtrace summarize` does, in parallel\n"
          "  --live                 show the run live (`cumemtrace top` over its traces) while\n"
          "                         PROGRAM runs; PROGRAM's output goes to a file, its last\n"
          "                         line shown under the view; q closes the view\n"
          "  --live-output FILE     where PROGRAM's stdout and stderr go with --live\n"
          "                         (default cumemtrace-live.PID.out, PID this command's)\n"
          "  --interval SECONDS     with --live: refresh every SECONDS (default 0.5)\n"
          "  --no-color             with --live: no colours (also when NO_COLOR is set)\n"
          "\n",
          out);
    cmt_check_options_help(out, true);
    fputs("\n"
          "Exit status: PROGRAM's own when it fails (a program killed by a signal is\n"
          "reported the same way), even with --check; when PROGRAM succeeds, --check's:\n"
          "0 clean, 1 (or --error-exitcode) a limit exceeded, 2 a trace that could not be\n"
          "checked or written. 2 also when the options are wrong or the trace directory\n"
          "cannot take a trace (PROGRAM does not run then); 126 or 127 when PROGRAM cannot\n"
          "be started. The last line on stderr says which applied.\n",
          out);
}

static bool is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The shim: CUMEMTRACE_SHIM if set; else next to this binary as installed;
 * else in the build tree (build/analyzer/cumemtrace -> build/preload/). */
static int find_shim(char *out, size_t len)
{
    const char *env = getenv("CUMEMTRACE_SHIM");
    if (env && *env) {
        if (!is_file(env)) {
            cmt_cli_error("run: CUMEMTRACE_SHIM=%s is not a file: set it to the path of libcumemtrace.so, or unset it",
                          env);
            return -1;
        }
        snprintf(out, len, "%s", env);
        return 0;
    }
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        cmt_cli_error("run: cannot read /proc/self/exe to find libcumemtrace.so beside it: %s; set CUMEMTRACE_SHIM to "
                      "its path", strerror(errno));
        return -1;
    }
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash)
        *slash = '\0';
    const char *candidates[] = {CMT_SHIM_INSTALL_RELPATH, "../preload/libcumemtrace.so"};
    for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++) {
        char path[PATH_MAX + 128];
        snprintf(path, sizeof path, "%s/%s", self, candidates[i]);
        char real[PATH_MAX];
        if (is_file(path) && realpath(path, real)) {
            snprintf(out, len, "%s", real);
            return 0;
        }
    }
    cmt_cli_error("run: cannot find libcumemtrace.so next to %s (looked in %s and ../preload); set "
                  "CUMEMTRACE_SHIM to its path",
                  self, CMT_SHIM_INSTALL_RELPATH);
    return -1;
}

/* LD_PRELOAD with the shim spliced in (env_splice.h). */
static int set_preload(const char *shim, const char *runtime)
{
    char *v;
    if (cmt_preload_splice(getenv("LD_PRELOAD"), shim, runtime, &v) != 0)
        return -1;
    if (!v)
        return 0;
    int rc = setenv("LD_PRELOAD", v, 1);
    free(v);
    return rc;
}

static void forward_signal(int sig, siginfo_t *info, void *uctx)
{
    (void)uctx;
    /* Signals the terminal sends (^C, ^\) already reach the program: it is in
     * our process group. Only forward what someone sent to us by pid. */
    if (info && info->si_code > 0 && !forward_all)
        return;
    if (child_pid > 0)
        kill((pid_t)child_pid, sig);
}

static void install_forwarding(void)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH, SIGCONT};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = forward_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaction(sigs[i], &sa, NULL);
}

/* Ends this process the way the child ended. */
static int pass_status(int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        /* The program already dumped core if it was going to; we must not. */
        struct rlimit no_core = {0, 0};
        setrlimit(RLIMIT_CORE, &no_core);
        signal(sig, SIG_DFL);
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, sig);
        sigprocmask(SIG_UNBLOCK, &set, NULL);
        raise(sig);
        return 128 + sig; /* a signal that does not terminate by default */
    }
    return CMT_EXIT_USAGE;
}

/* CUMEMTRACE_OUTPUT made absolute, so every process writes where the
 * manifest's readers (us) look, whatever directory it changed to. */
static int absolute_template(const char *output)
{
    char cwd[PATH_MAX];
    const char *t = output ? output : getenv("CUMEMTRACE_OUTPUT");
    if ((!t || t[0] != '/') && !getcwd(cwd, sizeof cwd))
        return -1;
    char *abs = cmt_output_absolute(t, cwd);
    if (!abs)
        return -1;
    int rc = setenv("CUMEMTRACE_OUTPUT", abs, 1);
    free(abs);
    return rc;
}

/* A fresh, empty manifest in $TMPDIR; its path goes to CUMEMTRACE_MANIFEST. */
static int create_manifest(char *path, size_t len)
{
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir)
        dir = "/tmp";
    snprintf(path, len, "%s/cumemtrace-manifest.XXXXXX", dir);
    int fd = mkostemp(path, O_CLOEXEC);
    if (fd < 0) {
        cmt_cli_error("run: cannot create a manifest file in %s: %s; set TMPDIR to a writable directory", dir,
                      strerror(errno));
        return -1;
    }
    close(fd);
    if (setenv("CUMEMTRACE_MANIFEST", path, 1) != 0) {
        cmt_cli_error("run: cannot set the program's environment (setenv: %s); free memory and run again",
                      strerror(errno));
        unlink(path);
        return -1;
    }
    return 0;
}

static int run_program(char **argv, int *status)
{
    fflush(NULL);
    install_forwarding();
    pid_t pid = fork();
    if (pid < 0) {
        cmt_cli_error("run: cannot start a process (fork: %s): raise `ulimit -u`, or free memory", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        execvp(argv[0], argv);
        cmt_cli_error("run: cannot run %s: %s; check its name (PATH is searched) and that it is executable",
                      argv[0], strerror(errno));
        _exit(errno == ENOENT ? 127 : 126);
    }
    child_pid = pid;
    while (waitpid(pid, status, 0) < 0) {
        if (errno != EINTR) {
            cmt_cli_error("run: cannot wait for the program (waitpid: %s); its traces are left as written",
                          strerror(errno));
            return -1;
        }
    }
    child_pid = 0;
    return 0;
}

/* Checks the traces the run wrote and decides how `run` exits. */
static int check_traces(struct cmt_check *chk, const struct cmt_check_options *o, const char *manifest_path,
                        char **argv, int argc, int wait_status)
{
    struct cmt_manifest manifest;
    bool oom = cmt_manifest_read(manifest_path, &manifest) != 0;
    unlink(manifest_path);
    const char *prog = cmt_basename(argv[0]);
    int check_status = CMT_EXIT_USAGE;
    size_t n = 0; /* traces written */
    for (size_t i = 0; i < manifest.n && !oom; i++) {
        const struct cmt_manifest_entry *e = &manifest.entries[i];
        if (e->kind == CMT_MANIFEST_TRACE) {
            n++;
            oom = cmt_check_add_trace(chk, e->path) != 0;
        } else if (e->kind == CMT_MANIFEST_CREATE) {
            oom = cmt_check_add_unwritten(chk, e->path, e->pid, e->reason) != 0;
        }
    }
    for (size_t i = 0; i < manifest.n && !oom; i++)
        if (manifest.entries[i].kind == CMT_MANIFEST_STOP)
            oom = cmt_check_note_stop(chk, manifest.entries[i].path, manifest.entries[i].reason) != 0;
    if (oom)
        cmt_cli_error("run: out of memory while checking the traces; check them with `cumemtrace check` on a machine "
                      "with more");
    else
        check_status = cmt_check_status(chk);
    size_t unwritten = chk->n_unwritten;
    if (n == 0 && unwritten == 0) {
        cmt_cli_verdict("run", "no trace was written: %s made no CUDA allocation call, or the profiler "
                        "was not loaded into it (static executables and setuid programs ignore LD_PRELOAD)%s",
                prog, o->require_trace ? "; --require-trace makes this an error" : "");
        if (o->require_trace)
            check_status = CMT_EXIT_USAGE;
    }
    struct cmt_check_program program = {
        .argv = argv,
        .argc = argc,
        .exited = WIFEXITED(wait_status),
        .exit_status = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 0,
        .signal = WIFSIGNALED(wait_status) ? WTERMSIG(wait_status) : 0,
    };
    bool program_failed = !WIFEXITED(wait_status) || WEXITSTATUS(wait_status) != 0;
    program.status_passed_through = program_failed;
    program.final_status = program_failed ? (WIFEXITED(wait_status) ? WEXITSTATUS(wait_status)
                                                                    : 128 + WTERMSIG(wait_status))
                                          : check_status;
    chk->program = &program;
    /* A requested report file is always written (a CI step may expect it),
     * even when no process wrote a trace. */
    if (!oom && (chk->n_traces || o->report_file) && cmt_check_write_report(chk, "run", stderr, stderr) != 0 &&
        !program_failed)
        check_status = program.final_status = CMT_EXIT_USAGE;
    chk->program = NULL;

    if (program_failed && WIFEXITED(wait_status))
        cmt_cli_verdict("run", "%s exited with status %d; exiting with that status, whatever the check found",
                prog, WEXITSTATUS(wait_status));
    else if (program_failed)
        cmt_cli_verdict("run", "%s was killed by signal %d (%s); ending the same way, whatever the check found",
                prog, WTERMSIG(wait_status), strsignal(WTERMSIG(wait_status)));
    else if (check_status == o->violation_status && chk->n_fail && !chk->n_unwritten && !chk->n_damaged)
        cmt_cli_verdict("run", "%s exited with status 0; exiting with status %d: the check found violations",
                prog, check_status);
    else if (check_status != 0)
        cmt_cli_verdict("run", "%s exited with status 0; exiting with status %d: %s", prog, check_status,
                        unwritten ? "a trace could not be written"
                        : oom || n ? "a trace could not be checked"
                                   : "no trace was written");
    fflush(stderr);

    /* A run that passed leaves nothing behind; one that did not keeps its
     * traces (their paths are in the report) to be looked at. */
    if (!program_failed && check_status == 0 && !o->keep_traces)
        for (size_t i = 0; i < manifest.n; i++)
            if (manifest.entries[i].kind == CMT_MANIFEST_TRACE)
                unlink(manifest.entries[i].path);
    cmt_manifest_free(&manifest);
    return program_failed ? -1 : check_status;
}

/* run --summary: each trace of the manifest summed up beside it, as
 * `cumemtrace summarize TRACE` does. Returns the exit status (0, or 2 when
 * one could not be). */
static int summarize_manifest(const char *manifest_path)
{
    struct cmt_manifest manifest;
    if (cmt_manifest_read(manifest_path, &manifest) != 0) {
        cmt_cli_error("run: out of memory while reading which traces were written; summarise them with "
                      "`cumemtrace summarize`");
        return CMT_EXIT_USAGE;
    }
    size_t n = 0;
    for (size_t i = 0; i < manifest.n; i++)
        n += manifest.entries[i].kind == CMT_MANIFEST_TRACE;
    const char **traces = calloc(n ? n : 1, sizeof *traces);
    char **outs = calloc(n ? n : 1, sizeof *outs);
    int status = CMT_EXIT_OK;
    if (!traces || !outs) {
        cmt_cli_error("run: out of memory while reading which traces were written; summarise them with "
                      "`cumemtrace summarize`");
        status = CMT_EXIT_USAGE;
    }
    size_t k = 0;
    for (size_t i = 0; i < manifest.n && status == CMT_EXIT_OK; i++) {
        if (manifest.entries[i].kind != CMT_MANIFEST_TRACE)
            continue;
        traces[k] = manifest.entries[i].path;
        outs[k] = malloc(PATH_MAX);
        if (!outs[k] || cmt_summary_path_for(traces[k], NULL, outs[k], PATH_MAX) != 0) {
            cmt_cli_error("summarize: the summary's path for %s is too long; give -o a shorter directory", traces[k]);
            status = CMT_EXIT_USAGE;
        }
        k++;
    }
    struct cmt_summarize_options *o = status == CMT_EXIT_OK && n ? malloc(sizeof *o) : NULL;
    if (o) {
        cmt_summarize_options_init(o);
        status = cmt_summarize_options_ready(o, "run") != 0
                     ? CMT_EXIT_USAGE
                     : cmt_summarize_traces(traces, (const char *const *)outs, n, o);
        cmt_summarize_options_free(o);
        free(o);
    } else if (status == CMT_EXIT_OK && n) {
        cmt_cli_error("run: out of memory while reading which traces were written; summarise them with "
                      "`cumemtrace summarize`");
        status = CMT_EXIT_USAGE;
    }
    for (size_t i = 0; outs && i < k; i++)
        free(outs[i]);
    free(outs);
    free(traces);
    cmt_manifest_free(&manifest);
    return status;
}

/* Refuses a trace directory that cannot take a trace before the program
 * runs (output_dir.h): a typo in -o must not cost a run, nor pass a gate. */
static int check_output_dir(const char *output)
{
    const char *off = getenv("CUMEMTRACE_DISABLE");
    if (off && *off && strcmp(off, "0") != 0)
        return 0; /* tracing is off: nothing will be written */
    char dir[PATH_MAX], why[128];
    if (cmt_output_dir_check(output ? output : getenv("CUMEMTRACE_OUTPUT"), dir, sizeof dir, why, sizeof why) == 0)
        return 0;
    cmt_cli_error("run: cannot write traces in %s: %s; create it, or give -o a path in a writable directory with "
                  "free space",
                  dir, why);
    return -1;
}

/* ---- run --live ------------------------------------------------------------------ */

struct live_run {
    pid_t pid;
    bool ended;
    int status;
    const char *manifest;
    size_t seen; /* manifest entries already added */
};

/* Before each refresh: the program's end, the traces its processes listed. */
static void live_tick(void *ctx, struct cmt_top *t)
{
    struct live_run *l = ctx;
    int status;
    if (!l->ended && waitpid(l->pid, &status, WNOHANG) == l->pid) {
        l->ended = true;
        l->status = status;
        child_pid = 0;
    }
    struct cmt_manifest m;
    if (cmt_manifest_read(l->manifest, &m) == 0) {
        for (size_t i = l->seen; i < m.n; i++)
            if (m.entries[i].kind == CMT_MANIFEST_TRACE)
                cmt_top_add_trace(t, m.entries[i].path);
        l->seen = m.n;
    }
    cmt_manifest_free(&m);
    /* after the traces: the program's own trace learns how it ended */
    if (l->ended)
        cmt_top_set_wait_status(t, (uint64_t)l->pid, l->status);
}

static int run_live(char **argv, const char *output_file, unsigned interval_ms, bool no_color)
{
    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
        cmt_cli_error("run: --live needs a terminal for its view: run it in one, or without --live and watch the "
                      "traces with `cumemtrace top --once`");
        return CMT_EXIT_USAGE;
    }
    char default_out[64];
    if (!output_file) {
        snprintf(default_out, sizeof default_out, "cumemtrace-live.%ld.out", (long)getpid());
        output_file = default_out;
    }
    if (!getenv("CUMEMTRACE_QUIET"))
        setenv("CUMEMTRACE_QUIET", "1", 1);
    if (absolute_template(NULL) != 0) {
        cmt_cli_error("run: cannot make the trace path absolute (%s); give -o an absolute path", strerror(errno));
        return CMT_EXIT_USAGE;
    }
    int out = open(output_file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0644);
    if (out < 0) {
        cmt_cli_error("run: cannot write the program's output to %s: %s; give --live-output a writable path",
                      output_file, strerror(errno));
        return CMT_EXIT_USAGE;
    }
    char manifest[PATH_MAX];
    if (create_manifest(manifest, sizeof manifest) != 0) {
        close(out);
        return CMT_EXIT_USAGE;
    }
    struct cmt_top *t;
    if (cmt_top_new(&t) != 0) {
        cmt_cli_error("run: out of memory; free memory");
        unlink(manifest);
        close(out);
        return CMT_EXIT_USAGE;
    }
    fflush(NULL);
    forward_all = 1;
    install_forwarding();
    pid_t pid = fork();
    if (pid < 0) {
        cmt_cli_error("run: cannot start a process (fork: %s): raise `ulimit -u`, or free memory", strerror(errno));
        cmt_top_free(t);
        unlink(manifest);
        close(out);
        return CMT_EXIT_USAGE;
    }
    if (pid == 0) {
        /* its own process group: the view's keys and ^C are the view's */
        setpgid(0, 0);
        int in = open("/dev/null", O_RDONLY);
        if (in >= 0)
            dup2(in, STDIN_FILENO);
        dup2(out, STDOUT_FILENO);
        dup2(out, STDERR_FILENO);
        execvp(argv[0], argv);
        cmt_cli_error("run: cannot run %s: %s; check its name (PATH is searched) and that it is executable",
                      argv[0], strerror(errno));
        _exit(errno == ENOENT ? 127 : 126);
    }
    close(out);
    child_pid = pid;
    struct live_run l = {.pid = pid, .manifest = manifest};
    struct cmt_tui_options o = {.interval_ms = interval_ms, .color = cmt_top_color_wanted(no_color),
                                .sort = CMT_TOP_SORT_LIVE, .view = CMT_TOP_VIEW_SITES, .on_tick = live_tick,
                                .ctx = &l, .program_output = output_file};
    char err[600];
    if (cmt_tui_run(t, &o, err, sizeof err) != 0)
        cmt_cli_error("run: %s", err);
    const char *prog = cmt_basename(argv[0]);
    if (!l.ended) {
        cmt_cli_verdict("run", "the view closed; waiting for %s (pid %ld) to end: ^C interrupts it, its output "
                        "goes to %s", prog, (long)pid, output_file);
        while (waitpid(pid, &l.status, 0) < 0) {
            if (errno != EINTR) {
                cmt_cli_error("run: cannot wait for the program (waitpid: %s); its traces are left as written",
                              strerror(errno));
                cmt_top_free(t);
                unlink(manifest);
                return CMT_EXIT_USAGE;
            }
        }
        child_pid = 0;
    }
    cmt_top_free(t);
    unlink(manifest);
    if (WIFEXITED(l.status))
        cmt_cli_verdict("run", "%s exited with status %d; its output is in %s", prog, WEXITSTATUS(l.status),
                        output_file);
    else if (WIFSIGNALED(l.status))
        cmt_cli_verdict("run", "%s was killed by signal %d (%s); its output is in %s", prog, WTERMSIG(l.status),
                        strsignal(WTERMSIG(l.status)), output_file);
    fflush(stderr);
    return pass_status(l.status);
}

int cmt_cmd_run(int argc, char **argv)
{
    enum { OPT_CHECK = 1000, OPT_SUMMARY, OPT_LIVE, OPT_LIVE_OUTPUT, OPT_INTERVAL, OPT_NO_COLOR };
    struct option longopts[CMT_CHECK_LONGOPTS_MAX + 9];
    longopts[0] = (struct option){"output", required_argument, NULL, 'o'};
    longopts[1] = (struct option){"help", no_argument, NULL, 'h'};
    longopts[2] = (struct option){"check", no_argument, NULL, OPT_CHECK};
    longopts[3] = (struct option){"summary", no_argument, NULL, OPT_SUMMARY};
    longopts[4] = (struct option){"live", no_argument, NULL, OPT_LIVE};
    longopts[5] = (struct option){"live-output", required_argument, NULL, OPT_LIVE_OUTPUT};
    longopts[6] = (struct option){"interval", required_argument, NULL, OPT_INTERVAL};
    longopts[7] = (struct option){"no-color", no_argument, NULL, OPT_NO_COLOR};
    size_t n_opts = 8 + cmt_check_all_longopts(longopts + 8);
    longopts[n_opts] = (struct option){NULL, 0, NULL, 0};
    const char *output = NULL, *live_output = NULL;
    const char *first_live_option = NULL;
    bool check = false, summary = false, live = false, no_color = false;
    unsigned interval_ms = 500;
    const char *first_check_option = NULL;
    struct cmt_check_options copt;
    cmt_check_options_init(&copt);
    optind = 1;
    int c, index;
    /* "+": stop at the first non-option, so the program's own options are
     * never taken for ours. */
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+:o:h", longopts, &index)) != -1) {
        if (c == 'o') {
            output = optarg;
        } else if (c == 'h') {
            run_usage(stdout);
            return CMT_EXIT_OK;
        } else if (c == OPT_CHECK) {
            check = true;
        } else if (c == OPT_SUMMARY) {
            summary = true;
        } else if (c == OPT_LIVE) {
            live = true;
        } else if (c == OPT_LIVE_OUTPUT || c == OPT_INTERVAL || c == OPT_NO_COLOR) {
            if (!first_live_option)
                first_live_option = longopts[index].name;
            if (c == OPT_LIVE_OUTPUT) {
                live_output = optarg;
            } else if (c == OPT_NO_COLOR) {
                no_color = true;
            } else if (cmt_top_parse_interval(optarg, &interval_ms) != 0) {
                cmt_cli_error("run: --interval takes seconds from 0.1 to 60, got '%s'", optarg);
                return CMT_EXIT_USAGE;
            }
        } else if (cmt_check_is_option(c)) {
            if (!first_check_option)
                first_check_option = longopts[index].name;
            if (cmt_check_parse_option(&copt, c, optarg, "run") != 0)
                return CMT_EXIT_USAGE;
        } else {
            cmt_cli_option_error("run", c, argv);
            cmt_cli_try_help("run");
            return CMT_EXIT_USAGE;
        }
    }
    if (first_live_option && !live) {
        cmt_cli_error("run: --%s is an option of --live: add --live", first_live_option);
        return CMT_EXIT_USAGE;
    }
    if (live && check) {
        cmt_cli_error("run: --live and --check do not go together: watch the run live, then check its traces "
                      "with `cumemtrace check`");
        return CMT_EXIT_USAGE;
    }
    if (live && summary) {
        cmt_cli_error("run: --live and --summary do not go together: watch the run live, then sum its traces up "
                      "with `cumemtrace summarize`");
        return CMT_EXIT_USAGE;
    }
    if (first_check_option && !check) {
        cmt_cli_error("run: --%s is an option of --check: add --check", first_check_option);
        return CMT_EXIT_USAGE;
    }
    if (optind >= argc) {
        cmt_cli_error("run: no program given");
        cmt_cli_try_help("run");
        return CMT_EXIT_USAGE;
    }
    if (check && cmt_check_validate_options(&copt, "run", true) != 0)
        return CMT_EXIT_USAGE;
    char shim[PATH_MAX];
    if (find_shim(shim, sizeof shim) != 0)
        return CMT_EXIT_USAGE;
    /* NVTX ranges reach the shim as an NVTX tool (docs/report.md, "Phases and
     * steps"); a tool already named there (Nsight Systems) keeps its place,
     * and the shim says that NVTX is not recorded. */
    const char *nvtx = cmt_nvtx_injection(getenv("NVTX_INJECTION64_PATH"), shim);
    if (nvtx && setenv("NVTX_INJECTION64_PATH", nvtx, 1) != 0) {
        cmt_cli_error("run: cannot set the program's environment (setenv: %s); free memory and run again",
                      strerror(errno));
        return CMT_EXIT_USAGE;
    }
    char runtime[256];
    bool needs_runtime = cmt_sanitizer_runtime_needed(argv[optind], runtime, sizeof runtime);
    if (set_preload(shim, needs_runtime ? runtime : NULL) != 0 ||
        (output && setenv("CUMEMTRACE_OUTPUT", output, 1) != 0)) {
        cmt_cli_error("run: cannot set the program's environment (setenv: %s); free memory and run again",
                      strerror(errno));
        return CMT_EXIT_USAGE;
    }
    if (check_output_dir(output) != 0)
        return CMT_EXIT_USAGE;
    int status;
    if (live)
        return run_live(argv + optind, live_output, interval_ms, no_color);
    if (!check && !summary) {
        if (run_program(argv + optind, &status) != 0)
            return CMT_EXIT_USAGE;
        return pass_status(status);
    }
    if (!check) {
        char manifest[PATH_MAX];
        if (absolute_template(output) != 0) {
            cmt_cli_error("run: cannot make the trace path absolute (%s); give -o an absolute path", strerror(errno));
            return CMT_EXIT_USAGE;
        }
        if (create_manifest(manifest, sizeof manifest) != 0)
            return CMT_EXIT_USAGE;
        if (run_program(argv + optind, &status) != 0) {
            unlink(manifest);
            return CMT_EXIT_USAGE;
        }
        int sum_status = summarize_manifest(manifest);
        unlink(manifest);
        bool program_failed = !WIFEXITED(status) || WEXITSTATUS(status) != 0;
        if (program_failed || sum_status == CMT_EXIT_OK)
            return pass_status(status);
        cmt_cli_verdict("run", "%s exited with status 0; exiting with status %d: %s", cmt_basename(argv[optind]),
                        sum_status, "a trace could not be summarised");
        return sum_status;
    }

    /* Everything that can be wrong with the check's set-up (suppressions,
     * baselines) is found before the program runs. */
    struct cmt_check chk;
    char err[1024], manifest[PATH_MAX];
    if (cmt_check_init(&chk, &copt, err, sizeof err) != 0) {
        cmt_cli_error("run: %s", err);
        cmt_check_free(&chk);
        return CMT_EXIT_USAGE;
    }
    /* The report names every trace; one "writing trace to" line per process
     * would only add noise to test logs. */
    if (!getenv("CUMEMTRACE_QUIET"))
        setenv("CUMEMTRACE_QUIET", "1", 1);
    if (absolute_template(output) != 0) {
        cmt_cli_error("run: cannot make the trace path absolute (%s); give -o an absolute path", strerror(errno));
        cmt_check_free(&chk);
        return CMT_EXIT_USAGE;
    }
    if (create_manifest(manifest, sizeof manifest) != 0) {
        cmt_check_free(&chk);
        return CMT_EXIT_USAGE;
    }
    if (run_program(argv + optind, &status) != 0) {
        unlink(manifest);
        cmt_check_free(&chk);
        return CMT_EXIT_USAGE;
    }
    /* before the check, which removes the traces of a run that passed */
    int sum_status = summary ? summarize_manifest(manifest) : CMT_EXIT_OK;
    int rc = check_traces(&chk, &copt, manifest, argv + optind, argc - optind, status);
    cmt_check_free(&chk);
    if (rc == CMT_EXIT_OK && sum_status != CMT_EXIT_OK) {
        cmt_cli_verdict("run", "%s exited with status 0; exiting with status %d: %s", cmt_basename(argv[optind]),
                        sum_status, "a trace could not be summarised");
        return sum_status;
    }
    return rc < 0 ? pass_status(status) : rc;
}
