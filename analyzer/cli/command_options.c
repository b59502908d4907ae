/* SPDX-License-Identifier: MIT */
/* The options the trace commands share, parsed once (command_options.h),
 * and their output: -o FILE or the standard output. */
#include "command_options.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "size_parse.h"
#include "symbol_options.h"
#include "time_arg.h"

enum {
    OPT_FORMAT = 500,
    OPT_CSV,
    OPT_TOP,
    OPT_MAX_FRAMES,
    OPT_ALLOWANCE,
    OPT_AT,
    OPT_INCLUDE_CACHED,
    OPT_SUPPRESSIONS,
    OPT_NO_DEFAULT_SUPPRESSIONS,
    OPT_MAX_MEMORY,
};

/* Each shared option, with what makes a command take it. */
static const struct shared_option {
    unsigned takes;
    struct option opt;
} shared[] = {
    {CMT_TAKES_JSON, {"json", no_argument, NULL, 'j'}},
    {CMT_TAKES_CSV, {"csv", no_argument, NULL, OPT_CSV}},
    {CMT_TAKES_FORMAT, {"format", required_argument, NULL, OPT_FORMAT}},
    {CMT_TAKES_OUTPUT, {"output", required_argument, NULL, 'o'}},
    {CMT_TAKES_AT, {"at", required_argument, NULL, OPT_AT}},
    {CMT_TAKES_TOP, {"top", required_argument, NULL, OPT_TOP}},
    {CMT_TAKES_MAX_FRAMES, {"max-frames", required_argument, NULL, OPT_MAX_FRAMES}},
    {CMT_TAKES_INCLUDE_CACHED, {"include-cached", no_argument, NULL, OPT_INCLUDE_CACHED}},
    {CMT_TAKES_ALLOWANCE, {"context-allowance", required_argument, NULL, OPT_ALLOWANCE}},
    {CMT_TAKES_SUPPRESSIONS, {"suppressions", required_argument, NULL, OPT_SUPPRESSIONS}},
    {CMT_TAKES_SUPPRESSIONS, {"no-default-suppressions", no_argument, NULL, OPT_NO_DEFAULT_SUPPRESSIONS}},
    {CMT_TAKES_MAX_MEMORY, {"max-memory", required_argument, NULL, OPT_MAX_MEMORY}},
};

#define LONGOPTS_MAX 96

/* One shared option's value applied. Returns 0, or -1 after saying why. */
static int apply_shared(const struct cmt_cli_command *c, struct cmt_cli_options *o, int value, const char *arg)
{
    const char *cmd = c->name;
    switch (value) {
    case 'j':
        return cmt_cli_format_option(cmd, c->view, &o->format, "json", "--json");
    case OPT_CSV:
        return cmt_cli_format_option(cmd, c->view, &o->format, "csv", "--csv");
    case OPT_FORMAT:
        return cmt_cli_format_option(cmd, c->view, &o->format, arg, NULL);
    case 'o':
        o->output = arg;
        return 0;
    case OPT_AT:
        if (cmt_parse_time_arg(arg, &o->at_ns) != 0 || o->at_ns == 0) {
            cmt_cli_error("%s: --at needs a time after the start of the trace, such as 2, 1.5s, 250ms, 80us or "
                          "1500000ns; got '%s'",
                          cmd, arg);
            return -1;
        }
        return 0;
    case OPT_TOP:
    case OPT_MAX_FRAMES:
        if (cmt_cli_parse_count(arg, value == OPT_TOP ? &o->top : &o->max_frames) != 0) {
            cmt_cli_error("%s: --%s needs a count, got '%s'", cmd, value == OPT_TOP ? "top" : "max-frames", arg);
            return -1;
        }
        /* one meaning on every command (docs/cli.md): --top 0 lists every row */
        if (value == OPT_TOP && o->top == 0)
            o->top = SIZE_MAX;
        return 0;
    case OPT_INCLUDE_CACHED:
        o->include_cached = true;
        return 0;
    case OPT_ALLOWANCE:
        if (cmt_parse_size(arg, &o->context_allowance) != 0) {
            cmt_cli_error("%s: --context-allowance needs a size such as 512MiB or 0, got '%s'", cmd, arg);
            return -1;
        }
        o->context_allowance_set = true;
        return 0;
    case OPT_SUPPRESSIONS:
        if (o->n_suppression_files == CMT_CLI_MAX_FILES) {
            cmt_cli_error("%s: at most %d %s options", cmd, CMT_CLI_MAX_FILES, "--suppressions");
            return -1;
        }
        o->suppression_files[o->n_suppression_files++] = arg;
        return 0;
    case OPT_NO_DEFAULT_SUPPRESSIONS:
        o->no_default_suppressions = true;
        return 0;
    case OPT_MAX_MEMORY:
        return cmt_memory_option(cmd, arg);
    default:
        return cmt_symbol_parse(cmd, value, arg, &o->symbols);
    }
}

