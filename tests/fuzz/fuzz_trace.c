/* SPDX-License-Identifier: MIT */
/* Fuzz target: any bytes, read as a trace, through everything `cumemtrace
 * report` and `cumemtrace timeline` do with it except symbolization (which
 * reads the files a trace names, not the trace): reader, model, replay
 * (timelines, growth checkpoints), report model (snapshots, call trees,
 * growth, leaks, failures), text and JSON renderers with their charts, the
 * timeline views, the multi-trace comparison, the job view (model/job.c)
 * of the trace beside copies of it (another rank's, a duplicate and an
 * unreadable one: the ranks matched, their GPUs and IPC handles shared),
 * and all of it again stopped half-way (--at). Built two ways (tests/fuzz/meson.build): linked with
 * libFuzzer (-Dfuzzing=true, clang) to search, and with fuzz_main.c to
 * replay the committed corpus and regressions under `meson test`. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis.h"
#include "compare.h"
#include "job.h"
#include "job_report.h"
#include "json_writer.h"
#include "report.h"
#include "timeline.h"
#include "render_parts.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *sink(void)
{
    /* Rendering must format everything; where it goes does not matter. */
    static FILE *null_out;
    if (!null_out)
        null_out = fopen("/dev/null", "w");
    return null_out;
}

/* Two processes that both ran this trace: the comparison's text and JSON. */
static void compare(const struct cmt_report *r, const struct cmt_analysis *a, FILE *out)
{
    struct cmt_process_summary s[2];
    cmt_summary_from_report(r, a, "fuzz-input", &s[0]);
    cmt_summary_failed("fuzz-unreadable", "not a trace", &s[1]);
    cmt_compare_render_text(s, 2, out);
    s[1] = s[0];
    struct cmt_json j;
    cmt_json_init(&j, out, false);
    cmt_compare_render_json(s, 2, &j);
    cmt_json_finish(&j);
}

/* The job view of the trace and copies of it, as `report` builds it for
 * several traces: the trace as it is, the same process as the next rank
 * (another pid, so its exports match the first's imports and its devices
 * are the first's GPUs), a duplicate of the first rank, and one that could
 * not be read. Every share must name members and items that exist. */
static void job_view(const struct cmt_report *r, const struct cmt_analysis *a, FILE *out)
{
    static struct cmt_job_member m[4];
    cmt_job_member_from_report(r, a, "fuzz-input", &m[0]);
    m[1] = m[0];
    snprintf(m[1].trace, sizeof m[1].trace, "fuzz-copy");
    m[1].pid++;
    if (m[1].rank >= 0 && m[1].rank < INT64_MAX)
        m[1].rank++;
    m[2] = m[0];
    cmt_job_member_failed("fuzz-unreadable", &m[3]);
    struct cmt_job_set set;
    if (cmt_job_set_build(&set, m, 4) != 0)
        return;
    for (size_t i = 0; i < set.n_jobs; i++) {
        const struct cmt_job *job = &set.jobs[i];
        for (size_t k = 0; k < job->n_shares; k++) {
            const struct cmt_job_share *sh = &job->shares[k];
            if (sh->importer >= 4 || sh->import >= m[sh->importer].n_imports ||
                (sh->exporter != SIZE_MAX && (sh->exporter >= 4 || sh->export >= m[sh->exporter].n_exports)))
                __builtin_trap();
        }
        static uint64_t cells[4 * 9];
        cmt_job_timeline(&set, job, 9, cells);
    }
    const struct cmt_job_render_options jo = {.columns = 40, .tolerance_ns = CMT_JOB_DEFAULT_CLOCK_TOLERANCE_NS};
    cmt_job_render_text(&set, &jo, out);
    struct cmt_json j;
    cmt_json_init(&j, out, false);
    cmt_job_render_json(&set, &jo, &j);
    cmt_json_finish(&j);
    cmt_job_set_free(&set);
}

static void render(const struct cmt_analysis *a, const struct cmt_report_options *opt, bool with_compare)
{
    struct cmt_report r;
    if (cmt_report_build(&r, a, opt) == 0) {
        FILE *out = sink();
        if (out) {
            cmt_report_render_text(&r, out);
            cmt_report_render_json(&r, out);
            if (with_compare) {
                compare(&r, a, out);
                job_view(&r, a, out);
            }
        }
    }
    cmt_report_free(&r);
}

/* What `timeline --buckets N` reads: the views, and the bucket of each
 * peak. No bucket of a series may go above the series' peak. */
static void timeline_views(const struct cmt_analysis *a)
{
    static const size_t buckets[] = {1, 7, CMT_TIMELINE_BUCKETS};
    for (size_t i = 0; i < sizeof buckets / sizeof buckets[0]; i++) {
        struct cmt_timeline_view v;
        if (cmt_timeline_resample(&a->replay.timeline, buckets[i], &v) != 0)
            continue;
        for (size_t s = 0; s < v.n_series; s++) {
            (void)cmt_timeline_view_bucket(&v, v.series[s]->peak_ts);
            for (size_t b = 0; b < v.n; b++)
                if (v.cells[s * v.n + b].max > v.series[s]->peak)
                    __builtin_trap();
        }
        cmt_timeline_view_free(&v);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* The defaults of `report --no-symbols`. */
    struct cmt_report_options opt = {
        .top = 10, .max_frames = 8, .tree_min_percent = 1.0, .chart_width = 64, .chart_height = 6};
    opt.frames.no_symbols = true;
    struct cmt_analysis a;
    uint64_t half_way = 0;
    /* With the phases observer and the what-if replays of the candidate
     * settings, as `report` runs them. */
    static struct cmt_ta_settings candidates[8];
    static size_t n_candidates;
    if (!n_candidates)
        n_candidates = cmt_whatif_candidates(candidates, 8);
    const struct cmt_analysis_options aopt = {
        .phases = true, .whatif = true, .whatif_settings = candidates, .n_whatif_settings = n_candidates};
    if (cmt_analysis_run_memory_with(&a, data, size, "fuzz-input", 0, &aopt) == 0) {
        render(&a, &opt, true);
        timeline_views(&a);
        /* Every frame, call site and tree node, unfolded; a tiny chart. */
        struct cmt_report_options all = opt;
        all.top = 1000000;
        all.max_frames = 0;
        all.tree_min_percent = 0;
        all.chart_width = 3;
        all.chart_height = 1;
        all.frames.full_stacks = true;
        render(&a, &all, false);
        uint64_t start = a.info.start_monotonic_ns;
        if (a.replay.last_ts > start)
            half_way = (a.replay.last_ts - start) / 2;
    }
    cmt_analysis_free(&a);
    if (half_way) {
        /* `report --at`: the replay stops half-way, the report shows then. */
        if (cmt_analysis_run_memory_with(&a, data, size, "fuzz-input", half_way, &aopt) == 0) {
            opt.at_set = true;
            opt.at_ns = half_way;
            render(&a, &opt, false);
        }
        cmt_analysis_free(&a);
    }
    return 0;
}
