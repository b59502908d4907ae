/* SPDX-License-Identifier: MIT */
/* The analysis library's exports (cumemtrace_analysis.h): thin wrappers
 * over the command's own code (cli/) and the follower (follow/). */
#include "cumemtrace_analysis.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmt_version.h"
#include "cumemtrace/format.h"
#include "follow.h"

#define API __attribute__((visibility("default")))

static char version[64];
static pthread_once_t version_once = PTHREAD_ONCE_INIT;

static void make_version(void)
{
    snprintf(version, sizeof version, "%s (trace format %d.%d)", CMT_VERSION, CMT_VERSION_MAJOR, CMT_VERSION_MINOR);
}

API const char *cumemtrace_analysis_version(void)
{
    pthread_once(&version_once, make_version);
    return version;
}

/* The command's option parsing (getopt's globals) and its analysis are one
 * at a time. */
static pthread_mutex_t report_lock = PTHREAD_MUTEX_INITIALIZER;

static char *take_stream(FILE *f, char **buf)
{
    if (!f)
        return NULL;
    if (fclose(f) != 0) {
        free(*buf);
        return NULL;
    }
    if (*buf && !**buf) {
        free(*buf);
        return NULL;
    }
    return *buf;
}

API int cumemtrace_report_json(const char *trace, const char *const *options, size_t n_options, char **json,
                               char **messages)
{
    *json = NULL;
    *messages = NULL;
    char **argv = calloc(n_options + 5, sizeof *argv);
    char *out_buf = NULL, *msg_buf = NULL;
    size_t out_len = 0, msg_len = 0;
    FILE *out = open_memstream(&out_buf, &out_len);
    FILE *msg = open_memstream(&msg_buf, &msg_len);
    if (!argv || !out || !msg) {
        free(argv);
        free(take_stream(out, &out_buf));
        free(take_stream(msg, &msg_buf));
        *messages = strdup("cumemtrace: out of memory");
        return 2;
    }
    size_t n = 0;
    argv[n++] = (char *)"report";
    argv[n++] = (char *)"--format";
    argv[n++] = (char *)"json";
    for (size_t i = 0; i < n_options; i++)
        argv[n++] = (char *)options[i];
    argv[n++] = (char *)trace;
    pthread_mutex_lock(&report_lock);
    cmt_cli_capture(msg);
    int status = cmt_report_command((int)n, argv, out);
    cmt_cli_capture(NULL);
    pthread_mutex_unlock(&report_lock);
    free(argv);
    *json = take_stream(out, &out_buf);
    *messages = take_stream(msg, &msg_buf);
    return status;
}

API struct cumemtrace_follower *cumemtrace_follow_open(const char *trace, const char *window_prefix,
                                                       const char *const *suppression_files, size_t n_files,
                                                       int no_default_suppressions, char **error)
{
    struct cmt_follow_options o = {
        .window_prefix = window_prefix,
        .suppression_files = suppression_files,
        .n_suppression_files = n_files,
        .no_default_suppressions = no_default_suppressions != 0,
    };
    struct cmt_follow *f = NULL;
    char err[1024];
    if (cmt_follow_open(trace, &o, &f, err, sizeof err) != 0) {
        *error = strdup(err);
        return NULL;
    }
    return (struct cumemtrace_follower *)f;
}

API int cumemtrace_follow_poll(struct cumemtrace_follower *f, char **error)
{
    char err[1024];
    if (cmt_follow_poll((struct cmt_follow *)f, err, sizeof err) != 0) {
        *error = strdup(err);
        return -1;
    }
    return 0;
}

API char *cumemtrace_follow_take(struct cumemtrace_follower *f)
{
    return cmt_follow_take_json((struct cmt_follow *)f, NULL);
}

API char *cumemtrace_follow_held(struct cumemtrace_follower *f, uint32_t id)
{
    return cmt_follow_held_json((struct cmt_follow *)f, id, NULL);
}

API void cumemtrace_follow_close(struct cumemtrace_follower *f)
{
    cmt_follow_close((struct cmt_follow *)f);
}

API void cumemtrace_free(void *p)
{
    free(p);
}
