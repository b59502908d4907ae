/* SPDX-License-Identifier: MIT */
/* One trace through the whole pipe (analysis.h: reader -> feed -> replay
 * -> analyses) with a command's own analysis attached beside the built-in
 * ones: it sees every allocation and release, failures and marks in order,
 * and the end; more analyses than the replay takes are refused. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis.h"
#include "test_util.h"
#include "trace_builder.h"

#define START 1000000000ull

struct counts {
    uint64_t live, changes, failures, marks, finish_end;
};

static int on_change(void *ctx, const struct cmt_replay *r, const struct cmt_live *l, bool live)
{
    (void)r;
    struct counts *c = ctx;
    c->changes++;
    c->live = live ? c->live + l->size : c->live - l->size;
    return 0;
}

static int on_failure(void *ctx, const struct cmt_replay *r, const struct cmt_replay_in *e)
{
    (void)r;
    (void)e;
    ((struct counts *)ctx)->failures++;
    return 0;
}

static int on_record(void *ctx, const struct cmt_replay *r, const struct cmt_replay_record *rec)
{
    (void)r;
    if (rec->type == CMT_REC_MARK)
        ((struct counts *)ctx)->marks++;
    return 0;
}

static int on_finish(void *ctx, const struct cmt_replay *r, uint64_t end_ts)
{
    (void)r;
    ((struct counts *)ctx)->finish_end = end_ts;
    return 0;
}

static void event(struct cmt_trace_builder *b, uint8_t type, uint8_t api, uint64_t ts, uint64_t addr, uint64_t size,
                  int32_t result)
{
    struct cmt_event e = {
        .type = type,
        .api = api,
        .kind = (uint8_t)cmt_api_default_kind(api),
        .has_device = type == CMT_REC_ALLOC,
        .device = 0,
        .ts = START + ts,
        .addr = addr,
        .size = size,
        .result = result,
    };
    if (type == CMT_REC_MARK)
        e.aux[0] = cmt_tb_string(b, "load");
    CHECK(cmt_tb_event(b, 7, &e) == 0);
}

static void write_trace(const char *path)
{
    struct cmt_trace_builder_options opt = {.pid = 42, .start_monotonic_ns = START, .clean_exit = true};
    struct cmt_trace_builder *b = cmt_tb_create(path, &opt);
    CHECK(b != NULL);
    event(b, CMT_REC_MARK, CMT_API_MARK_PUSH, 10, 0, 0, 0);
    event(b, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 100, 0x1000, 1000, 0);
    event(b, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 200, 0x9000, 300, 0);
    event(b, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 300, 0, 1ull << 40, 2); /* out of memory */
    event(b, CMT_REC_FREE, CMT_API_CUDA_FREE, 400, 0x1000, 0, 0);
    event(b, CMT_REC_MARK, CMT_API_MARK_POP, 500, 0, 0, 0);
    cmt_tb_end(b, START + 900, 0);
    CHECK(cmt_tb_close(b) == 0);
}

int main(void)
{
    char dir[] = "/tmp/cmt-test-analysis-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[128];
    snprintf(path, sizeof path, "%s/t.bin", dir);
    write_trace(path);

    /* Ours beside the forensics and the phases. */
    struct counts mine = {0};
    const struct cmt_replay_observer o = {
        .ctx = &mine, .on_change = on_change, .on_failure = on_failure, .on_record = on_record, .on_finish = on_finish};
    const struct cmt_replay_observer *list[] = {&o};
    struct cmt_analysis_options opt = {.forensics = true, .phases = true, .observers = list, .n_observers = 1};
    struct cmt_analysis a;
    CHECK(cmt_analysis_run_with(&a, path, 0, &opt) == 0);
    CHECK_EQ_U64(a.replay.n_observers, 4); /* the block layer, the phases, the forensics, ours */
    CHECK_EQ_U64(mine.changes, 3);
    CHECK_EQ_U64(mine.live, 300);
    CHECK_EQ_U64(mine.failures, 1);
    CHECK_EQ_U64(mine.marks, 2);
    CHECK_EQ_U64(mine.finish_end, START + 900);
    size_t n_nodes = 0;
    CHECK(a.phases != NULL);
    const struct cmt_phase_node *nodes = cmt_phases_nodes(a.phases, &n_nodes);
    CHECK_EQ_U64(n_nodes, 1);
    CHECK_STR(cmt_model_string(&a.model, nodes[0].name), "load");
    CHECK_EQ_U64(nodes[0].instances, 1);
    CHECK_EQ_U64(nodes[0].peak, 1300); /* both allocations live inside the range */
    CHECK_EQ_U64(a.forensics->failures_seen, 1);
    cmt_analysis_free(&a);

    /* Alone: without built-in analyses the records still reach it. */
    memset(&mine, 0, sizeof mine);
    opt = (struct cmt_analysis_options){.observers = list, .n_observers = 1};
    CHECK(cmt_analysis_run_with(&a, path, 0, &opt) == 0);
    CHECK_EQ_U64(mine.changes, 3);
    CHECK_EQ_U64(mine.marks, 2);
    cmt_analysis_free(&a);

    /* More than the replay takes. */
    const struct cmt_replay_observer *many[CMT_REPLAY_MAX_OBSERVERS + 1];
    for (size_t i = 0; i < CMT_REPLAY_MAX_OBSERVERS + 1; i++)
        many[i] = &o;
    opt = (struct cmt_analysis_options){.observers = many, .n_observers = CMT_REPLAY_MAX_OBSERVERS + 1};
    CHECK(cmt_analysis_run_with(&a, path, 0, &opt) == -1);
    CHECK_STR(a.message, "more than 12 analyses follow the replay");
    cmt_analysis_free(&a);

    unlink(path);
    rmdir(dir);
    printf("analysis: ok\n");
    return 0;
}
