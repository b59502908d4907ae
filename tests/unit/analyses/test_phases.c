/* SPDX-License-Identifier: MIT */
/* The step rule of phases.h (docs/report.md, "Phases and steps"), and the
 * phases following a replay: allocations made before the first mark count
 * as the device's accounts counted them (the phases follow allocations only
 * from the first mark on: replay.h, changes_later). */
#include <string.h>

#include "phases.h"
#include "replay.h"
#include "test_util.h"

static uint64_t now = 1000;

static void put(struct cmt_replay *r, uint8_t type, uint8_t api, int32_t device, uint64_t addr, uint64_t size,
                uint64_t name)
{
    struct cmt_event_in e = {.type = type, .api = api, .kind = (uint8_t)cmt_api_default_kind(api), .device = device,
                             .ts = now++, .addr = addr, .size = size, .stack = 1, .tid = 7, .aux = {name}};
    CHECK(cmt_replay_event(r, &e) == 0);
}

static void test_allocations_before_the_first_mark(void)
{
    struct cmt_replay r;
    CHECK(cmt_replay_init(&r) == 0);
    struct cmt_phases *p = cmt_phases_new();
    CHECK(p && cmt_phases_attach(p, &r) == 0);
    CHECK_EQ_U64(r.n_change_hooks, 0); /* nothing to follow yet */
    put(&r, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 0, 0x1000, 200, 0);
    put(&r, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 0, 0x2000, 100, 0); /* 300: device 0's peak so far */
    put(&r, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 1, 0x8000, 5, 0);
    put(&r, CMT_REC_FREE, CMT_API_CUDA_FREE, 0, 0x2000, 0, 0);      /* 200 live */
    put(&r, CMT_REC_MARK, CMT_API_MARK_PUSH, 0, 0, 0, 42);          /* a range "42" opens on thread 7 */
    CHECK_EQ_U64(r.n_change_hooks, 1);
    put(&r, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 0, 0x3000, 50, 0); /* 250: below the peak */
    struct cmt_phase_where w;
    CHECK(cmt_phases_at_peak(p, 0, &w) && w.node == CMT_PHASE_NONE);
    put(&r, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 0, 0x4000, 70, 0); /* 320: a new peak, inside the range */
    put(&r, CMT_REC_FREE, CMT_API_CUDA_FREE, 0, 0x1000, 0, 0);     /* 120 */
    cmt_replay_finish(&r, now);
    CHECK(cmt_replay_finish_observers(&r, now) == 0);
    size_t n;
    const struct cmt_phase_node *nodes = cmt_phases_nodes(p, &n);
    CHECK_EQ_U64(n, 1);
    CHECK(cmt_phases_at_peak(p, 0, &w) && w.node == 0);
    CHECK(cmt_phases_at_peak(p, 1, &w) && w.node == CMT_PHASE_NONE); /* device 1's peak: before any mark */
    CHECK(!cmt_phases_at_peak(p, 2, &w));
    CHECK_EQ_U64(nodes[0].alloc_bytes, 120);
    CHECK_EQ_U64(nodes[0].peak, 325); /* every device together: 320 + 5 */
    CHECK_EQ_U64(nodes[0].open_at_end, 1);
    CHECK_EQ_U64(nodes[0].retained_bytes, 120);
    cmt_replay_free(&r);
    cmt_phases_free(p);
}

/* A trace without marks: the phases follow nothing, and say where each
 * device's peak was (at no phase) all the same. */
static void test_no_marks(void)
{
    struct cmt_replay r;
    CHECK(cmt_replay_init(&r) == 0);
    struct cmt_phases *p = cmt_phases_new();
    CHECK(p && cmt_phases_attach(p, &r) == 0);
    put(&r, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 3, 0x1000, 200, 0);
    put(&r, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC_HOST, -1, 0x9000, 200, 0);
    CHECK_EQ_U64(r.n_change_hooks, 0);
    cmt_replay_finish(&r, now);
    CHECK(cmt_replay_finish_observers(&r, now) == 0);
    struct cmt_phase_where w;
    CHECK(cmt_phases_at_peak(p, 3, &w) && w.node == CMT_PHASE_NONE);
    CHECK(!cmt_phases_at_peak(p, -1, &w)); /* pinned host memory is no device's */
    CHECK(!cmt_phases_any(p));
    cmt_replay_free(&r);
    cmt_phases_free(p);
}

static int64_t step_of(const char *name)
{
    uint64_t n;
    return cmt_phase_step_number(name, strlen(name), &n) ? (int64_t)n : -1;
}

int main(void)
{
    CHECK_EQ_U64(step_of("step 41"), 41);
    CHECK_EQ_U64(step_of("step41"), 41);
    CHECK_EQ_U64(step_of("Step#3"), 3);
    CHECK_EQ_U64(step_of("iteration_7"), 7);
    CHECK_EQ_U64(step_of("iter-12"), 12);
    CHECK_EQ_U64(step_of("ITERATION: 5"), 5);
    CHECK_EQ_U64(step_of("batch=0"), 0);
    CHECK_EQ_U64(step_of("epoch 2 step 10"), 10);
    CHECK_EQ_U64(step_of("train_step 9"), 9); /* '_' is not a letter: the word starts there */
    CHECK_EQ_U64(step_of("step 18446744073709551615"), UINT64_MAX);
    /* not steps */
    CHECK(step_of("forward") == -1);
    CHECK(step_of("epoch 2") == -1);
    CHECK(step_of("stepper 3") == -1);
    CHECK(step_of("footstep 3") == -1);
    CHECK(step_of("step") == -1);
    CHECK(step_of("step x 1") == -1);
    CHECK(step_of("layer 7") == -1);
    CHECK(step_of("") == -1);
    uint64_t n = 99;
    CHECK(!cmt_phase_step_number("step 5", 4, &n)); /* only len bytes are read */
    CHECK_EQ_U64(n, 99);
    test_allocations_before_the_first_mark();
    test_no_marks();
    return 0;
}
