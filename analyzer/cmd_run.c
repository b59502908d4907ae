/* SPDX-License-Identifier: MIT */
/* cumemtrace run [-o TEMPLATE] [--] PROGRAM [ARGS...]
 *
 * Runs PROGRAM with libcumemtrace.so preloaded and returns its status. The
 * program keeps our stdin/stdout/stderr, environment (plus LD_PRELOAD and the
 * CUMEMTRACE_* settings) and process group; children it starts inherit the
 * preload and write traces of their own. */
#include <errno.h>
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

#include "cli.h"

#ifndef CMT_SHIM_INSTALL_RELPATH
#define CMT_SHIM_INSTALL_RELPATH "../lib/cumemtrace/libcumemtrace.so"
#endif

static volatile sig_atomic_t child_pid;

static void run_usage(FILE *out)
{
    fputs("usage: cumemtrace run [-o TEMPLATE] [--] PROGRAM [ARGS...]\n"
          "\n"
          "Runs PROGRAM with the profiler preloaded; every process it starts that\n"
          "allocates CUDA memory writes its own trace.\n"
          "\n"
          "  -o, --output TEMPLATE  trace path template (CUMEMTRACE_OUTPUT): %p pid, %h host,\n"
          "                         %t start time, %r rank; default cumemtrace.%p.bin\n"
          "\n"
          "Exit status: PROGRAM's own (a program killed by a signal is reported the same\n"
          "way); 2 when the options are wrong or PROGRAM cannot be started.\n",
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
            cmt_cli_error("run: CUMEMTRACE_SHIM=%s is not a file", env);
            return -1;
        }
        snprintf(out, len, "%s", env);
        return 0;
    }
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        cmt_cli_error("run: cannot find my own path: %s", strerror(errno));
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

/* True for a sanitizer runtime, which must stay first in LD_PRELOAD. */
static bool is_sanitizer_runtime(const char *entry, size_t len)
{
    static const char *const names[] = {"libasan", "libtsan", "libubsan", "libclang_rt.", "libhwasan"};
    const char *base = entry;
    for (size_t i = 0; i < len; i++)
        if (entry[i] == '/')
            base = entry + i + 1;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if ((size_t)(entry + len - base) >= strlen(names[i]) && !strncmp(base, names[i], strlen(names[i])))
            return true;
    return false;
}

/* LD_PRELOAD with the shim inserted: first, so our hooks shadow cudart's for
 * the program and other preloads still find the real functions behind us;
 * only sanitizer runtimes go ahead of it (they refuse to start otherwise). */
static int set_preload(const char *shim)
{
    const char *old = getenv("LD_PRELOAD");
    if (!old || !*old)
        return setenv("LD_PRELOAD", shim, 1);
    if (strstr(old, shim))
        return 0; /* already there (a nested run) */
    size_t len = strlen(shim) + strlen(old) + 2;
    char *v = malloc(len);
    if (!v)
        return -1;
    size_t n = 0, pos = 0;
    bool placed = false;
    /* Entries are separated by ':' or spaces (ld.so accepts both). */
    while (old[pos]) {
        size_t start = pos;
        while (old[pos] && old[pos] != ':' && old[pos] != ' ')
            pos++;
        size_t elen = pos - start;
        if (elen) {
            if (!placed && !is_sanitizer_runtime(old + start, elen)) {
                n += (size_t)sprintf(v + n, "%s%s", n ? ":" : "", shim);
                placed = true;
            }
            n += (size_t)sprintf(v + n, "%s%.*s", n ? ":" : "", (int)elen, old + start);
        }
        if (old[pos])
            pos++;
    }
    if (!placed)
        n += (size_t)sprintf(v + n, "%s%s", n ? ":" : "", shim);
    int rc = setenv("LD_PRELOAD", v, 1);
    free(v);
    return rc;
}

static void forward_signal(int sig, siginfo_t *info, void *uctx)
{
    (void)uctx;
    /* Signals the terminal sends (^C, ^\) already reach the program: it is in
     * our process group. Only forward what someone sent to us by pid. */
    if (info && info->si_code > 0)
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

int cmt_cmd_run(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *output = NULL;
    optind = 1;
    int c;
    /* "+": stop at the first non-option, so the program's own options are
     * never taken for ours. */
    while ((c = getopt_long(argc, argv, "+o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'o':
            output = optarg;
            break;
        case 'h':
            run_usage(stdout);
            return CMT_EXIT_OK;
        default:
            run_usage(stderr);
            return CMT_EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        cmt_cli_error("run: no program given");
        run_usage(stderr);
        return CMT_EXIT_USAGE;
    }
    char shim[PATH_MAX];
    if (find_shim(shim, sizeof shim) != 0)
        return CMT_EXIT_USAGE;
    if (set_preload(shim) != 0 || (output && setenv("CUMEMTRACE_OUTPUT", output, 1) != 0)) {
        cmt_cli_error("run: cannot set the environment: %s", strerror(errno));
        return CMT_EXIT_USAGE;
    }
    fflush(NULL);
    install_forwarding();
    pid_t pid = fork();
    if (pid < 0) {
        cmt_cli_error("run: fork: %s", strerror(errno));
        return CMT_EXIT_USAGE;
    }
    if (pid == 0) {
        execvp(argv[optind], argv + optind);
        cmt_cli_error("run: cannot run %s: %s", argv[optind], strerror(errno));
        _exit(errno == ENOENT ? 127 : 126);
    }
    child_pid = pid;
    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            cmt_cli_error("run: waitpid: %s", strerror(errno));
            return CMT_EXIT_USAGE;
        }
    }
    child_pid = 0;
    return pass_status(status);
}
