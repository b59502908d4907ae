/* SPDX-License-Identifier: MIT */
/* Traces followed for a live view, and what it shows of them (top.h). */
#include "top.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "block_layer.h"
#include "follow.h"
#include "frames.h"
#include "memory_holder.h"
#include "replay.h"
#include "trace_model.h"

#define MAX_PHASE_DEPTH 32
#define MAX_POLL_BACKOFF_NS 1000000000ull /* a source with nothing new is polled at least once a second */
#define DIR_SCAN_NS 1000000000ull

/* A phase name's figures, per device. */
struct phase_acc {
    uint32_t name_id;
    uint64_t entered;
    uint32_t open; /* open now, on any thread */
    uint64_t peak[CMT_MAX_DEVICES];
    uint64_t live_at_entry[CMT_MAX_DEVICES];
    uint64_t live_at_end[CMT_MAX_DEVICES];
    int64_t last_change[CMT_MAX_DEVICES];
};

/* A thread's open phases (name ids), innermost last. */
struct thread_marks {
    uint32_t tid;
    uint32_t n;
    uint32_t names[MAX_PHASE_DEPTH];
    uint32_t dropped; /* pushes past MAX_PHASE_DEPTH, popped first */
};

struct chart {
    uint64_t v[CMT_TOP_CHART];
    size_t head, n;
};

struct source {
    char *path;
    struct cmt_top *top;
    struct cmt_follow *f;
    struct cmt_replay_observer obs;
    enum cmt_top_state state;
    char how[512];
    bool wait_known;
    int wait_status;
    uint64_t next_poll_ns;
    unsigned idle;
    /* marks */
    struct thread_marks *threads;
    size_t n_threads, cap_threads;
    uint32_t last_push_tid;
    bool has_step;
    uint64_t step, steps_seen;
    uint64_t live_first_step[CMT_MAX_DEVICES], live_last_step[CMT_MAX_DEVICES];
    uint64_t *site_first_step, *site_last_step; /* by stack id: device-resident bytes at those steps' starts */
    size_t site_steps_cap;
    struct phase_acc *phases;
    size_t n_phases, cap_phases;
    /* PyTorch's block layer */
    bool blocks_seen;
    int64_t reserve[CMT_MAX_DEVICES], tensors[CMT_MAX_DEVICES];
    /* failed allocations */
    uint64_t failed[CMT_MAX_DEVICES], last_failed_size[CMT_MAX_DEVICES];
    uint32_t last_failed_stack[CMT_MAX_DEVICES];
    /* holder by stack id: 0 unknown, else enum cmt_holder + 1 */
    uint8_t *holder;
    size_t holder_cap;
    struct chart *charts[CMT_MAX_DEVICES];
    /* what cmt_top_processes hands out */
    struct cmt_top_process proc;
    struct cmt_top_device devs[CMT_MAX_DEVICES];
};

struct cmt_top {
    struct source **sources;
    size_t n_sources, cap_sources;
    char **dirs;
    size_t n_dirs;
    uint64_t next_dir_scan_ns;
    const struct cmt_top_process **order; /* cmt_top_processes */
    struct source **order_src;
    struct {
        uint64_t pid;
        int status;
    } waits[64];
    size_t n_waits;
    bool oom;
};

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void *grow(void *p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return p;
    size_t c = *cap ? *cap : 8;
    while (c < need)
        c *= 2;
    void *q = realloc(p, c * size);
    if (q) {
        memset((char *)q + *cap * size, 0, (c - *cap) * size);
        *cap = c;
    }
    return q;
}

const char *cmt_top_sort_name(enum cmt_top_sort s)
{
    static const char *const names[] = {"live", "peak", "count", "growth"};
    return s < CMT_TOP_SORT_N ? names[s] : "?";
}

const char *cmt_top_view_name(enum cmt_top_view v)
{
    static const char *const names[] = {"sites", "threads", "phases"};
    return v < CMT_TOP_VIEW_N ? names[v] : "?";
}

const char *cmt_top_state_name(enum cmt_top_state s)
{
    switch (s) {
    case CMT_TOP_WAITING:
        return "waiting";
    case CMT_TOP_RUNNING:
        return "running";
    case CMT_TOP_EXITED:
        return "exited";
    case CMT_TOP_STOPPED:
        return "stopped";
    case CMT_TOP_KILLED:
        return "killed";
    case CMT_TOP_INCOMPLETE:
        return "incomplete";
    case CMT_TOP_DAMAGED:
        return "damaged";
    }
    return "?";
}

/* ---- what a source keeps as it is read --------------------------------------- */

static struct cmt_account *device_account(const struct cmt_replay *r, int d)
{
    return cmt_replay_account(r, d, CMT_CLASS_DEVICE);
}

static uint64_t device_live(const struct cmt_replay *r, int d)
{
    const struct cmt_account *a = device_account(r, d);
    return a ? a->live : 0;
}

static struct thread_marks *thread_of(struct source *s, uint32_t tid)
{
    for (size_t i = 0; i < s->n_threads; i++)
        if (s->threads[i].tid == tid)
            return &s->threads[i];
    struct thread_marks *t = grow(s->threads, &s->cap_threads, s->n_threads + 1, sizeof *t);
    if (!t) {
        s->top->oom = true;
        return NULL;
    }
    s->threads = t;
    t[s->n_threads].tid = tid;
    return &t[s->n_threads++];
}

