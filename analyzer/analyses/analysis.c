/* SPDX-License-Identifier: MIT */
#include "analysis.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memory_budget.h"
#include "size_parse.h"

static void over_budget(struct cmt_analysis *a, uint64_t in_use, uint64_t events)
{
    char used[32], budget[32], machine[32];
    cmt_format_size(in_use, used, sizeof used);
    cmt_format_size(cmt_memory_budget(), budget, sizeof budget);
    cmt_format_size(cmt_memory_of_machine(), machine, sizeof machine);
    a->over_budget = true;
    snprintf(a->message, sizeof a->message,
             "the analysis needs more memory than --max-memory allows: %s in use over a budget of %s, after %llu "
             "events, with %u distinct call stacks and %zu live allocations so far (memory grows with those, not "
             "with the events); give --max-memory a larger size (this machine has %s, the default is half of it), "
             "or analyse the trace on a machine with more memory",
             used, budget, (unsigned long long)events, a->model.n_stacks ? a->model.n_stacks - 1 : 0,
             a->replay.live.count, machine);
}

bool cmt_analysis_check_budget(struct cmt_analysis *a)
{
    uint64_t in_use;
    if (!cmt_memory_over_budget(&in_use))
        return false;
    over_budget(a, in_use, a->replay.events);
    return true;
}