static bool is_shared(const struct cmt_cli_command *c, int value)
{
    for (size_t i = 0; i < sizeof shared / sizeof shared[0]; i++)
        if ((c->takes & shared[i].takes) && shared[i].opt.val == value)
            return true;
    return (c->takes & CMT_TAKES_SYMBOLS) && cmt_symbol_is_option(value);
}

int cmt_cli_parse(const struct cmt_cli_command *c, int argc, char **argv, struct cmt_cli_options *o, void *ctx,
                  int *status)
{
    struct option longopts[LONGOPTS_MAX];
    size_t n = 0;
    for (size_t i = 0; i < c->n_own && n < LONGOPTS_MAX - 1; i++)
        longopts[n++] = c->own[i];
    for (size_t i = 0; i < sizeof shared / sizeof shared[0]; i++)
        if (c->takes & shared[i].takes)
            longopts[n++] = shared[i].opt;
    if (c->takes & CMT_TAKES_SYMBOLS)
        cmt_symbol_longopts(longopts, &n);
    longopts[n++] = (struct option){"help", no_argument, NULL, 'h'};
    longopts[n] = (struct option){NULL, 0, NULL, 0};
    char shorts[32] = ":h";
    if (c->takes & CMT_TAKES_JSON)
        strcat(shorts, "j");
    if (c->takes & CMT_TAKES_OUTPUT)
        strcat(shorts, "o:");
    if (c->own_shorts && strlen(c->own_shorts) < sizeof shorts - strlen(shorts))
        strcat(shorts, c->own_shorts);
    *status = CMT_EXIT_USAGE;
    optind = 1;
    opterr = 0;
    int value;
    while ((value = getopt_long(argc, argv, shorts, longopts, NULL)) != -1) {
        if (value == 'h') {
            c->usage(stdout);
            *status = CMT_EXIT_OK;
            return -1;
        }
        if (is_shared(c, value)) {
            if (apply_shared(c, o, value, optarg) != 0)
                return -1;
            continue;
        }
        if (value != ':' && value != '?' && c->own_option) {
            const char *name = NULL;
            for (size_t i = 0; i < c->n_own; i++)
                if (c->own[i].val == value)
                    name = c->own[i].name;
            if (name) {
                if (c->own_option(ctx, value, optarg, name) != 0)
                    return -1;
                continue;
            }
        }
        cmt_cli_option_error(c->name, value, argv);
        cmt_cli_try_help(c->name);
        return -1;
    }
    return optind;
}

int cmt_cli_some_traces(const char *cmd, int argc, int first)
{
    if (first < argc)
        return 0;
    cmt_cli_error("%s: no trace given", cmd);
    cmt_cli_try_help(cmd);
    return -1;
}

int cmt_cli_one_trace(const char *cmd, int argc, int first)
{
    if (first == argc - 1)
        return 0;
    if (first == argc)
        cmt_cli_error("%s: no trace given", cmd);
    else
        cmt_cli_error("%s: one trace at a time: run %s once per trace", cmd, cmd);
    cmt_cli_try_help(cmd);
    return -1;
}

/* The -o file being written: a temporary next to it, renamed over it once
 * the output is whole, so that a run that fails leaves no empty or cut file
 * (and an earlier one in place). One at a time: a command writes one. */
static struct {
    FILE *out;
    char *tmp;
} pending;

/* Interrupted (Ctrl-C, kill, a closed terminal) while a temporary is being
 * written, the command removes it and then dies of the signal as it would
 * have: a half-written output never outlives the command under a hidden
 * name. Only signals whose action was the default get a handler, so a
 * caller's choice stands (nohup's ignored SIGHUP; `run`'s forwarding). */
static const int cleanup_signals[] = {SIGINT, SIGTERM, SIGHUP};
#define CLEANUP_SIGNALS (sizeof cleanup_signals / sizeof cleanup_signals[0])
static struct sigaction cleanup_old[CLEANUP_SIGNALS];
static bool cleanup_set[CLEANUP_SIGNALS];
static char *volatile cleanup_tmp; /* what the handler removes */

