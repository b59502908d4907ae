/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_REPORT_H
#define CUMEMTRACE_ANALYZER_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis.h"
#include "call_tree.h"
#include "frames.h"
#include "growth.h"
#include "ipc_report.h"
#include "memory_holder.h"
#include "phases_view.h"
#include "report_events.h"
#include "site_floors.h"
#include "tensor_pass.h"
#include "tensors_report.h"
#include "timeline_model.h"
#include "usage_views.h"
#include "whatif_report.h"

/* The report model: what the replay found, grouped by call site and sorted,
 * ready for any renderer (text, JSON, and later exports). */

struct cmt_site_row {
    uint64_t stack; /* canonical stack id (0: no stack recorded) */
    uint64_t bytes;
    uint64_t count;
    uint8_t kind;
    uint8_t api;
    uint64_t first_ts; /* earliest allocation of the row */
    /* Leak rows: what the call site did over the whole run. */
    uint64_t site_allocs, site_frees;
    bool growing; /* the call site is also a growth candidate */
    uint8_t holder; /* held rows: enum cmt_holder of the cache; a device's snapshot rows:
                     * CMT_HOLDER_PYTORCH for PyTorch's segments when its block layer shows
                     * their tensors (left out of the call tree) */
    uint32_t suppression; /* suppressed rows: index + 1 into the report's suppressions */
};

/* A leak suppression as the report names it (`check`'s suppressions.h
 * parses and matches them; the model only asks which one matches). */
struct cmt_report_suppression {
    const char *pattern; /* after "leak:" */
    const char *source;  /* "default.supp" for the built-in list, else the file as given */
    unsigned line;
    const char *reason;  /* what the comment above the entry says ("cuBLAS handle state"); "" none */
    bool is_default;
};

/* What one suppression set aside in one trace. */
struct cmt_suppression_use {
    uint64_t allocations, bytes; /* live at exit (bytes: of memory-holding kinds) */
    uint64_t tensors, tensor_bytes; /* tensors never released (PyTorch's block layer) */
};

/* The most one holder (memory_holder.h) had live on one device. */
/* What one account held at one instant (its peak, or --at TIME). */
struct cmt_snapshot {
    uint64_t ts;    /* absolute */
    uint64_t bytes;
    uint64_t count;
    uint64_t by_kind[CMT_KIND_COUNT];
    struct cmt_site_row *rows; /* by call site, largest first */
    size_t n_rows;
    size_t n_top; /* rows shown: min(n_rows, --top) */
    struct cmt_call_tree tree;
};

/* An account's figures, copied from the replay's account when the model
 * is built: what renderers read (not account). */
struct cmt_account_figures {
    int32_t device; /* -1: host */
    uint8_t cls;    /* enum cmt_class */
    uint64_t live, live_count;
    uint64_t peak, peak_ts, peak_count;
    uint64_t peak_by_kind[8]; /* as struct cmt_account's */
};

struct cmt_account_view {
    const struct cmt_account *account; /* the models' (job, diff, holder peaks); renderers read fig */
    struct cmt_account_figures fig;
    struct cmt_site_row *top; /* sites live at the peak, largest first (= peak.rows) */
    size_t n_top;
    size_t n_sites_at_peak;
    struct cmt_snapshot peak;
    bool has_at;
    struct cmt_snapshot at; /* with --at: what was live then */
    /* Its live bytes over time: the device-resident total, the managed
     * memory of the device, or pinned host memory. */
    const struct cmt_timeline_series *series;
    size_t chart_series; /* its index in the report's chart; SIZE_MAX: none */
    /* Device accounts: the peak split by who held it, and each holder's own
     * peak (has_own_peaks: computed, see cmt_report_options.holder_peaks). */
    uint64_t peak_by_holder[CMT_HOLDER_COUNT];
    bool has_own_peaks;
    struct cmt_holder_peak own_peak[CMT_HOLDER_COUNT];
    /* Device accounts of a trace with phases: where the peak happened
     * (the report's phases view); NULL: nowhere known. */
    const struct cmt_phase_where *peak_phase;
};

/* A call site whose live bytes keep rising (growth.h). */
struct cmt_growth_row {
    uint64_t stack; /* canonical */
    uint8_t kind, api;
    struct cmt_growth_verdict verdict;
    uint64_t live_bytes, live_count; /* at the end of the replay */
    uint64_t allocs, frees, failures;
    uint64_t first_ts;
};