static struct phase_acc *phase_of(struct source *s, uint32_t name_id)
{
    for (size_t i = 0; i < s->n_phases; i++)
        if (s->phases[i].name_id == name_id)
            return &s->phases[i];
    struct phase_acc *p = grow(s->phases, &s->cap_phases, s->n_phases + 1, sizeof *p);
    if (!p) {
        s->top->oom = true;
        return NULL;
    }
    s->phases = p;
    p[s->n_phases].name_id = name_id;
    return &p[s->n_phases++];
}

/* The highest live bytes since the last mark go to the phases open since
 * then; each device's high mark restarts at its live bytes. */
static void fold_highs(struct source *s, const struct cmt_replay *r)
{
    for (int d = 0; d < CMT_MAX_DEVICES; d++) {
        if (!(r->device_mask >> d & 1))
            continue;
        struct cmt_account *a = device_account(r, d);
        if (!a)
            continue;
        for (size_t i = 0; i < s->n_phases; i++)
            if (s->phases[i].open && a->high > s->phases[i].peak[d])
                s->phases[i].peak[d] = a->high;
        a->high = a->live;
    }
}

static void site_cell_add(void *ctx, uint32_t stack, const struct cmt_site_cell *live)
{
    struct source *s = ctx;
    if (stack < s->site_steps_cap)
        s->site_last_step[stack] += live->bytes;
}

/* The call sites' device-resident bytes at a step's start (the first step's
 * are kept apart): what their growth per step is measured from. */
static void snapshot_sites(struct source *s, const struct cmt_replay *r)
{
    const struct cmt_trace_model *m = cmt_follow_model(s->f);
    size_t need = (size_t)m->n_stacks + 1;
    if (need > s->site_steps_cap) {
        size_t cap = s->site_steps_cap;
        uint64_t *a = grow(s->site_first_step, &cap, need, sizeof *a);
        if (a)
            s->site_first_step = a;
        size_t cap2 = s->site_steps_cap;
        uint64_t *b = a ? grow(s->site_last_step, &cap2, need, sizeof *b) : NULL;
        if (!a || !b || cap != cap2) {
            s->top->oom = true;
            return;
        }
        s->site_last_step = b;
        s->site_steps_cap = cap;
    }
    memset(s->site_last_step, 0, s->site_steps_cap * sizeof *s->site_last_step);
    for (int d = 0; d < CMT_MAX_DEVICES; d++)
        if (r->device_mask >> d & 1 && device_account(r, d))
            cmt_replay_account_cells(r, device_account(r, d), site_cell_add, s);
    if (s->steps_seen == 1)
        memcpy(s->site_first_step, s->site_last_step, s->site_steps_cap * sizeof *s->site_first_step);
}

static void on_mark(void *ctx, const struct cmt_event_in *e)
{
    struct source *s = ctx;
    const struct cmt_replay *r = cmt_follow_replay(s->f);
    if (e->api != CMT_API_MARK_PUSH && e->api != CMT_API_MARK_POP && e->api != CMT_API_MARK_STEP)
        return;
    fold_highs(s, r);
    if (e->api == CMT_API_MARK_STEP) {
        s->step = e->aux[CMT_MARK_AUX_ID];
        s->has_step = true;
        s->steps_seen++;
        for (int d = 0; d < CMT_MAX_DEVICES; d++) {
            s->live_last_step[d] = device_live(r, d);
            if (s->steps_seen == 1)
                s->live_first_step[d] = s->live_last_step[d];
        }
        snapshot_sites(s, r);
        return;
    }
    struct thread_marks *t = thread_of(s, e->tid);
    if (!t)
        return;
    if (e->api == CMT_API_MARK_PUSH) {
        if (t->n == MAX_PHASE_DEPTH) {
            t->dropped++;
            return;
        }
        uint32_t name = e->aux[CMT_MARK_AUX_NAME] <= UINT32_MAX ? (uint32_t)e->aux[CMT_MARK_AUX_NAME] : 0;
        t->names[t->n++] = name;
        s->last_push_tid = e->tid;
        struct phase_acc *p = phase_of(s, name);
        if (!p)
            return;
        p->entered++;
        p->open++;
        for (int d = 0; d < CMT_MAX_DEVICES; d++) {
            uint64_t live = device_live(r, d);
            p->live_at_entry[d] = live;
            if (live > p->peak[d])
                p->peak[d] = live;
        }
        return;
    }
    if (t->dropped) {
        t->dropped--;
        return;
    }
    if (!t->n)
        return;
    struct phase_acc *p = phase_of(s, t->names[--t->n]);
    if (!p)
        return;
    if (p->open)
        p->open--;
    for (int d = 0; d < CMT_MAX_DEVICES; d++) {
        uint64_t live = device_live(r, d);
        p->live_at_end[d] = live;
        p->last_change[d] = (int64_t)(live - p->live_at_entry[d]);
    }
}