static void remove_and_die(int sig)
{
    int e = errno;
    char *tmp = cleanup_tmp;
    if (tmp)
        unlink(tmp); /* async-signal-safe */
    errno = e;
    /* SA_RESETHAND made the action the default again; the signal is
     * blocked until this returns, and then ends the process. */
    raise(sig);
}

static void cleanup_on_signals(char *tmp)
{
    cleanup_tmp = tmp;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = remove_and_die;
    sa.sa_flags = SA_RESETHAND;
    sigfillset(&sa.sa_mask);
    for (size_t i = 0; i < CLEANUP_SIGNALS; i++) {
        struct sigaction old;
        cleanup_set[i] = sigaction(cleanup_signals[i], NULL, &old) == 0 && !(old.sa_flags & SA_SIGINFO) &&
                         old.sa_handler == SIG_DFL && sigaction(cleanup_signals[i], &sa, &cleanup_old[i]) == 0;
    }
}

/* The temporary is renamed or removed: the signals' actions as they were. */
static void cleanup_done(void)
{
    for (size_t i = 0; i < CLEANUP_SIGNALS; i++)
        if (cleanup_set[i]) {
            sigaction(cleanup_signals[i], &cleanup_old[i], NULL);
            cleanup_set[i] = false;
        }
    cleanup_tmp = NULL;
}

/* A temporary beside path, with the mode path has (or a new file would
 * get); NULL with errno set when it cannot be made. */
static FILE *open_beside(const char *path, const struct stat *old)
{
    size_t len = strlen(path);
    char *tmp = malloc(len + 16);
    if (!tmp)
        return NULL;
    const char *slash = strrchr(path, '/');
    size_t dir = slash ? (size_t)(slash - path) + 1 : 0;
    /* hidden, so that a listing of the directory meanwhile shows no half file */
    snprintf(tmp, len + 16, "%.*s.%s.XXXXXX", (int)dir, path, path + dir);
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        free(tmp);
        return NULL;
    }
    mode_t mode;
    if (old) {
        mode = old->st_mode & 07777;
    } else {
        mode_t mask = umask(0);
        umask(mask);
        mode = 0666 & ~mask;
    }
    FILE *out = fchmod(fd, mode) == 0 ? fdopen(fd, "w") : NULL;
    if (!out) {
        int e = errno;
        close(fd);
        unlink(tmp);
        free(tmp);
        errno = e;
        return NULL;
    }
    pending.out = out;
    pending.tmp = tmp;
    cleanup_on_signals(tmp);
    return out;
}

FILE *cmt_cli_output_open(const char *cmd, const char *path)
{
    if (!path)
        return stdout;
    struct stat st;
    bool exists = lstat(path, &st) == 0;
    FILE *out;
    if (exists && !S_ISREG(st.st_mode))
        out = fopen(path, "w"); /* a device, a FIFO, a link: written in place */
    else if (!(out = open_beside(path, exists ? &st : NULL)) && exists && (errno == EACCES || errno == EROFS))
        out = fopen(path, "w"); /* a writable file in a directory that is not: in place, as before */
    if (!out)
        cmt_cli_error("%s: cannot create %s: %m; check that its directory exists and is writable", cmd, path);
    return out;
}

/* Forgets the temporary of out, removing it unless keep; the name it had. */
static char *take_pending(FILE *out)
{
    if (!out || out != pending.out)
        return NULL;
    char *tmp = pending.tmp;
    pending.out = NULL;
    pending.tmp = NULL;
    return tmp;
}

void cmt_cli_output_discard(FILE *out)
{
    if (!out || out == stdout)
        return;
    char *tmp = take_pending(out);
    fclose(out);
    if (tmp)
        unlink(tmp);
    cleanup_done();
    free(tmp);
}

int cmt_cli_output_close(const char *cmd, const char *path, FILE *out, bool close, int status)
{
    char *tmp = close ? take_pending(out) : NULL;
    bool failed = fflush(out) != 0 || ferror(out);
    int e = errno;
    if (close && fclose(out) != 0 && !failed) {
        failed = true;
        e = errno;
    }
    if (!failed && tmp && rename(tmp, path) != 0) {
        failed = true;
        e = errno;
    }
    if (tmp && failed)
        unlink(tmp);
    if (tmp)
        cleanup_done(); /* renamed or removed: a later signal finds no name to remove */
    free(tmp);
    if (failed) {
        errno = e;
        cmt_cli_error("%s: writing %s failed: %m; check the free space (df) and `ulimit -f`", cmd,
                      path ? path : "standard output");
        return CMT_EXIT_USAGE;
    }
    return status;
}
