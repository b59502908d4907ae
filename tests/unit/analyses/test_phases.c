/* SPDX-License-Identifier: MIT */
/* The step rule of phases.h (docs/report.md, "Phases and steps"). */
#include <string.h>

#include "phases.h"
#include "test_util.h"

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
    return 0;
}