/* The one place that wires reader -> model -> replay, for a file or bytes. */
static int analyse(struct cmt_analysis *a, const char *path, const void *data, size_t size, uint64_t stop_at_ns,
                   const struct cmt_analysis_options *opt)
{
    memset(a, 0, sizeof *a);
    a->path = path;
    a->data = data;
    a->data_size = size;
    a->stop_at_ns = stop_at_ns;
    cmt_model_init(&a->model);
    if (cmt_replay_init(&a->replay) != 0) {
        snprintf(a->message, sizeof a->message, "out of memory");
        return -1;
    }
    /* The analyses asked for, observers of the replay in this order: the
     * built-in ones, then the command's own (opt->observers). The block
     * layer always: it costs nothing in a trace without BLOCK records. */
    a->blocks = malloc(sizeof *a->blocks);
    if (!a->blocks) {
        snprintf(a->message, sizeof a->message, "out of memory");
        return -1;
    }
    cmt_block_layer_init(a->blocks);
    if (cmt_block_layer_attach(a->blocks, &a->replay) != 0) {
        snprintf(a->message, sizeof a->message, "out of memory");
        return -1;
    }
    if (opt && opt->phases) {
        a->phases = cmt_phases_new();
        if (!a->phases || cmt_phases_attach(a->phases, &a->replay) != 0) {
            snprintf(a->message, sizeof a->message, "out of memory");
            return -1;
        }
    }
    if (opt && opt->whatif) {
        a->whatif = malloc(sizeof *a->whatif);
        if (!a->whatif ||
            cmt_whatif_init(a->whatif, opt->whatif_settings, opt->n_whatif_settings, opt->whatif_capacity) != 0 ||
            cmt_whatif_attach(a->whatif, &a->replay, a->phases) != 0) {
            snprintf(a->message, sizeof a->message, "out of memory");
            return -1;
        }
    }
    if (opt && opt->usage) {
        a->site_calls = calloc(1, sizeof *a->site_calls);
        a->thread_use = calloc(1, sizeof *a->thread_use);
        /* followed by a->views, with the holders (below) */
        if (!a->site_calls || !a->thread_use || cmt_site_calls_init(a->site_calls) != 0 ||
            cmt_thread_use_init(a->thread_use) != 0) {
            snprintf(a->message, sizeof a->message, "out of memory");
            return -1;
        }
    }
    if (opt && opt->forensics) {
        a->forensics = cmt_forensics_new(&opt->forensics_opt);
        if (!a->forensics || cmt_forensics_attach(a->forensics, &a->replay) != 0) {
            snprintf(a->message, sizeof a->message, "out of memory");
            return -1;
        }
    }
    for (size_t i = 0; opt && i < opt->n_observers; i++) {
        if (cmt_replay_add_observer(&a->replay, opt->observers[i]) != 0) {
            snprintf(a->message, sizeof a->message, "more than %d analyses follow the replay",
                     CMT_REPLAY_MAX_OBSERVERS);
            return -1;
        }
    }
    char err[CMT_READER_MESSAGE_MAX];
    int rc = data ? cmt_reader_open_memory(data, size, &a->reader, err, sizeof err)
                  : cmt_reader_open_mode(path, CMT_READ_AUTO, &a->reader, err, sizeof err);
    if (rc != 0) {
        snprintf(a->message, sizeof a->message, "%s", err);
        a->open_error = rc;
        return -1;
    }
    a->info = *cmt_reader_info(a->reader);
    /* Before any event: stack ids the trace is too small to define name no
     * stack, so per-stack tables stay in proportion to the trace. */
    cmt_replay_bound_stacks(&a->replay, a->info.file_size);
    cmt_replay_set_origin(&a->replay, a->info.start_monotonic_ns);
    if (opt && opt->holder_frames && (opt->holder_peaks || opt->whatif)) {
        a->passes = malloc(sizeof *a->passes);
        if (!a->passes ||
            cmt_read_passes_init(a->passes, &a->model, opt->holder_frames, opt->holder_peaks, opt->whatif,
                                 opt->whatif_settings, opt->n_whatif_settings, opt->whatif_capacity,
                                 stop_at_ns ? a->info.start_monotonic_ns + stop_at_ns : 0,
                                 a->replay.stack_id_limit) != 0) {
            snprintf(a->message, sizeof a->message, "out of memory");
            return -1;
        }
    }
    /* One observer for the views that follow every allocation and release
     * (alloc_views.h), after the others (they do not depend on each other). */
    struct cmt_holder_pass *holders = a->passes ? cmt_read_passes_holders(a->passes) : NULL;
    if (a->site_calls || holders) {
        a->views = malloc(sizeof *a->views);
        if (!a->views) {
            snprintf(a->message, sizeof a->message, "out of memory");
            return -1;
        }
        cmt_alloc_views_init(a->views, a->site_calls, a->thread_use, holders);
        /* the fragmentation tracker's on_change too (forensics.h), before
         * the views' observer is attached: it changes their on_change */
        if (a->forensics)
            cmt_frag_follow_views(a->forensics, a->views, &a->replay);
        if (cmt_replay_add_observer(&a->replay, &a->views->observer) != 0) {
            snprintf(a->message, sizeof a->message, "more than %d analyses follow the replay",
                     CMT_REPLAY_MAX_OBSERVERS);
            return -1;
        }
        if (holders)
            cmt_read_passes_holders_followed(a->passes);
    }
    struct cmt_feed feed = {.reader = a->reader, .model = &a->model, .replay = &a->replay,
                            .start_ns = a->info.start_monotonic_ns, .file_size = a->info.file_size,
                            .stop_at_ns = stop_at_ns};
    if (a->passes) {
        feed.on_read = cmt_read_passes_event;
        feed.read_ctx = a->passes;
    }
    int read_rc = cmt_feed_run(&feed);
    if (a->passes)
        cmt_read_passes_finish(a->passes);
    a->stopped_early = feed.stopped_early;
    if (feed.over_budget || cmt_memory_over_budget(&feed.memory_in_use)) {
        over_budget(a, feed.memory_in_use, feed.events_read);
        return -1;
    }
    if (read_rc != 0) {
        a->damaged = true;
        snprintf(a->message, sizeof a->message, "%s", cmt_reader_error(a->reader));
    }
    /* What the whole read established (the END record's figures, a
     * clean-exit flag without its END record) replaces the header's word. */
    a->info = *cmt_reader_info(a->reader);
    uint64_t end = a->model.has_end ? a->model.end.ts : a->replay.last_ts;
    if (a->stopped_early || (a->stop_at_ns && end > a->info.start_monotonic_ns + a->stop_at_ns))
        end = a->info.start_monotonic_ns + a->stop_at_ns;
    cmt_replay_finish(&a->replay, end);
    /* After the replay's own end: the forensics' last checkpoint is at it. */
    if (!a->replay.out_of_memory && cmt_replay_finish_observers(&a->replay, end) != 0)
        a->replay.out_of_memory = true;
    if (a->replay.out_of_memory) {
        snprintf(a->message, sizeof a->message, "out of memory while replaying the trace");
        return -1;
    }
    return 0;
}