/* PyTorch's reserve and tensors from its block layer (format.h). */
static int on_record(void *ctx, const struct cmt_replay *r, const struct cmt_replay_record *rec)
{
    (void)r;
    struct source *s = ctx;
    if (rec->type != CMT_REC_BLOCK || rec->device < 0 || rec->device >= CMT_MAX_DEVICES)
        return 0;
    int d = rec->device;
    s->blocks_seen = true;
    switch (rec->api) {
    case CMT_API_TORCH_SEGMENT_ALLOC:
    case CMT_API_TORCH_SEGMENT_MAP:
        s->reserve[d] += (int64_t)rec->size;
        break;
    case CMT_API_TORCH_SEGMENT_FREE:
    case CMT_API_TORCH_SEGMENT_UNMAP:
        s->reserve[d] -= (int64_t)rec->size;
        break;
    case CMT_API_TORCH_ALLOC:
        if (rec->result == 0)
            s->tensors[d] += (int64_t)cmt_bl_round(rec->size);
        break;
    case CMT_API_TORCH_FREE_REQUESTED:
        s->tensors[d] -= (int64_t)cmt_bl_round(rec->size);
        break;
    default:
        break;
    }
    return 0;
}

static int on_failure(void *ctx, const struct cmt_replay *r, const struct cmt_replay_in *e)
{
    (void)r;
    struct source *s = ctx;
    if (e->device < 0 || e->device >= CMT_MAX_DEVICES)
        return 0;
    s->failed[e->device]++;
    s->last_failed_size[e->device] = e->size;
    s->last_failed_stack[e->device] = e->stack;
    return 0;
}

/* ---- sources ------------------------------------------------------------------ */

static void source_close(struct source *s)
{
    if (!s)
        return;
    cmt_follow_close(s->f);
    free(s->path);
    free(s->threads);
    free(s->phases);
    free(s->site_first_step);
    free(s->site_last_step);
    free(s->holder);
    for (int d = 0; d < CMT_MAX_DEVICES; d++)
        free(s->charts[d]);
    free(s);
}

/* Opens the follower; a trace whose header is not there yet stays waiting. */
static int source_open(struct source *s)
{
    char err[480];
    struct cmt_follow_options fo = {.no_windows = true, .live_only = true, .on_mark = on_mark, .mark_ctx = s,
                                    .no_default_suppressions = true};
    if (cmt_follow_open(s->path, &fo, &s->f, err, sizeof err) != 0) {
        snprintf(s->how, sizeof s->how, "%s", err);
        s->f = NULL;
        return -1;
    }
    s->obs = (struct cmt_replay_observer){.ctx = s, .on_record = on_record, .on_failure = on_failure};
    if (cmt_follow_add_observer(s->f, &s->obs) != 0) {
        cmt_follow_close(s->f);
        s->f = NULL;
        snprintf(s->how, sizeof s->how, "out of memory");
        return -1;
    }
    s->state = CMT_TOP_RUNNING;
    s->how[0] = '\0';
    return 0;
}

static struct source *source_add(struct cmt_top *t, const char *path)
{
    for (size_t i = 0; i < t->n_sources; i++)
        if (!strcmp(t->sources[i]->path, path))
            return t->sources[i];
    struct source **v = grow(t->sources, &t->cap_sources, t->n_sources + 1, sizeof *v);
    struct source *s = v ? calloc(1, sizeof *s) : NULL;
    if (v)
        t->sources = v;
    if (s)
        s->path = strdup(path);
    if (!s || !s->path) {
        free(s);
        t->oom = true;
        return NULL;
    }
    s->top = t;
    s->state = CMT_TOP_WAITING;
    snprintf(s->how, sizeof s->how, "not opened yet");
    t->sources[t->n_sources++] = s;
    source_open(s);
    return s;
}

int cmt_top_new(struct cmt_top **out)
{
    struct cmt_top *t = calloc(1, sizeof *t);
    if (!t)
        return -1;
    *out = t;
    return 0;
}

void cmt_top_free(struct cmt_top *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n_sources; i++)
        source_close(t->sources[i]);
    free(t->sources);
    for (size_t i = 0; i < t->n_dirs; i++)
        free(t->dirs[i]);
    free(t->dirs);
    free(t->order);
    free(t->order_src);
    free(t);
}

static bool is_trace_name(const char *name)
{
    size_t n = strlen(name);
    return n > 4 && !strcmp(name + n - 4, ".bin") && name[0] != '.';
}

static void scan_dir(struct cmt_top *t, const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!is_trace_name(e->d_name))
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
            source_add(t, path);
    }
    closedir(d);
}

int cmt_top_add_path(struct cmt_top *t, const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(err, errlen, "%s: cannot read it: %s; give a trace file or a directory of traces", path,
                 strerror(errno));
        return -1;
    }
    if (S_ISDIR(st.st_mode)) {
        char **v = realloc(t->dirs, (t->n_dirs + 1) * sizeof *v);
        if (!v || !(v[t->n_dirs] = strdup(path))) {
            if (v)
                t->dirs = v;
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        t->dirs = v;
        t->n_dirs++;
        scan_dir(t, path);
        return 0;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file nor a directory: give a trace file or a directory of traces",
                 path);
        return -1;
    }
    struct source *s = source_add(t, path);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (!s->f) {
        snprintf(err, errlen, "%s", s->how);
        return -1;
    }
    return 0;
}