struct cmt_failure_group {
    uint64_t stack;
    uint8_t api;
    int32_t result;
    int32_t device;
    uint64_t count;
    uint64_t min_size, max_size;
    uint64_t first_ts;
    uint64_t live_device_bytes; /* at the first failure */
    size_t first_index;         /* of the first failure, in the replay's failures */
    /* Of count: a caching allocator's own retries of a failure before them
     * (PyTorch asking again after releasing its cache: the same failure),
     * and its probes (failed by design, asked again at once and served:
     * no failure). */
    uint64_t retries, probes;
    /* Of count: failures the program did not survive (CMT_FAILURE_FATAL). */
    uint64_t fatal;
};

/* What a kept failure of the replay is (cmt_report's failure_flags). */
#define CMT_FAILURE_PROBE 1u /* a caching allocator's probe: not a failure */
#define CMT_FAILURE_RETRY 2u /* a caching allocator's retry of the failure before it: the same failure */
/* A failure the program did not survive: nothing was allocated after it
 * (no allocation call, no tensor) and the process then exited with a status
 * other than 0, or did not exit (killed, crashed, _exit; not a trace still
 * being written). check fails on these by default. */
#define CMT_FAILURE_FATAL 4u

struct cmt_report_options {
    size_t top;        /* call sites per list (default 10) */
    size_t max_frames; /* frames per site in text (0 = all) */
    struct cmt_frames_options frames;
    double tree_min_percent; /* call tree nodes below this share of the snapshot are summarized */
    bool at_set;             /* --at TIME: the replay stopped at at_ns after the start */
    /* The caller says in its own verdict that the process did not exit
     * normally or still runs (check, unless --check-incomplete): no
     * warning repeats it. */
    bool state_in_verdict;
    uint64_t at_ns;
    size_t chart_width, chart_height; /* the text timeline; 0: no chart */
    /* Optional: leak suppressions (`check`'s and `report`'s,
     * check/suppressions.h). suppress_stack gives the index into
     * suppressions of the first that matches a recorded stack (every frame,
     * as recorded), or -1; what is live at exit (not at --at TIME) and the
     * block layer's tensors never released, each by its own stack, are set
     * aside as suppressed instead of leaks when one matches. */
    long (*suppress_stack)(void *ctx, struct cmt_frames *frames, uint64_t stack);
    void *suppress_ctx;
    const struct cmt_report_suppression *suppressions;
    size_t n_suppressions;
    /* Device memory the verdicts of failed allocations leave to the CUDA
     * context (docs/fragmentation.md); the default unless set. */
    bool context_allowance_set;
    uint64_t context_allowance;
    /* --include-cached: what caching allocators hold at exit is listed and
     * counted as leaks; by default it is set aside as held by them. */
    bool include_cached;
    /* Each holder's own peak per device: a second reading of the trace,
     * done only when some allocation is a caching allocator's (report). */
    bool holder_peaks;
    /* The call sites' floors per growth checkpoint interval (the HTML
     * report's): needs every such site's holder, so its symbols. */
    bool site_floors;
};

struct cmt_forensics_report;

struct cmt_allocated_site {
    uint32_t stack;
    uint64_t bytes;
};

/* The trace and the process it recorded, as the renderers print them
 * (copied from the analysis by cmt_report_build: a renderer reads the model,
 * never the analysis). */
/* What "live at the end" of a report means, and so what its leaks can tell
 * (docs/report.md, "Leaks: what live at the end means"). */
enum cmt_live_basis {
    CMT_LIVE_AT_EXIT,        /* the process exited normally: leaks */
    CMT_LIVE_RECORDING_ENDED, /* killed, crashed, _exit, or recording stopped early: live when it ended */
    CMT_LIVE_AT_CUT,         /* the trace is truncated or damaged: live at the cut; later releases unknown */
    CMT_LIVE_IN_PROGRESS,    /* the process still runs: live when the trace was read */
    CMT_LIVE_AT_TIME         /* --at: live then */
};
/* "exit", "recording_ended", "cut", "in_progress", "at": the JSON's leaks.basis. */
const char *cmt_live_basis_key(enum cmt_live_basis b);
struct cmt_report;
/* When the text's "live at the end" is: "at exit" (also for a process that
 * did not exit normally, whose warning says what it means), "at the cut",
 * "when read", "then" (--at). */
const char *cmt_report_live_words(const struct cmt_report *r);

