/* SPDX-License-Identifier: MIT */
/* Fuzz target: any bytes, read as a trace, through everything `cumemtrace
 * report` does with it except symbolization (which reads the files a trace
 * names, not the trace): reader, model, replay, report model, text and JSON
 * renderers. Built two ways (tests/fuzz/meson.build): linked with libFuzzer
 * (-Dfuzzing=true, clang) to search, and with fuzz_main.c to replay the
 * committed corpus and regressions under `meson test`. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis.h"
#include "report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *sink(void)
{
    /* Rendering must format everything; where it goes does not matter. */
    static FILE *null_out;
    if (!null_out)
        null_out = fopen("/dev/null", "w");
    return null_out;
}

static void render(const struct cmt_analysis *a, const struct cmt_report_options *opt)
{
    struct cmt_report r;
    if (cmt_report_build(&r, a, opt) == 0) {
        FILE *out = sink();
        if (out) {
            cmt_report_render_text(&r, out);
            cmt_report_render_json(&r, out);
        }
    }
    cmt_report_free(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cmt_analysis a;
    if (cmt_analysis_run_memory(&a, data, size, "fuzz-input", 0) == 0) {
        /* The defaults of `report --no-symbols`, then every frame of every
         * stack, unfolded and uncut. */
        struct cmt_report_options opt = {.top = 10, .max_frames = 8};
        opt.frames.no_symbols = true;
        render(&a, &opt);
        opt.top = 1000000;
        opt.max_frames = 0;
        opt.frames.full_stacks = true;
        render(&a, &opt);
    }
    cmt_analysis_free(&a);
    return 0;
}
