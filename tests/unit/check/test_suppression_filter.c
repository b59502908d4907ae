/* SPDX-License-Identifier: MIT */
/* The report model's leak filter (cmt_suppressions_attach): each distinct
 * frame is matched once per report's frames, and a stack's answer is the
 * first suppression in order that matches any of its frames, as
 * cmt_suppressions_match gives it over the stack's unfolded frames. Stacks
 * are built in a trace model directly (synthetic frames name functions and
 * files; a module record names a library), many sharing frames, more than
 * the memo's first table holds. */
#include <string.h>

#include "frames.h"
#include "suppressions.h"
#include "test_util.h"
#include "trace_model.h"

static uint32_t next_string, next_frame, next_stack;

static uint32_t string(struct cmt_trace_model *m, const char *s)
{
    cmt_model_on_string(m, next_string, s, strlen(s));
    return next_string++;
}

static uint64_t frame(struct cmt_trace_model *m, const char *function, const char *file)
{
    struct cmt_frame_in f = {next_frame, string(m, function), string(m, file), 7, 0};
    cmt_model_on_frame(m, &f);
    return CMT_FRAME_SYNTHETIC_BIT | next_frame++;
}

#define LIB_LO 0x7f0000000000ull

static void model_init(struct cmt_trace_model *m)
{
    next_string = next_frame = next_stack = 1;
    cmt_model_init(m);
    struct cmt_module_in mod = {.id = 1, .path_id = string(m, "/opt/vendor/libvendor.so.3"), .bias = LIB_LO,
                                .lo = LIB_LO, .hi = LIB_LO + 0x100000};
    cmt_model_on_module(m, &mod);
}

static uint64_t stack(struct cmt_trace_model *m, const uint64_t *frames, uint32_t n)
{
    cmt_model_on_stack(m, next_stack, 1, frames, n);
    return next_stack++;
}

/* Checks the filter against cmt_suppressions_match on every stack; returns
 * how many stacks some suppression matched. */
static size_t compare_all(struct cmt_suppressions *s, struct cmt_report_options *o, struct cmt_frames *f,
                          uint64_t n_stacks)
{
    size_t matched = 0;
    for (uint64_t id = 1; id <= n_stacks; id++) {
        long got = o->suppress_stack(o->suppress_ctx, f, id);
        const struct cmt_stack_frames *sf = cmt_frames_get_unfolded(f, id);
        long want = cmt_suppressions_match(s, sf->frames, sf->n);
        if (got != want) {
            fprintf(stderr, "stack %llu: filter %ld, cmt_suppressions_match %ld\n", (unsigned long long)id, got, want);
            exit(1);
        }
        matched += got >= 0;
    }
    return matched;
}

int main(void)
{
    struct cmt_suppressions s;
    cmt_suppressions_init(&s);
    char err[256];
    const char *text = "leak:^late_fn$\nleak:libvendor.so\nleak:helper_1*\nleak:/src/shared.c$\n";
    CHECK(cmt_suppressions_parse(&s, text, strlen(text), "t.supp", false, err, sizeof err) == 0);
    struct cmt_report_options o = {0};
    CHECK(cmt_suppressions_attach(&s, &o) == 0);
    CHECK(o.suppress_stack != NULL);

    struct cmt_trace_model m;
    model_init(&m);
    /* 1,500 distinct helpers (past the memo's first 512 entries), stacks of
     * three frames sharing the common ones */
    uint64_t main_fn = frame(&m, "main", "/src/main.c");
    uint64_t late = frame(&m, "late_fn", "/src/late.c");
    uint64_t shared = frame(&m, "shared_fn", "/src/shared.c");
    uint64_t n = 0;
    for (int i = 0; i < 1500; i++) {
        char name[32];
        snprintf(name, sizeof name, "helper_%d", i);
        uint64_t h = frame(&m, name, "/src/helpers.c");
        stack(&m, (const uint64_t[]){h, main_fn}, 2);
        n++;
        if (i % 3 == 0) {
            stack(&m, (const uint64_t[]){h, shared, main_fn}, 3);
            n++;
        }
    }
    /* The first suppression in order wins, whichever frame it matches:
     * late_fn (0) beats the library (1) that calls it first. */
    uint64_t s_lib_late = stack(&m, (const uint64_t[]){LIB_LO + 0x40, late, main_fn}, 3);
    uint64_t s_lib = stack(&m, (const uint64_t[]){LIB_LO + 0x80, main_fn}, 2);
    uint64_t s_none = stack(&m, (const uint64_t[]){main_fn}, 1);
    n += 3;

    struct cmt_frames_options fo = {.no_symbols = true};
    struct cmt_frames *f = cmt_frames_new(&m, &fo);
    CHECK(f != NULL);
    CHECK_EQ_U64(o.suppress_stack(o.suppress_ctx, f, s_lib_late), 0);
    CHECK_EQ_U64(o.suppress_stack(o.suppress_ctx, f, s_lib), 1);
    CHECK(o.suppress_stack(o.suppress_ctx, f, s_none) == -1);
    /* helper_1, helper_1x, helper_1xx (1 + 10 + 100 + 500 of 1,500) by the
     * third, the others with shared.c by the fourth (every third helper) */
    size_t matched = compare_all(&s, &o, f, n);
    CHECK_EQ_U64(matched, 2 + 611 + 500);
    /* asked again: the same answers from the memo */
    CHECK_EQ_U64(compare_all(&s, &o, f, n), matched);
    CHECK(s.memo_count >= 1500);
    cmt_frames_free(f);
    cmt_model_free(&m);

    /* Another report's frames over another model (its strings may sit at
     * the addresses of the first's): nothing of the first memo is used. */
    model_init(&m);
    uint64_t other = frame(&m, "main", "/src/shared.c");
    uint64_t plain = frame(&m, "main", "/src/main.c");
    uint64_t s_other = stack(&m, (const uint64_t[]){other}, 1);
    uint64_t s_plain = stack(&m, (const uint64_t[]){plain}, 1);
    f = cmt_frames_new(&m, &fo);
    CHECK(f != NULL);
    CHECK_EQ_U64(o.suppress_stack(o.suppress_ctx, f, s_other), 3);
    CHECK(o.suppress_stack(o.suppress_ctx, f, s_plain) == -1);
    CHECK_EQ_U64(s.memo_count, 2);
    cmt_frames_free(f);
    cmt_model_free(&m);
    cmt_suppressions_free(&s);
    printf("suppression_filter: ok\n");
    return 0;
}