struct cmt_report_trace {
    const char *path;
    unsigned version_major, version_minor; /* of the trace format */
    const char *state;  /* cmt_analysis_state: "complete", "incomplete", "truncated", "damaged" */
    bool complete;      /* state is "complete" */
    uint64_t start_ns;  /* absolute (monotonic): the trace's start */
    uint64_t end_ts;    /* absolute: the END record's time, else the last event's */
    uint64_t pid;       /* the process record's, else the file header's */
    const char **argv;  /* the process's arguments (strings of the trace model) */
    size_t argc;
    uint64_t events;        /* events replayed */
    uint64_t failed_allocs; /* allocations that failed */
    uint64_t frag_checkpoints, device_samples; /* the forensics' (0 without them) */
    bool damaged;          /* the read stopped at damage: message says where */
    const char *message;
    uint64_t file_size, claimed_end; /* of the file, and where its chunks reach */
    bool clean_exit;       /* the file header's flag */
    bool in_progress;      /* the process still runs: read up to what it had committed (cmt_analysis_in_progress) */
    enum cmt_live_basis live_basis;
    uint64_t start_realtime_ns;
    /* The process record (has_process; else only pid, from the header). */
    bool has_process;
    uint64_t ppid;
    const char *exe, *hostname, *cwd;
    int64_t rank; /* -1: none recorded */
    /* The JOB record (has_job): who the process was in a job of several. */
    bool has_job;
    uint64_t job_source; /* enum cmt_job_source */
    int64_t job_rank, job_local_rank, job_world_size, job_local_world_size; /* -1 unknown */
    bool has_job_id;
    const char *job_id; /* "" without one */
    struct cmt_report_var { const char *name, *value; } job_vars[CMT_JOB_MAX_VARS];
    size_t job_nvars;
    /* The writer's notes, the first ones. */
    struct cmt_report_note { const char *source, *text; uint64_t ts; } notes[CMT_MODEL_MAX_NOTES];
    size_t n_notes;
    uint64_t notes_dropped;
    uint64_t events_by_api[256];
    uint64_t events_dropped, unrecorded_nested, unmatched_frees;
    uint64_t device_mask; /* devices with events (bit d) */
    bool host_seen;       /* pinned host memory had events */
    uint32_t growth_checkpoints;  /* growth checkpoint intervals */
    uint64_t growth_interval_ns;  /* their width; 0: they never started */
    struct cmt_virtual_stats virt[CMT_MAX_DEVICES + 1]; /* VMM, by device (the last: host) */
};

