/* SPDX-License-Identifier: MIT */
/* cumemtrace whatif [OPTIONS] TRACE: PyTorch's tensor requests replayed
 * through a model of its caching allocator under other settings and on
 * other devices (docs/report.md, "What if"). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"
#include "command_options.h"
#include "phases_view.h"
#include "size_parse.h"
#include "symbol_options.h"
#include "whatif_report.h"
#include "whatif_uncached.h"

static void whatif_usage(FILE *out)
{
    fputs("usage: cumemtrace whatif [OPTIONS] TRACE\n"
          "\n"
          "Replays the recorded run's PyTorch tensor requests and releases through a model of\n"
          "PyTorch's CUDA caching allocator: under the recorded settings (which must give\n"
          "PyTorch's own max_memory_reserved()), under each setting asked for, and on the\n"
          "recorded device or one of another size. Per device and setting: reserved and\n"
          "allocated peaks, what the cache held unallocated at the peak, segments, and\n"
          "whether and where it runs out of memory.\n"
          "\n"
          "  --set VALUE            replay with PYTORCH_CUDA_ALLOC_CONF=VALUE (repeatable: one\n"
          "                         setting each; \"default\" for the defaults), e.g.\n"
          "                         --set expandable_segments:True\n"
          "                         --set max_split_size_mb:256,roundup_power2_divisions:4\n"
          "  --compare              also the usual candidates: the defaults,\n"
          "                         expandable_segments:True, max_split_size_mb:128 and :512,\n"
          "                         roundup_power2_divisions:4, garbage_collection_threshold:0.6;\n"
          "                         says which fits with the least reserve\n"
          "  --capacity SIZE        a device of SIZE bytes (80GiB, 40GB...) instead of the\n"
          "                         recorded one; what was not PyTorch's cache (the CUDA\n"
          "                         context, other libraries) still takes its share\n"
          "  --format FORMAT        text (default) or json: one object (docs/report.md)\n"
          "  -j, --json             --format json\n"
          "  -o, --output FILE      write the output to FILE instead of standard output\n"
          "  --full-stacks          keep every frame when naming call sites\n"
          "  --fold PATTERN         also fold frames matching the glob PATTERN (repeatable)\n"
          "  --unfold PATTERN       frames matching PATTERN are yours (repeatable)\n"
          "  --debuginfo-path DIR   look for binaries and debug files in DIR (repeatable)\n"
          "  --sysroot DIR          look up the recorded module paths under DIR first\n"
          "  --no-symbols           do not symbolize: addresses and modules only\n"
          CMT_MEMORY_OPTION_HELP
          "\n"
          "Needs PyTorch's block layer (recorded by default under cumemtrace run), or a run\n"
          "with PYTORCH_NO_CUDA_MEMORY_CACHING=1 (a cudaMalloc per tensor).\n"
          "\n"
          "Exit status: 0 printed; 2 bad options, or a file that is not a trace, is of a\n"
          "newer format, or is truncated or damaged (the output then covers the events\n"
          "before the damage).\n",
          out);
}

struct whatif_args {
    struct cmt_ta_settings settings[CMT_WHATIF_MAX_SETTINGS - 1];
    size_t n;
    bool compare;
    uint64_t capacity;
};

static int add_setting(struct whatif_args *w, const char *text)
{
    if (w->n == sizeof w->settings / sizeof w->settings[0]) {
        cmt_cli_error("whatif: at most %zu settings at once, --compare's included", w->n);
        return -1;
    }
    char err[160];
    if (cmt_ta_settings_parse(text, &w->settings[w->n], err, sizeof err) != 0) {
        cmt_cli_error("whatif: --set '%s': %s (docs/report.md, \"What if\", lists the keys)", text, err);
        return -1;
    }
    w->n++;
    return 0;
}

static int run(const char *path, const struct whatif_args *w, const struct cmt_frames_args *symbols,
               const char *format, const char *output)
{
    struct cmt_analysis a;
    struct cmt_frames_options fo = {.symbolizer = {.demangle = true}};
    cmt_frames_args_apply(symbols, &fo);
    struct cmt_analysis_options aopt = {.phases = true,
                                        .whatif = true,
                                        .whatif_settings = w->settings,
                                        .n_whatif_settings = w->n,
                                        .whatif_capacity = w->capacity,
                                        .holder_frames = &fo};
    if (cmt_cli_analyse(&a, path, 0, &aopt) != 0) {
        cmt_cli_error("%s: %s", path, a.message);
        cmt_cli_analysis_free(&a);
        return CMT_EXIT_USAGE;
    }
    struct cmt_frames *frames = cmt_frames_new(&a.model, &fo);
    struct cmt_phases_view *phases = NULL;
    struct cmt_whatif *uncached = NULL;
    struct cmt_whatif_report rep;
    int rc = frames && cmt_phases_view_build(&phases, &a, frames) == 0 ? 0 : -1;
    const struct cmt_whatif *engine = a.whatif;
    if (rc == 0 && engine->source == CMT_WHATIF_NONE) {
        rc = cmt_whatif_uncached_run(&uncached, &a, frames, NULL, w->settings, w->n, w->capacity);
        if (uncached)
            engine = uncached;
    }
    if (rc == 0)
        rc = cmt_whatif_report_build(&rep, &a, engine, frames, phases, NULL);
    if (rc != 0) {
        cmt_cli_error("%s: out of memory while replaying the tensors; free memory", path);
        cmt_phases_view_free(phases);
        cmt_frames_free(frames);
        cmt_whatif_uncached_free(uncached);
        cmt_cli_analysis_free(&a);
        return CMT_EXIT_USAGE;
    }
    FILE *out = cmt_cli_output_open("whatif", output);
    int status = CMT_EXIT_USAGE;
    if (out) {
        cmt_cli_render(CMT_VIEW_WHATIF, format, &rep, out);
        status = cmt_cli_output_close("whatif", output, out, out != stdout, CMT_EXIT_OK);
        int damage = cmt_cli_damage_status(path, &a, "output");
        if (status == CMT_EXIT_OK)
            status = damage;
    }
    cmt_whatif_report_free(&rep);
    cmt_phases_view_free(phases);
    cmt_frames_free(frames);
    cmt_whatif_uncached_free(uncached);
    cmt_cli_analysis_free(&a);
    return status;
}

enum { OPT_SET = CMT_CLI_OWN_FIRST, OPT_COMPARE, OPT_CAPACITY };

static const struct option whatif_options[] = {
    {"set", required_argument, NULL, OPT_SET},
    {"compare", no_argument, NULL, OPT_COMPARE},
    {"capacity", required_argument, NULL, OPT_CAPACITY},
};

/* One of whatif's own options (the shared ones: command_options.c). */
static int whatif_option(void *ctx, int value, const char *arg, const char *option)
{
    struct whatif_args *w = ctx;
    (void)option;
    switch (value) {
    case OPT_SET:
        return add_setting(w, arg);
    case OPT_COMPARE:
        w->compare = true;
        return 0;
    default:
        if (cmt_parse_size(arg, &w->capacity) != 0 || w->capacity == 0) {
            cmt_cli_error("whatif: --capacity needs a device size such as 80GiB or 40GB, got '%s'", arg);
            return -1;
        }
        return 0;
    }
}

