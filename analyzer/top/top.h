/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_TOP_H
#define CUMEMTRACE_ANALYZER_TOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* `cumemtrace top` (docs/top.md): traces followed while their processes
 * write them, and what a live view shows of each, made at refresh only.
 *
 * Each trace is one follower (analyzer/follow/: the reader's follow mode
 * into one replay kept between polls, no windows), so a poll decodes only
 * what was committed since the last one and an event costs the reader and
 * the replay, nothing here: live bytes, peaks and call sites are the
 * replay's own accounts, read at refresh. What this layer adds per event is
 * nothing; per mark (phase, step) a few words; per failed allocation and
 * per PyTorch block record a counter.
 *
 * Sources: trace files, directories (every *.bin in them, new ones picked
 * up as their processes start) and manifests (`run --live`: the trace paths
 * the processes of the run append, CUMEMTRACE_MANIFEST). */

enum cmt_top_state {
    CMT_TOP_WAITING,  /* no trace to read yet (its header is not written), or unreadable for now */
    CMT_TOP_RUNNING,  /* its process is writing it */
    CMT_TOP_EXITED,   /* the process exited: the END record */
    CMT_TOP_STOPPED,  /* the writer stopped early (size limit, write error): the END record says which */
    CMT_TOP_KILLED,   /* the process is gone without an END record: killed or crashed */
    CMT_TOP_INCOMPLETE, /* a trace without END whose writer is not on this machine (copied, other host) */
    CMT_TOP_DAMAGED,  /* the reader stopped at damage: figures up to there */
};

enum cmt_top_sort { CMT_TOP_SORT_LIVE, CMT_TOP_SORT_PEAK, CMT_TOP_SORT_COUNT, CMT_TOP_SORT_GROWTH, CMT_TOP_SORT_N };
/* "live", "peak", "count", "growth". */
const char *cmt_top_sort_name(enum cmt_top_sort s);

#define CMT_TOP_CHART 120 /* samples of live bytes kept per device, one per poll */
#define CMT_TOP_SITE_LABEL 200

/* The figures of one device of one process, as of the last poll. */
struct cmt_top_site {
    char label[CMT_TOP_SITE_LABEL]; /* the call site: "fn at file.c:12", a Python line, "(no stack)" */
    uint64_t live, count;           /* device-resident bytes live now from it */
    uint64_t at_peak;               /* its bytes at the device's peak */
    int64_t growth;                 /* per step since the first step; 0 without steps */
};

struct cmt_top_thread {
    uint32_t tid;
    char name[32];
    uint64_t live, count;
};

struct cmt_top_phase {
    char name[96];
    uint64_t entered;
    bool open;
    uint64_t peak;        /* the device's highest live while it was open */
    uint64_t live_at_end; /* live when it last closed (or now when open) */
    int64_t last_change;  /* live at its last close minus live at that entry */
};

struct cmt_top_device {
    int32_t device;
    uint64_t live, live_count, peak;
    uint64_t peak_ns; /* since the trace started */
    /* Who holds the live bytes (memory_holder.h): PyTorch's reserve from its
     * block layer's segments when recorded, else by the frames of the
     * allocations' stacks; cuBLAS, NCCL; other is the rest. */
    uint64_t reserve, cublas, nccl, other;
    bool holders_known; /* cmt_top_detail was called: cuBLAS, NCCL (and the reserve by frames) are filled */
    bool reserve_from_blocks;
    bool has_tensors; /* the block layer is on: PyTorch's tensors live now */
    uint64_t tensors;
    bool has_growth;
    int64_t growth_per_step; /* live at the latest step's start minus at the first's, per step */
    uint64_t failed;
    uint64_t last_failed_size;
    char last_failed_site[CMT_TOP_SITE_LABEL];
    uint64_t chart[CMT_TOP_CHART]; /* oldest first */
    size_t n_chart;
};

struct cmt_top_process {
    char path[512];
    uint64_t pid;
    int64_t rank; /* -1 unknown */
    char command[160];
    enum cmt_top_state state;
    char how[512];   /* how it ended, or why it is waiting or damaged */
    uint64_t events; /* allocation and release events replayed */
    uint64_t elapsed_ns;
    bool has_step;
    uint64_t step;
    char phase[96]; /* the innermost open phase ("" none) */
    struct cmt_top_device *devices;
    size_t n_devices;
};

/* Views of one process's device (the live view's lower half). */
enum cmt_top_view { CMT_TOP_VIEW_SITES, CMT_TOP_VIEW_THREADS, CMT_TOP_VIEW_PHASES, CMT_TOP_VIEW_N };
const char *cmt_top_view_name(enum cmt_top_view v);

struct cmt_top;

/* Returns 0, or -1 when out of memory. */
int cmt_top_new(struct cmt_top **out);
void cmt_top_free(struct cmt_top *t);
/* A trace file, or a directory whose *.bin files are followed (found at
 * each poll). Returns 0, or -1 with the reason in err (a path that is
 * neither). */
int cmt_top_add_path(struct cmt_top *t, const char *path, char *err, size_t errlen);
/* A trace file that may not hold a trace yet (a process starting): it is
 * shown waiting until it does. Returns 0, or -1 when out of memory. */
int cmt_top_add_trace(struct cmt_top *t, const char *path);
/* How the process pid ended, from its parent's wait status (`run --live`
 * knows it; a trace does not record it). */
void cmt_top_set_wait_status(struct cmt_top *t, uint64_t pid, int wait_status);

/* Reads what was committed since the last poll in every trace (ended ones
 * are not read again; sources with nothing new are polled less often, up to
 * once a second, unless force). Returns the events read. */
uint64_t cmt_top_poll(struct cmt_top *t, bool force);
/* Whether every trace ended (exited, stopped, killed, damaged). */
bool cmt_top_all_ended(const struct cmt_top *t);
/* True once the analyzer ran out of memory (what is shown may miss rows). */
bool cmt_top_out_of_memory(const struct cmt_top *t);

/* What to show: every process with its devices, ordered by rank, then
 * pid, then path. Valid until the next call or poll; the views below take
 * the index in this order. */
size_t cmt_top_processes(struct cmt_top *t, const struct cmt_top_process *const **out);
/* Fills the holders of process i's devices (its index in the order of
 * cmt_top_processes): reading them needs the call sites' frames, so only
 * the processes shown in detail ask (until the next cmt_top_processes). */
void cmt_top_detail(struct cmt_top *t, size_t i);
/* The rows of a view of process i, device index d (in its devices), sorted
 * by sort, at most max rows: sites (struct cmt_top_site), threads
 * (struct cmt_top_thread) or phases (struct cmt_top_phase). Returns the
 * rows written. */
size_t cmt_top_sites(struct cmt_top *t, size_t i, size_t d, enum cmt_top_sort sort, struct cmt_top_site *rows,
                     size_t max);
size_t cmt_top_threads(struct cmt_top *t, size_t i, size_t d, enum cmt_top_sort sort, struct cmt_top_thread *rows,
                       size_t max);
size_t cmt_top_phases(struct cmt_top *t, size_t i, size_t d, enum cmt_top_sort sort, struct cmt_top_phase *rows,
                      size_t max);

/* What `top --once` prints (the renderers' model, renderers.h's
 * CMT_VIEW_TOP): every process, its devices, max_sites call sites each. */
struct cmt_top_snapshot {
    struct cmt_top *top;
    enum cmt_top_sort sort;
    size_t max_sites;
};

/* "running", "exited", "killed", ...: JSON values and the text's state column. */
const char *cmt_top_state_name(enum cmt_top_state s);

#endif
