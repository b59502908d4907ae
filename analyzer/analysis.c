/* SPDX-License-Identifier: MIT */
#include "analysis.h"

#include <stdio.h>
#include <string.h>

static int on_event(void *ctx, const struct cmt_event_in *e)
{
    struct cmt_analysis *a = ctx;
    if (a->stop_at_ns && e->ts > a->info.start_monotonic_ns + a->stop_at_ns) {
        a->stopped_early = true;
        return 1;
    }
    return cmt_replay_event(&a->replay, e) != 0 ? 1 : 0;
}

/* The reader hands metadata to the model; both share this context. */
static void on_string(void *ctx, uint32_t id, const char *t, size_t n) { cmt_model_on_string(&((struct cmt_analysis *)ctx)->model, id, t, n); }
static void on_module(void *ctx, const struct cmt_module_in *m) { cmt_model_on_module(&((struct cmt_analysis *)ctx)->model, m); }
static void on_stack(void *ctx, uint32_t id, uint32_t k, const uint64_t *f, uint32_t n) { cmt_model_on_stack(&((struct cmt_analysis *)ctx)->model, id, k, f, n); }
static void on_process(void *ctx, const struct cmt_process_in *p) { cmt_model_on_process(&((struct cmt_analysis *)ctx)->model, p); }
static void on_thread(void *ctx, uint32_t tid, uint32_t name) { cmt_model_on_thread(&((struct cmt_analysis *)ctx)->model, tid, name); }
static void on_config(void *ctx, const struct cmt_config_in *c) { cmt_model_on_config(&((struct cmt_analysis *)ctx)->model, c); }
static void on_end(void *ctx, const struct cmt_end_in *e) { cmt_model_on_end(&((struct cmt_analysis *)ctx)->model, e); }

int cmt_analysis_run(struct cmt_analysis *a, const char *path, uint64_t stop_at_ns)
{
    return cmt_analysis_run_with(a, path, stop_at_ns, NULL);
}

int cmt_analysis_run_with(struct cmt_analysis *a, const char *path, uint64_t stop_at_ns,
                          const struct cmt_analysis_options *opt)
{
    memset(a, 0, sizeof *a);
    a->path = path;
    a->stop_at_ns = stop_at_ns;
    cmt_model_init(&a->model);
    if (cmt_replay_init(&a->replay) != 0) {
        snprintf(a->message, sizeof a->message, "out of memory");
        return -1;
    }
    if (!opt || !opt->no_forensics) {
        a->forensics = cmt_forensics_new(opt ? &opt->forensics : NULL);
        if (!a->forensics) {
            snprintf(a->message, sizeof a->message, "out of memory");
            return -1;
        }
        cmt_forensics_attach(a->forensics, &a->replay);
    }
    char err[CMT_READER_MESSAGE_MAX];
    if (cmt_reader_open(path, &a->reader, err, sizeof err) != 0) {
        snprintf(a->message, sizeof a->message, "%s", err);
        return -1;
    }
    a->info = *cmt_reader_info(a->reader);
    struct cmt_reader_callbacks cb = {
        .on_string = on_string,
        .on_module = on_module,
        .on_stack = on_stack,
        .on_process = on_process,
        .on_thread = on_thread,
        .on_config = on_config,
        .on_end = on_end,
        .on_event = on_event,
    };
    if (cmt_reader_run(a->reader, &cb, a) != 0) {
        a->damaged = true;
        snprintf(a->message, sizeof a->message, "%s", cmt_reader_error(a->reader));
    }
    if (a->forensics && !a->replay.out_of_memory && cmt_forensics_finish(a->forensics, &a->replay) != 0)
        a->replay.out_of_memory = true;
    if (a->replay.out_of_memory) {
        snprintf(a->message, sizeof a->message, "out of memory while replaying the trace");
        return -1;
    }
    return 0;
}

void cmt_analysis_free(struct cmt_analysis *a)
{
    cmt_reader_close(a->reader);
    cmt_model_free(&a->model);
    cmt_replay_free(&a->replay);
    cmt_forensics_free(a->forensics);
    a->forensics = NULL;
    a->reader = NULL;
}