int cmt_top_add_trace(struct cmt_top *t, const char *path)
{
    return source_add(t, path) ? 0 : -1;
}

void cmt_top_set_wait_status(struct cmt_top *t, uint64_t pid, int wait_status)
{
    for (size_t i = 0; i < t->n_waits; i++)
        if (t->waits[i].pid == pid) {
            t->waits[i].status = wait_status;
            return;
        }
    if (t->n_waits < sizeof t->waits / sizeof t->waits[0]) {
        t->waits[t->n_waits].pid = pid;
        t->waits[t->n_waits++].status = wait_status;
    }
}

static bool wait_status_of(const struct cmt_top *t, uint64_t pid, int *status)
{
    for (size_t i = 0; i < t->n_waits; i++)
        if (t->waits[i].pid == pid) {
            *status = t->waits[i].status;
            return true;
        }
    return false;
}

static void describe_wait(char *buf, size_t len, int status)
{
    if (WIFEXITED(status))
        snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(buf, len, "killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    else
        snprintf(buf, len, "ended");
}

static bool same_host(const struct cmt_trace_model *m)
{
    char host[256];
    if (gethostname(host, sizeof host) != 0)
        return true;
    host[sizeof host - 1] = '\0';
    const char *h = cmt_model_string(m, m->hostname_id);
    return !*h || !strcmp(h, host);
}

/* How a trace whose reading is over ended. */
static void source_ended(struct source *s)
{
    const struct cmt_trace_model *m = cmt_follow_model(s->f);
    uint64_t pid = cmt_follow_info(s->f)->pid;
    int status;
    bool waited = wait_status_of(s->top, pid, &status);
    char w[96] = "";
    if (waited)
        describe_wait(w, sizeof w, status);
    if (m->has_end && m->end.reason == CMT_END_SIZE_LIMIT) {
        s->state = CMT_TOP_STOPPED;
        snprintf(s->how, sizeof s->how, "stopped recording: CUMEMTRACE_MAX_SIZE reached%s%s", *w ? "; " : "", w);
    } else if (m->has_end && m->end.reason == CMT_END_WRITE_ERROR) {
        s->state = CMT_TOP_STOPPED;
        snprintf(s->how, sizeof s->how, "stopped recording: the trace file could not grow%s%s", *w ? "; " : "",
                 w);
    } else {
        s->state = CMT_TOP_EXITED;
        snprintf(s->how, sizeof s->how, "%s", *w ? w : "wrote its end record at exit (its status is not recorded)");
    }
}

static void source_gone(struct source *s)
{
    const struct cmt_trace_model *m = cmt_follow_model(s->f);
    int status;
    if (wait_status_of(s->top, cmt_follow_info(s->f)->pid, &status)) {
        s->state = CMT_TOP_KILLED;
        char w[96];
        describe_wait(w, sizeof w, status);
        snprintf(s->how, sizeof s->how, "%s, without an end record", w);
    } else if (same_host(m)) {
        s->state = CMT_TOP_KILLED;
        snprintf(s->how, sizeof s->how, "ended without an end record: killed or crashed");
    } else {
        s->state = CMT_TOP_INCOMPLETE;
        snprintf(s->how, sizeof s->how, "no end record, and its process is not on this machine");
    }
}

static void chart_push(struct source *s, int d, uint64_t v)
{
    struct chart *c = s->charts[d];
    if (!c && !(c = s->charts[d] = calloc(1, sizeof *c))) {
        s->top->oom = true;
        return;
    }
    c->v[c->head] = v;
    c->head = (c->head + 1) % CMT_TOP_CHART;
    if (c->n < CMT_TOP_CHART)
        c->n++;
}

static bool source_done(const struct source *s)
{
    return s->state != CMT_TOP_RUNNING && s->state != CMT_TOP_WAITING;
}

static uint64_t source_poll(struct source *s, uint64_t now, bool force)
{
    if (source_done(s))
        return 0;
    if (!s->f) {
        if (!force && now < s->next_poll_ns)
            return 0;
        s->next_poll_ns = now + MAX_POLL_BACKOFF_NS / 4;
        if (source_open(s) != 0)
            return 0;
    }
    if (!force && now < s->next_poll_ns)
        return 0;
    const struct cmt_replay *r = cmt_follow_replay(s->f);
    uint64_t before = r->events;
    char err[480];
    int rc = cmt_follow_poll(s->f, err, sizeof err);
    /* whether its writer is gone: asked when a poll brought nothing (a
     * writer that writes runs), and at a forced poll (--once) */
    if (rc == 0 && !cmt_follow_ended(s->f) && (r->events == before || force) &&
        !cmt_follow_writer_running(s->f)) {
        /* gone: what it wrote before is all there (one more poll takes what
         * it committed since the last) */
        rc = cmt_follow_poll(s->f, err, sizeof err);
        if (rc == 0 && !cmt_follow_ended(s->f))
            source_gone(s);
    }
    if (rc != 0) {
        s->state = CMT_TOP_DAMAGED;
        snprintf(s->how, sizeof s->how, "%s", err);
    } else if (cmt_follow_ended(s->f)) {
        source_ended(s);
    }
    uint64_t n = r->events - before;
    for (int d = 0; d < CMT_MAX_DEVICES; d++)
        if (r->device_mask >> d & 1)
            chart_push(s, d, device_live(r, d));
    /* adaptive: a source with nothing new is read less often (up to once a
     * second); one that had something is read at every refresh */
    if (n) {
        s->idle = 0;
        s->next_poll_ns = 0;
    } else {
        if (s->idle < 16)
            s->idle++;
        uint64_t wait = 50000000ull << (s->idle > 5 ? 5 : s->idle);
        s->next_poll_ns = now + (wait > MAX_POLL_BACKOFF_NS ? MAX_POLL_BACKOFF_NS : wait);
    }
    return n;
}

uint64_t cmt_top_poll(struct cmt_top *t, bool force)
{
    uint64_t now = now_ns();
    if (t->n_dirs && (force || now >= t->next_dir_scan_ns)) {
        for (size_t i = 0; i < t->n_dirs; i++)
            scan_dir(t, t->dirs[i]);
        t->next_dir_scan_ns = now + DIR_SCAN_NS;
    }
    uint64_t n = 0;
    for (size_t i = 0; i < t->n_sources; i++)
        n += source_poll(t->sources[i], now, force);
    return n;
}

bool cmt_top_out_of_memory(const struct cmt_top *t)
{
    return t->oom;
}

bool cmt_top_all_ended(const struct cmt_top *t)
{
    for (size_t i = 0; i < t->n_sources; i++)
        if (!source_done(t->sources[i]))
            return false;
    return true;
}

/* ---- what is shown ---------------------------------------------------------------- */

static enum cmt_holder holder_of(struct source *s, uint32_t stack)
{
    if ((size_t)stack >= s->holder_cap) {
        uint8_t *v = grow(s->holder, &s->holder_cap, (size_t)stack + 1, 1);
        if (!v)
            return CMT_HOLDER_OTHER;
        s->holder = v;
    }
    if (!s->holder[stack]) {
        struct cmt_frames *fr = stack ? cmt_follow_frames(s->f) : NULL;
        s->holder[stack] = (uint8_t)((fr ? cmt_holder_of(fr, stack) : CMT_HOLDER_OTHER) + 1);
    }
    return (enum cmt_holder)(s->holder[stack] - 1);
}

struct holder_sum {
    struct source *s;
    uint64_t by[CMT_HOLDER_COUNT];
};

static void holder_add(void *ctx, uint32_t stack, const struct cmt_site_cell *live)
{
    struct holder_sum *h = ctx;
    if (live->bytes)
        h->by[holder_of(h->s, stack)] += live->bytes;
}

static void fill_command(struct source *s)
{
    const struct cmt_trace_model *m = cmt_follow_model(s->f);
    char *out = s->proc.command;
    size_t len = sizeof s->proc.command, at = 0;
    out[0] = '\0';
    for (uint32_t i = 0; m->arg_ids && i < m->argc && at + 1 < len; i++) {
        const char *a = cmt_model_string(m, m->arg_ids[i]);
        if (i == 0)
            a = cmt_basename(a);
        int w = snprintf(out + at, len - at, "%s%s", i ? " " : "", a);
        if (w < 0)
            break;
        at += (size_t)w;
    }
    if (at >= len)
        at = len - 1;
    /* a command line is the program's: no control characters on a terminal */
    for (size_t i = 0; i < at; i++)
        if ((unsigned char)out[i] < 0x20 || out[i] == 0x7f)
            out[i] = '?';
    if (!out[0])
        snprintf(out, len, "%s", cmt_basename(cmt_model_string(m, m->exe_id)));
}

static void site_label(struct source *s, uint32_t stack, char *buf, size_t len)
{
    if (!stack) {
        snprintf(buf, len, "(no stack)");
        return;
    }
    struct cmt_frames *fr = cmt_follow_frames(s->f);
    const struct cmt_stack_frames *sf = fr ? cmt_frames_get(fr, stack) : NULL;
    const struct cmt_frame *site = sf ? cmt_stack_site(sf) : NULL;
    if (!site) {
        snprintf(buf, len, "(stack %u)", stack);
        return;
    }
    cmt_frame_describe(site, buf, len);
    for (char *p = buf; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '?';
}

static void fill_process(struct source *s)
{
    struct cmt_top_process *p = &s->proc;
    /* how it ended, again: run --live may learn the wait status after the
     * END record was read */
    if (s->f && (s->state == CMT_TOP_EXITED || s->state == CMT_TOP_STOPPED))
        source_ended(s);
    else if (s->f && (s->state == CMT_TOP_KILLED || s->state == CMT_TOP_INCOMPLETE))
        source_gone(s);
    snprintf(p->path, sizeof p->path, "%s", s->path);
    p->state = s->state;
    snprintf(p->how, sizeof p->how, "%s", s->how);
    p->devices = s->devs;
    p->n_devices = 0;
    p->rank = -1;
    p->pid = 0;
    p->events = 0;
    p->has_step = false;
    p->phase[0] = '\0';
    p->command[0] = '\0';
    if (!s->f)
        return;
    const struct cmt_trace_model *m = cmt_follow_model(s->f);
    const struct cmt_replay *r = cmt_follow_replay(s->f);
    uint64_t start = cmt_follow_info(s->f)->start_monotonic_ns;
    p->pid = cmt_follow_info(s->f)->pid;
    p->rank = m->has_job && m->job.rank >= 0 ? m->job.rank : m->rank;
    p->events = r->events;
    p->elapsed_ns = r->last_ts > start ? r->last_ts - start : 0;
    p->has_step = s->has_step;
    p->step = s->step;
    fill_command(s);
    const struct thread_marks *cur = NULL;
    for (size_t i = 0; i < s->n_threads; i++)
        if (s->threads[i].n && (!cur || s->threads[i].tid == s->last_push_tid))
            cur = &s->threads[i];
    if (cur) {
        const char *name = cmt_model_string(m, cur->names[cur->n - 1]);
        snprintf(p->phase, sizeof p->phase, "%s", *name ? name : "(unnamed)");
        for (char *c = p->phase; *c; c++)
            if ((unsigned char)*c < 0x20 || *c == 0x7f)
                *c = '?';
    }
    bool blocks = s->blocks_seen || (m->has_allocator && m->allocator.state == CMT_BLOCKS_ON);
    for (int d = 0; d < CMT_MAX_DEVICES; d++) {
        const struct cmt_account *a = device_account(r, d);
        if (!(r->device_mask >> d & 1) || !a)
            continue;
        struct cmt_top_device *v = &s->devs[p->n_devices++];
        memset(v, 0, sizeof *v);
        v->device = d;
        v->live = a->live;
        v->live_count = a->live_count;
        v->peak = a->peak;
        v->peak_ns = a->peak_ts > start ? a->peak_ts - start : 0;
        v->reserve_from_blocks = blocks;
        v->reserve = blocks ? (uint64_t)(s->reserve[d] > 0 ? s->reserve[d] : 0) : 0;
        v->other = v->live > v->reserve ? v->live - v->reserve : 0;
        v->has_tensors = blocks;
        v->tensors = s->tensors[d] > 0 ? (uint64_t)s->tensors[d] : 0;
        if (s->steps_seen >= 2) {
            v->has_growth = true;
            v->growth_per_step = (int64_t)(s->live_last_step[d] - s->live_first_step[d]) / (int64_t)(s->steps_seen - 1);
        }
        v->failed = s->failed[d];
        v->last_failed_size = s->last_failed_size[d];
        if (v->failed)
            site_label(s, s->last_failed_stack[d], v->last_failed_site, sizeof v->last_failed_site);
        const struct chart *c = s->charts[d];
        if (c) {
            for (size_t i = 0; i < c->n; i++)
                v->chart[i] = c->v[(c->head + CMT_TOP_CHART - c->n + i) % CMT_TOP_CHART];
            v->n_chart = c->n;
        }
    }
}

/* Who holds each device's bytes, by the frames of their stacks: resolving
 * them is the one costly part (the symbolizer reads the binaries' DWARF
 * once per trace), so it is done for the processes shown in detail only. */
void cmt_top_detail(struct cmt_top *t, size_t i)
{
    if (!t->order_src || i >= t->n_sources)
        return;
    struct source *s = t->order_src[i];
    if (!s->f)
        return;
    const struct cmt_replay *r = cmt_follow_replay(s->f);
    for (size_t k = 0; k < s->proc.n_devices; k++) {
        struct cmt_top_device *v = &s->devs[k];
        const struct cmt_account *a = device_account(r, v->device);
        if (!a)
            continue;
        struct holder_sum h = {.s = s};
        cmt_replay_account_cells(r, a, holder_add, &h);
        if (!v->reserve_from_blocks)
            v->reserve = h.by[CMT_HOLDER_PYTORCH];
        v->cublas = h.by[CMT_HOLDER_CUBLAS];
        v->nccl = h.by[CMT_HOLDER_NCCL];
        uint64_t known = v->reserve + v->cublas + v->nccl;
        v->other = v->live > known ? v->live - known : 0;
        v->holders_known = true;
    }
}

static int by_rank(const void *pa, const void *pb)
{
    const struct source *a = *(struct source *const *)pa, *b = *(struct source *const *)pb;
    /* unknown ranks last */
    uint64_t ra = (uint64_t)a->proc.rank, rb = (uint64_t)b->proc.rank;
    if (ra != rb)
        return ra < rb ? -1 : 1;
    if (a->proc.pid != b->proc.pid)
        return a->proc.pid < b->proc.pid ? -1 : 1;
    return strcmp(a->path, b->path);
}

size_t cmt_top_processes(struct cmt_top *t, const struct cmt_top_process *const **out)
{
    const struct cmt_top_process **o = realloc(t->order, (t->n_sources + 1) * sizeof *o);
    struct source **os = o ? realloc(t->order_src, (t->n_sources + 1) * sizeof *os) : NULL;
    if (o)
        t->order = o;
    if (os)
        t->order_src = os;
    if (!o || !os) {
        t->oom = true;
        *out = NULL;
        return 0;
    }
    for (size_t i = 0; i < t->n_sources; i++) {
        fill_process(t->sources[i]);
        os[i] = t->sources[i];
    }
    if (t->n_sources > 1)
        qsort(os, t->n_sources, sizeof *os, by_rank);
    for (size_t i = 0; i < t->n_sources; i++)
        o[i] = &os[i]->proc;
    *out = o;
    return t->n_sources;
}

/* ---- views -------------------------------------------------------------------------- */

struct cell_row {
    uint64_t canonical;
    uint32_t stack;
    uint64_t live, count, at_peak;
    int64_t growth;
};

struct cell_list {
    struct source *s;
    const struct cmt_replay *r;
    const struct cmt_account *a;
    struct cmt_frames *fr;
    struct cell_row *rows;
    size_t n, cap;
    bool oom;
};

static void cell_collect(void *ctx, uint32_t stack, const struct cmt_site_cell *live)
{
    struct cell_list *l = ctx;
    struct cell_row *v = grow(l->rows, &l->cap, l->n + 1, sizeof *v);
    if (!v) {
        l->oom = true;
        return;
    }
    l->rows = v;
    struct cmt_site_cell now, peak;
    uint64_t at_peak = cmt_replay_site_cells(l->r, l->a, stack, &now, &peak) ? peak.bytes : 0;
    if (!live->bytes && !live->count && !at_peak)
        return; /* nothing now, nothing at the peak */
    int64_t growth = 0;
    struct source *s = l->s;
    if (s->steps_seen >= 2 && stack < s->site_steps_cap)
        growth = (int64_t)(s->site_last_step[stack] - s->site_first_step[stack]);
    v[l->n++] = (struct cell_row){.canonical = l->fr ? cmt_frames_canonical(l->fr, stack) : stack,
                                  .stack = stack,
                                  .live = live->bytes,
                                  .count = live->count,
                                  .at_peak = at_peak,
                                  .growth = growth};
}

static int by_canonical(const void *pa, const void *pb)
{
    const struct cell_row *a = pa, *b = pb;
    return a->canonical < b->canonical ? -1 : a->canonical > b->canonical;
}

static enum cmt_top_sort sort_key;

static int cmp_u64(uint64_t a, uint64_t b)
{
    return a > b ? -1 : a < b;
}

static int by_key(const void *pa, const void *pb)
{
    const struct cell_row *a = pa, *b = pb;
    int c = 0;
    switch (sort_key) {
    case CMT_TOP_SORT_PEAK:
        c = cmp_u64(a->at_peak, b->at_peak);
        break;
    case CMT_TOP_SORT_COUNT:
        c = cmp_u64(a->count, b->count);
        break;
    case CMT_TOP_SORT_GROWTH:
        c = a->growth > b->growth ? -1 : a->growth < b->growth;
        break;
    default:
        break;
    }
    if (!c)
        c = cmp_u64(a->live, b->live);
    return c ? c : by_canonical(a, b);
}

static struct source *source_at(struct cmt_top *t, size_t i, size_t d, const struct cmt_top_device **dev)
{
    if (!t->order_src || i >= t->n_sources)
        return NULL;
    struct source *s = t->order_src[i];
    if (!s->f || d >= s->proc.n_devices)
        return NULL;
    *dev = &s->devs[d];
    return s;
}

size_t cmt_top_sites(struct cmt_top *t, size_t i, size_t d, enum cmt_top_sort sort, struct cmt_top_site *rows,
                     size_t max)
{
    const struct cmt_top_device *dev;
    struct source *s = source_at(t, i, d, &dev);
    if (!s || !max)
        return 0;
    const struct cmt_replay *r = cmt_follow_replay(s->f);
    struct cell_list l = {.s = s, .r = r, .a = device_account(r, dev->device), .fr = cmt_follow_frames(s->f)};
    if (!l.a)
        return 0;
    cmt_replay_account_cells(r, l.a, cell_collect, &l);
    if (l.oom) {
        free(l.rows);
        t->oom = true;
        return 0;
    }
    /* one row per call site: stacks that differ in folded frames only are one */
    size_t n = 0;
    if (l.n > 1)
        qsort(l.rows, l.n, sizeof *l.rows, by_canonical);
    for (size_t k = 0; k < l.n; k++) {
        if (n && l.rows[n - 1].canonical == l.rows[k].canonical) {
            struct cell_row *g = &l.rows[n - 1];
            g->live += l.rows[k].live;
            g->count += l.rows[k].count;
            g->at_peak += l.rows[k].at_peak;
            g->growth += l.rows[k].growth;
            continue;
        }
        l.rows[n++] = l.rows[k];
    }
    sort_key = sort;
    if (n > 1)
        qsort(l.rows, n, sizeof *l.rows, by_key);
    uint64_t steps = s->steps_seen >= 2 ? s->steps_seen - 1 : 1;
    size_t out = 0;
    for (size_t k = 0; k < n && out < max; k++) {
        struct cmt_top_site *v = &rows[out++];
        site_label(s, l.rows[k].stack, v->label, sizeof v->label);
        v->live = l.rows[k].live;
        v->count = l.rows[k].count;
        v->at_peak = l.rows[k].at_peak;
        v->growth = l.rows[k].growth / (int64_t)steps;
    }
    free(l.rows);
    return out;
}

static enum cmt_top_sort thread_sort;

static int thread_by_key(const void *pa, const void *pb)
{
    const struct cmt_top_thread *a = pa, *b = pb;
    int c = thread_sort == CMT_TOP_SORT_COUNT ? cmp_u64(a->count, b->count) : 0;
    if (!c)
        c = cmp_u64(a->live, b->live);
    return c ? c : (a->tid > b->tid) - (a->tid < b->tid);
}

size_t cmt_top_threads(struct cmt_top *t, size_t i, size_t d, enum cmt_top_sort sort, struct cmt_top_thread *rows,
                       size_t max)
{
    const struct cmt_top_device *dev;
    struct source *s = source_at(t, i, d, &dev);
    if (!s || !max)
        return 0;
    const struct cmt_replay *r = cmt_follow_replay(s->f);
    const struct cmt_trace_model *m = cmt_follow_model(s->f);
    /* the live set, read at refresh: nothing is kept per event for this view */
    struct cmt_top_thread *all = NULL;
    size_t n = 0, cap = 0;
    size_t last = 0;
    for (size_t k = 0; k < cmt_live_set_end(&r->live); k++) {
        struct cmt_live l;
        if (!cmt_live_set_at(&r->live, k, &l) || l.device != dev->device || !cmt_kind_holds_memory(l.kind) ||
            cmt_class_of_allocation(l.kind, l.device) != CMT_CLASS_DEVICE)
            continue;
        if (!(n && all[last].tid == l.tid)) {
            size_t j = 0;
            while (j < n && all[j].tid != l.tid)
                j++;
            if (j == n) {
                struct cmt_top_thread *v = grow(all, &cap, n + 1, sizeof *v);
                if (!v) {
                    free(all);
                    t->oom = true;
                    return 0;
                }
                all = v;
                all[n++] = (struct cmt_top_thread){.tid = l.tid};
            }
            last = j;
        }
        all[last].live += l.size;
        all[last].count++;
    }
    thread_sort = sort;
    if (n > 1)
        qsort(all, n, sizeof *all, thread_by_key);
    size_t out = n < max ? n : max;
    for (size_t k = 0; k < out; k++) {
        rows[k] = all[k];
        for (size_t j = 0; j < m->n_threads; j++)
            if (m->threads[j].tid == rows[k].tid) {
                snprintf(rows[k].name, sizeof rows[k].name, "%s", cmt_model_string(m, m->threads[j].name_id));
                break;
            }
        for (char *c = rows[k].name; *c; c++)
            if ((unsigned char)*c < 0x20 || *c == 0x7f)
                *c = '?';
    }
    free(all);
    return out;
}

static enum cmt_top_sort phase_sort;

static int phase_by_key(const void *pa, const void *pb)
{
    const struct cmt_top_phase *a = pa, *b = pb;
    int c = 0;
    if (phase_sort == CMT_TOP_SORT_COUNT)
        c = cmp_u64(a->entered, b->entered);
    else if (phase_sort == CMT_TOP_SORT_GROWTH)
        c = a->last_change > b->last_change ? -1 : a->last_change < b->last_change;
    else if (phase_sort == CMT_TOP_SORT_LIVE)
        c = cmp_u64(a->live_at_end, b->live_at_end);
    if (!c)
        c = cmp_u64(a->peak, b->peak);
    return c ? c : strcmp(a->name, b->name);
}

size_t cmt_top_phases(struct cmt_top *t, size_t i, size_t d, enum cmt_top_sort sort, struct cmt_top_phase *rows,
                      size_t max)
{
    const struct cmt_top_device *dev;
    struct source *s = source_at(t, i, d, &dev);
    if (!s || !max)
        return 0;
    const struct cmt_trace_model *m = cmt_follow_model(s->f);
    const struct cmt_replay *r = cmt_follow_replay(s->f);
    int dv = dev->device;
    struct cmt_top_phase *all = s->n_phases ? calloc(s->n_phases, sizeof *all) : NULL;
    if (s->n_phases && !all) {
        t->oom = true;
        return 0;
    }
    const struct cmt_account *a = device_account(r, dv);
    for (size_t k = 0; k < s->n_phases; k++) {
        const struct phase_acc *p = &s->phases[k];
        struct cmt_top_phase *v = &all[k];
        const char *name = cmt_model_string(m, p->name_id);
        snprintf(v->name, sizeof v->name, "%s", *name ? name : "(unnamed)");
        for (char *c = v->name; *c; c++)
            if ((unsigned char)*c < 0x20 || *c == 0x7f)
                *c = '?';
        v->entered = p->entered;
        v->open = p->open > 0;
        v->peak = p->peak[dv];
        /* an open phase's peak includes what happened since the last mark */
        if (v->open && a && a->high > v->peak)
            v->peak = a->high;
        v->live_at_end = v->open ? dev->live : p->live_at_end[dv];
        v->last_change = p->last_change[dv];
    }
    phase_sort = sort;
    if (s->n_phases > 1)
        qsort(all, s->n_phases, sizeof *all, phase_by_key);
    size_t out = s->n_phases < max ? s->n_phases : max;
    if (out)
        memcpy(rows, all, out * sizeof *rows);
    free(all);
    return out;
}
