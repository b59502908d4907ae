/* SPDX-License-Identifier: MIT */
/* A command's -o FILE (analyzer/cli/command_options.c) interrupted while
 * its temporary is written: the temporary is removed and the command dies
 * of the signal; FILE is as it was. Each case runs in a forked child that
 * raises the signal itself (synchronously: nothing races), the parent
 * reads how it ended and what the directory holds. */
#include <dirent.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "command_options.h"
#include "test_util.h"

static char dir[] = "/tmp/cmt_output_signal.XXXXXX";
static char out_path[256];

/* The names in dir, sorted, joined by spaces. */
static const char *listing(void)
{
    static char names[1024];
    struct dirent **list;
    int n = scandir(dir, &list, NULL, alphasort);
    CHECK(n >= 0);
    names[0] = '\0';
    for (int i = 0; i < n; i++) {
        if (strcmp(list[i]->d_name, ".") && strcmp(list[i]->d_name, "..")) {
            if (names[0])
                strcat(names, " ");
            strcat(names, list[i]->d_name);
        }
        free(list[i]);
    }
    free(list);
    return names;
}

static const char *contents(void)
{
    static char buf[256];
    FILE *f = fopen(out_path, "r");
    if (!f)
        return "(none)";
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

enum child_plan { RAISE_WHILE_WRITING, IGNORED_WHILE_WRITING, RAISE_AFTER_CLOSE };

/* Runs plan in a child: 0 when it exited with status 0, else the signal
 * it died of. */
static int run_child(enum child_plan plan, int sig)
{
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        if (plan == IGNORED_WHILE_WRITING)
            signal(sig, SIG_IGN);
        FILE *out = cmt_cli_output_open("test", out_path);
        if (!out)
            _exit(3);
        fputs("new\n", out);
        fflush(out);
        if (plan != RAISE_AFTER_CLOSE)
            raise(sig);
        if (cmt_cli_output_close("test", out_path, out, true, 0) != 0)
            _exit(4);
        if (plan == RAISE_AFTER_CLOSE) {
            /* the action is the default again: the signal ends the child
             * and FILE, renamed into place, stays */
            struct sigaction now;
            if (sigaction(sig, NULL, &now) != 0 || now.sa_handler != SIG_DFL)
                _exit(5);
            raise(sig);
        }
        _exit(0);
    }
    int status;
    CHECK(waitpid(pid, &status, 0) == pid);
    if (WIFEXITED(status)) {
        CHECK_EQ_U64(WEXITSTATUS(status), 0);
        return 0;
    }
    CHECK(WIFSIGNALED(status));
    return WTERMSIG(status);
}

static void write_before(void)
{
    FILE *f = fopen(out_path, "w");
    CHECK(f);
    fputs("before\n", f);
    fclose(f);
}

int main(void)
{
    CHECK(mkdtemp(dir));
    snprintf(out_path, sizeof out_path, "%s/out.txt", dir);
    const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        /* a new FILE: nothing is left, and the child died of the signal */
        CHECK_EQ_U64(run_child(RAISE_WHILE_WRITING, sigs[i]), sigs[i]);
        CHECK_STR(listing(), "");
        /* an existing FILE stays as it was */
        write_before();
        CHECK_EQ_U64(run_child(RAISE_WHILE_WRITING, sigs[i]), sigs[i]);
        CHECK_STR(listing(), "out.txt");
        CHECK_STR(contents(), "before\n");
        unlink(out_path);
    }
    /* A signal the caller ignores (nohup) stays ignored: the command goes
     * on and FILE is written whole. */
    CHECK_EQ_U64(run_child(IGNORED_WHILE_WRITING, SIGHUP), 0);
    CHECK_STR(listing(), "out.txt");
    CHECK_STR(contents(), "new\n");
    unlink(out_path);
    /* Once FILE is in place, the signals' actions are what they were. */
    CHECK_EQ_U64(run_child(RAISE_AFTER_CLOSE, SIGINT), SIGINT);
    CHECK_STR(listing(), "out.txt");
    CHECK_STR(contents(), "new\n");
    unlink(out_path);
    CHECK(rmdir(dir) == 0);
    return 0;
}