static const struct cmt_cli_command whatif_command = {
    .name = "whatif",
    .view = CMT_VIEW_WHATIF,
    .takes = CMT_TAKES_FORMAT | CMT_TAKES_JSON | CMT_TAKES_OUTPUT | CMT_TAKES_SYMBOLS,
    .own = whatif_options,
    .n_own = sizeof whatif_options / sizeof whatif_options[0],
    .own_option = whatif_option,
    .usage = whatif_usage,
};

int cmt_cmd_whatif(int argc, char **argv)
{
    struct cmt_cli_options o = {.format = CMT_CLI_FORMAT_INIT};
    struct whatif_args *w = calloc(1, sizeof *w);
    if (!w) {
        cmt_cli_error("whatif: out of memory; free memory");
        return CMT_EXIT_USAGE;
    }
    int status;
    int first = cmt_cli_parse(&whatif_command, argc, argv, &o, w, &status);
    if (first < 0)
        goto out;
    status = CMT_EXIT_USAGE;
    if (cmt_cli_one_trace("whatif", argc, first) != 0)
        goto out;
    if (w->compare) {
        struct cmt_ta_settings cand[8];
        size_t n = cmt_whatif_candidates(cand, 8);
        for (size_t i = 0; i < n; i++)
            if (w->n < sizeof w->settings / sizeof w->settings[0])
                w->settings[w->n++] = cand[i];
    }
    status = run(argv[first], w, &o.symbols, o.format.format, o.output);
out:
    free(w);
    return status;
}