struct cmt_report {
    size_t n_stacks; /* the trace's stack ids: the holder tables' size */
    struct cmt_frames *frames;
    bool frames_taken; /* frames are the analysis's (its holders'): freed with it, not with the report */
    const struct cmt_report_options *opt;
    struct cmt_account_view *accounts; /* by device, then class */
    size_t n_accounts;
    struct cmt_site_row *leaks;
    size_t n_leaks;
    uint64_t leak_bytes, leak_count;
    uint64_t leak_bytes_by_kind[CMT_KIND_COUNT];
    uint64_t leak_once_bytes, leak_once_count;         /* sites that allocated once in the run */
    uint64_t leak_repeated_bytes, leak_repeated_count; /* sites that allocated more than once */
    struct cmt_growth_row *growth; /* candidates, fastest first */
    size_t n_growth;
    struct cmt_site_row *suppressed; /* live at exit but suppressed, by call site and suppression */
    size_t n_suppressed;
    uint64_t suppressed_bytes, suppressed_count; /* memory only, as leak_bytes and leak_count */
    /* The suppressions applied (opt's), and what each set aside here. */
    const struct cmt_report_suppression *suppressions;
    size_t n_suppressions;
    struct cmt_suppression_use *suppression_use;
    /* Live at exit in a caching allocator's cache (not leaks unless
     * include_cached), by call site, largest first; totals per holder. */
    struct cmt_site_row *held;
    size_t n_held;
    uint64_t held_bytes[CMT_HOLDER_COUNT], held_count[CMT_HOLDER_COUNT];
    uint8_t *holder_by_stack; /* by stack id: holder + 1 (0: not yet known) */
    uint8_t *cache_by_stack;  /* by stack id: cache holder + 1 */
    size_t n_stack_slots;
    struct cmt_failure_group *failures;
    size_t n_failures;
    /* Per failure the replay kept: CMT_FAILURE_PROBE, CMT_FAILURE_RETRY
     * (decided from what the thread asked next and the allocator the stack
     * goes through, by module: no symbols needed). */
    uint8_t *failure_flags;
    uint64_t failed_calls_probing, failed_calls_retrying; /* of trace.failed_allocs (the kept ones) */
    uint64_t failed_calls_fatal; /* of the kept ones, CMT_FAILURE_FATAL */
    int32_t exit_status;         /* what the process gave exit(); -1 unknown (older shim, did not exit) */
    uint64_t went_on_until;      /* its last allocation call or tensor (a failure before it was survived) */
    char **warnings;
    size_t n_warnings;
    struct cmt_forensics_report *forensics; /* NULL when the analysis ran without forensics */
    struct cmt_phases_view *phases;         /* NULL when the trace names no phase, mark or step */
    struct cmt_blocks_report *blocks;       /* PyTorch's block layer (blocks_report.h); NULL without one */
    /* Its tensors followed through the run (tensors_report.h): the tensor
     * pass's results and the view of them; NULL without the block layer. */
    struct cmt_tensor_pass *tensor_pass;
    struct cmt_tensors_report *tensors;
    /* PyTorch's tensors replayed under the usual settings (whatif_report.h),
     * when the analysis followed them and there were tensors; NULL else. */
    struct cmt_whatif_report *whatif;
    struct cmt_whatif *whatif_uncached; /* the engine of a cache-off trace's replay (owned) */
    struct cmt_ipc_report ipc;              /* memory shared with other processes (ipc_report.h) */
    struct cmt_report_trace trace;
    /* The holders' names (memory_holder.h), for the renderers. */
    const char *holder_name[CMT_HOLDER_COUNT]; /* "PyTorch", ... */
    const char *holder_key[CMT_HOLDER_COUNT];  /* "pytorch", ... */
    /* The replay's timeline, downsampled to CMT_TIMELINE_BUCKETS at most. */
    struct cmt_timeline_model timeline;
    /* The text chart's timeline: downsampled to chart_width buckets, when
     * there is a chart (charts: chart_width and chart_height set, and the
     * timeline holds some bucket). */
    bool charts;
    struct cmt_timeline_model chart;
    /* With site_floors; else empty (n 0). */
    struct cmt_site_floors floors;
    /* Sites that allocated memory (kinds that hold memory), in order of
     * their first allocation, with the bytes they allocated in all. */
    struct cmt_allocated_site *allocated;
    size_t n_allocated;
    /* Threads, device samples, failures and steps, one by one (Perfetto). */
    struct cmt_report_events events;
    /* --at: at, the replay stopped there, inside the trace; at_past_end,
     * the trace ended first, so the report covers the whole run as without
     * --at (and says so). */
    bool at, at_past_end;
    /* The usage views (usage_views.h), when the analysis followed them. */
    bool has_usage;
    struct cmt_calls_view calls;
    struct cmt_threads_view threads;
};

struct cmt_blocks_report;

int cmt_report_build(struct cmt_report *r, const struct cmt_analysis *a, const struct cmt_report_options *opt);
/* r->ipc from the replay (called by cmt_report_build, last: the canonical
 * ids it asks for come after every other row's). */
int cmt_ipc_report_build(struct cmt_report *r, const struct cmt_replay *rp);
void cmt_ipc_report_free(struct cmt_ipc_report *x);
void cmt_report_free(struct cmt_report *r);

/* Holders of a recorded stack's allocations (memory_holder.h), cached. */
enum cmt_holder cmt_report_holder(struct cmt_report *r, uint64_t stack);
enum cmt_holder cmt_report_cache(struct cmt_report *r, uint64_t stack);
/* What to do to see the tensors or arrays inside a holder's cache (one
 * sentence, no trailing period); "" for holders that are no cache. */
const char *cmt_holder_cache_advice(enum cmt_holder h);
/* The same when PyTorch's block layer recorded its tensors. */
const char *cmt_holder_tensors_advice(void);

/* Shared by the renderers. */
const char *cmt_class_name(unsigned cls);
void cmt_report_add_warning(struct cmt_report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* ns since the trace started, from a monotonic timestamp. */
uint64_t cmt_report_rel_ns(const struct cmt_report *r, uint64_t ts);
/* "account" label of a view: "Device 0", "Managed memory, device 0", "Pinned host memory". */
void cmt_account_label(const struct cmt_account_figures *acc, char *buf, size_t len);

#endif