int cmt_analysis_run(struct cmt_analysis *a, const char *path, uint64_t stop_at_ns)
{
    return analyse(a, path, NULL, 0, stop_at_ns, NULL);
}

int cmt_analysis_run_with(struct cmt_analysis *a, const char *path, uint64_t stop_at_ns,
                          const struct cmt_analysis_options *opt)
{
    return analyse(a, path, NULL, 0, stop_at_ns, opt);
}

int cmt_analysis_run_memory_with(struct cmt_analysis *a, const void *data, size_t size, const char *name,
                                 uint64_t stop_at_ns, const struct cmt_analysis_options *opt)
{
    /* A non-NULL pointer even for 0 bytes, so analyse() reads memory. */
    static const uint8_t no_bytes[1];
    return analyse(a, name, data ? data : no_bytes, size, stop_at_ns, opt);
}

int cmt_analysis_run_memory(struct cmt_analysis *a, const void *data, size_t size, const char *name,
                            uint64_t stop_at_ns)
{
    return cmt_analysis_run_memory_with(a, data, size, name, stop_at_ns, NULL);
}

bool cmt_analysis_in_progress(const struct cmt_analysis *a)
{
    return a->reader && cmt_reader_in_progress(a->reader);
}

const char *cmt_analysis_state(const struct cmt_analysis *a)
{
    if (a->damaged)
        return "damaged";
    if (a->reader && cmt_reader_truncated(a->reader))
        return "truncated";
    if (!(a->info.flags & CMT_FILE_FLAG_CLEAN_EXIT))
        return "incomplete";
    return "complete";
}

bool cmt_analysis_complete(const struct cmt_analysis *a)
{
    return !strcmp(cmt_analysis_state(a), "complete");
}

void cmt_analysis_free(struct cmt_analysis *a)
{
    cmt_reader_close(a->reader);
    cmt_model_free(&a->model);
    cmt_replay_free(&a->replay);
    cmt_forensics_free(a->forensics);
    a->forensics = NULL;
    cmt_phases_free(a->phases);
    a->phases = NULL;
    if (a->whatif)
        cmt_whatif_free(a->whatif);
    free(a->whatif);
    a->whatif = NULL;
    if (a->blocks)
        cmt_block_layer_free(a->blocks);
    free(a->blocks);
    a->blocks = NULL;
    if (a->site_calls)
        cmt_site_calls_free(a->site_calls);
    free(a->site_calls);
    a->site_calls = NULL;
    if (a->passes)
        cmt_read_passes_free(a->passes);
    free(a->passes);
    a->passes = NULL;
    if (a->thread_use)
        cmt_thread_use_free(a->thread_use);
    free(a->thread_use);
    a->thread_use = NULL;
    free(a->views);
    a->views = NULL;
    a->reader = NULL;
}

static void peek_process(void *ctx, const struct cmt_process_in *p)
{
    *(int64_t *)ctx = p->rank;
}

static int peek_stop(void *ctx, const struct cmt_event_in *e)
{
    (void)ctx;
    (void)e;
    return 1; /* the process record comes before any event */
}

int cmt_analysis_peek_rank(const char *path, int64_t *rank)
{
    struct cmt_reader *reader;
    char err[CMT_READER_MESSAGE_MAX];
    *rank = -1;
    if (cmt_reader_open(path, &reader, err, sizeof err) != 0)
        return -1;
    struct cmt_reader_callbacks cb = {.on_process = peek_process, .on_event = peek_stop};
    cmt_reader_run(reader, &cb, rank);
    cmt_reader_close(reader);
    return 0;
}
