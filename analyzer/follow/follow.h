/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_FOLLOW_H
#define CUMEMTRACE_ANALYZER_FOLLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace_reader.h"

/* A trace followed while its process writes it (the pytest plugin,
 * docs/python.md, "How the plugin knows what a test left"): the reader's
 * follow mode consumes only what was committed since the last poll, into
 * one trace model and one replay kept between polls, so a test's end costs
 * the records of that test, not the whole trace again.
 *
 * What it keeps is windows: a phase whose name starts with the window
 * prefix (cumemtrace_phase_push from the program) opens one, its pop closes
 * it. Memory allocated while windows are open is charged to the innermost
 * open one (by time, on whatever thread it was allocated): device memory,
 * managed and pinned host memory, and PyTorch's tensors where its block
 * layer is recorded; never a caching allocator's segments (the cache
 * outlives every test; its tensors are what a test holds). For each window
 * it keeps, per device, the peak of the device-resident bytes charged to
 * it (tensors counted as PyTorch's allocator rounds them) and, when it
 * closes, what it was charged with that is still live, by call site, with
 * the leak suppressions `check` applies. */

struct cmt_follow_options {
    const char *window_prefix; /* "pytest:" */
    const char *const *suppression_files;
    size_t n_suppression_files;
    bool no_default_suppressions;
    /* A live view (`cumemtrace top`, analyzer/top/) keeps no windows: the
     * follower adds no observer of its own to the replay, so an event costs
     * the reader and the replay only. */
    bool no_windows;
    /* The replay keeps only what a live view reads: no timeline, no growth
     * checkpoints (cmt_replay_live_only). */
    bool live_only;
    /* Each MARK record (phase, step, mark), in its place among the events:
     * what came before it was replayed. May be NULL. */
    void (*on_mark)(void *ctx, const struct cmt_event_in *e);
    void *mark_ctx;
};

struct cmt_follow;

/* Opens path for following. Returns 0, or -1 with the reason in err (the
 * reader's words, or the suppression files'). */
int cmt_follow_open(const char *path, const struct cmt_follow_options *opt, struct cmt_follow **out, char *err,
                    size_t errlen);
/* Consumes what was committed since the last poll. Returns 0, or -1 with
 * the reason in err (damage, out of memory). */
int cmt_follow_poll(struct cmt_follow *f, char *err, size_t errlen);
/* A JSON object (docs/python.md, "The follower's JSON"): the trace's state
 * and the windows closed since the last call, in the order they closed,
 * each with its peaks and what it left live. malloc'd; NULL when out of
 * memory. */
char *cmt_follow_take_json(struct cmt_follow *f, size_t *len);
/* A JSON object: what window id (from an earlier take) still holds now, by
 * call site. NULL when out of memory or there is no such window. */
char *cmt_follow_held_json(struct cmt_follow *f, uint32_t id, size_t *len);
void cmt_follow_close(struct cmt_follow *f);

/* What a live view reads between polls (analyzer/top/): the replay kept
 * between them, the trace's metadata so far, its call sites' frames (made
 * at the first call; NULL when out of memory), the reader's state. */
struct cmt_replay;
struct cmt_trace_model;
struct cmt_frames;
struct cmt_replay_observer;
struct cmt_trace_info;
const struct cmt_replay *cmt_follow_replay(const struct cmt_follow *f);
const struct cmt_trace_model *cmt_follow_model(const struct cmt_follow *f);
struct cmt_frames *cmt_follow_frames(struct cmt_follow *f);
const struct cmt_trace_info *cmt_follow_info(const struct cmt_follow *f);
/* True once the END record and every chunk were read: the process exited
 * (or stopped writing: the END record's reason says which). */
bool cmt_follow_ended(const struct cmt_follow *f);
/* Whether its process still runs here (cmt_reader_writer_running). */
bool cmt_follow_writer_running(const struct cmt_follow *f);
/* Adds an observer to the replay (before the first poll). Returns 0, or -1
 * when the replay has no room for one more. */
int cmt_follow_add_observer(struct cmt_follow *f, const struct cmt_replay_observer *o);

#endif
