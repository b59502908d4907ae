/* SPDX-License-Identifier: MIT */
#include "recorder.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "arena.h"
#include "cmt_version.h"
#include "config.h"
#include "log.h"
#include "meta_records.h"
#include "job_identity.h"
#include "path_template.h"
#include "shim.h"

struct cmt_recorder cmt_recorder = {
    .start_lock = PTHREAD_MUTEX_INITIALIZER,
    .generation = 1,
};

__thread struct cmt_thread cmt_thread_state __attribute__((tls_model("initial-exec")));

/* ---- strings -------------------------------------------------------------- */

struct string_entry {
    uint64_t hash;
    uint32_t id;
    uint32_t len;
    const char *text;
};

static struct string_entry *string_table;
static uint32_t string_cap, string_count;

static uint64_t hash_bytes(const void *data, size_t len)
{
    /* FNV-1a: strings are few and short; simplicity wins. */
    const uint8_t *p = data;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h | 1;
}

static bool string_table_grow(void)
{
    uint32_t cap = string_cap ? string_cap * 2 : 256;
    struct string_entry *t = cmt_arena_alloc_pages(cap * sizeof *t);
    if (!t)
        return false;
    for (uint32_t i = 0; i < string_cap; i++) {
        struct string_entry *e = &string_table[i];
        if (!e->hash)
            continue;
        uint32_t j = (uint32_t)e->hash & (cap - 1);
        while (t[j].hash)
            j = (j + 1) & (cap - 1);
        t[j] = *e;
    }
    string_table = t; /* the old block is abandoned: arena memory is never reused */
    string_cap = cap;
    return true;
}

uint32_t cmt_recorder_intern_string_locked(const char *s, size_t len)
{
    if (len > CMT_MAX_META_RECORD - 32)
        len = CMT_MAX_META_RECORD - 32;
    uint64_t h = hash_bytes(s, len);
    if ((string_count + 1) * 2 > string_cap && !string_table_grow())
        return 0;
    uint32_t j = (uint32_t)h & (string_cap - 1);
    for (; string_table[j].hash; j = (j + 1) & (string_cap - 1)) {
        struct string_entry *e = &string_table[j];
        if (e->hash == h && e->len == len && memcmp(e->text, s, len) == 0)
            return e->id;
    }
    char *copy = cmt_arena_alloc(len + 1);
    if (!copy || !cmt_meta_write_string_locked(&cmt_recorder.tf, &cmt_recorder.meta, cmt_recorder.next_string_id + 1,
                                                s, len))
        return 0;
    uint32_t id = ++cmt_recorder.next_string_id;
    memcpy(copy, s, len);
    copy[len] = '\0';
    string_table[j] = (struct string_entry){h, id, (uint32_t)len, copy};
    string_count++;
    return id;
}

static uint32_t intern_cstr_locked(const char *s)
{
    return cmt_recorder_intern_string_locked(s, strlen(s));
}

/* ---- process description ------------------------------------------------- */

static size_t read_small_file(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    size_t len = 0;
    while (len < cap) {
        ssize_t n = read(fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    return len;
}

static void write_process_record_locked(const char *hostname, int64_t rank)
{
    static char cmdline[8192];
    static uint32_t arg_ids[256];
    size_t len = read_small_file("/proc/self/cmdline", cmdline, sizeof cmdline - 1);
    cmdline[len] = '\0';
    uint32_t argc = 0;
    for (size_t off = 0; off < len && argc < 256; argc++) {
        size_t l = strnlen(cmdline + off, len - off);
        arg_ids[argc] = cmt_recorder_intern_string_locked(cmdline + off, l);
        off += l + 1;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        cwd[0] = '\0';
    uint32_t exe_id = intern_cstr_locked(exe);
    uint32_t host_id = intern_cstr_locked(hostname);
    uint32_t cwd_id = intern_cstr_locked(cwd);

    struct cmt_meta_process p = {
        .pid = (uint64_t)getpid(),
        .ppid = (uint64_t)getppid(),
        .exe_id = exe_id,
        .argc = argc,
        .arg_ids = arg_ids,
        .host_id = host_id,
        .rank = rank,
        .cwd_id = cwd_id,
    };
    cmt_meta_write_process_locked(&cmt_recorder.tf, &cmt_recorder.meta, &p);
}

/* The JOB record (format.h): who this process is in a job of several. */
static void write_job_record_locked(const struct cmt_job_identity *job)
{
    static struct cmt_meta_job_var ids[CMT_JOB_MAX_VARS];
    for (size_t i = 0; i < job->nvars; i++) {
        ids[i].name_id = intern_cstr_locked(job->vars[i].name);
        ids[i].value_id = intern_cstr_locked(job->vars[i].value);
    }
    struct cmt_meta_job j = {
        .ts = cmt_now_ns(),
        .source = (uint32_t)job->source,
        .rank = job->rank,
        .local_rank = job->local_rank,
        .world_size = job->world_size,
        .local_world_size = job->local_world_size,
        .job_id = job->job_id[0] ? intern_cstr_locked(job->job_id) : 0,
        .nvars = job->nvars,
        .vars = ids,
    };
    cmt_meta_write_job_locked(&cmt_recorder.tf, &cmt_recorder.meta, &j);
}

static void write_config_record_locked(void)
{
    struct cmt_meta_config c = {
        .stack_depth = cmt_config.stack_depth,
        .free_stacks = cmt_config.free_stacks,
        .sample_ms = cmt_config.sample_ms,
        .max_size = cmt_config.max_size,
        .version_id = intern_cstr_locked(CMT_VERSION),
    };
    cmt_meta_write_config_locked(&cmt_recorder.tf, &cmt_recorder.meta, &c);
}

/* The manifest (CUMEMTRACE_MANIFEST, set by `cumemtrace run --check`): one
 * line per trace a process of the run writes, its path; and one line per
 * trace it could not create or keep, so that the run never reads "no trace"
 * as "no CUDA call" (docs/check.md, "The manifest"):
 *     !create PID REASON<TAB>PATH      no trace: PATH could not be created
 *     !stop PID REASON<TAB>PATH        PATH stopped recording on a write error
 * REASON has no tab; PATH comes last. One write with O_APPEND: lines from
 * concurrent processes never mix. */
static void append_manifest_line(const char *prefix, const char *path)
{
    if (!cmt_config.manifest_path[0])
        return;
    int fd = open(cmt_config.manifest_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return;
    char line[PATH_MAX + 320];
    size_t plen = strlen(prefix), len = strnlen(path, PATH_MAX);
    if (plen > sizeof line - PATH_MAX - 2)
        plen = sizeof line - PATH_MAX - 2;
    memcpy(line, prefix, plen);
    memcpy(line + plen, path, len);
    len += plen;
    line[len++] = '\n';
    ssize_t w = write(fd, line, len);
    (void)w;
    close(fd);
}

static void append_manifest(const char *trace_path)
{
    append_manifest_line("", trace_path);
}

/* Appends s to buf at *len, cut to fit cap (no stdio on a hook's path). */
static void put_text(char *buf, size_t cap, size_t *len, const char *s)
{
    while (*s && *len + 1 < cap)
        buf[(*len)++] = *s++;
    buf[*len] = '\0';
}

static void append_manifest_failure(const char *what, const char *reason, const char *path)
{
    char prefix[300], pid[24];
    size_t len = 0, n = sizeof pid - 1;
    pid[n] = '\0';
    for (unsigned long v = (unsigned long)getpid(); n == sizeof pid - 1 || v; v /= 10)
        pid[--n] = (char)('0' + v % 10);
    put_text(prefix, sizeof prefix, &len, "!");
    put_text(prefix, sizeof prefix, &len, what);
    put_text(prefix, sizeof prefix, &len, " ");
    put_text(prefix, sizeof prefix, &len, pid + n);
    put_text(prefix, sizeof prefix, &len, " ");
    put_text(prefix, sizeof prefix, &len, reason);
    put_text(prefix, sizeof prefix, &len, "\t");
    append_manifest_line(prefix, path);
}

/* ---- start, threads, shutdown --------------------------------------------- */

static const struct cmt_recorder_stages *stages;

void cmt_recorder_set_stages(const struct cmt_recorder_stages *s)
{
    stages = s;
}

/* Calls that re-entered the shim before this process's trace existed:
 * added to the header when it is created (cmt_recorder_count_nested). */
static uint64_t nested_before_trace;
static void fold_nested_before_trace(void);

/* The exit sample (sampler.h). Taken by an exit handler rather than the
 * shim's destructor: exit handlers run before shared objects' destructors,
 * libcuda's among them, so the driver still answers. Registered at the first
 * start, it runs after the handlers the program and its libraries register
 * later (the runtime's included). */
static int exit_status = -1; /* what the program passed to exit() (or returned from main); -1 unknown */

static void take_exit_sample(int status, void *arg)
{
    (void)arg;
    exit_status = status & 0xff; /* what the parent's wait() sees */
    cmt_internal_enter();
    pthread_mutex_lock(&cmt_recorder.start_lock);
    if (cmt_recorder.state == CMT_RECORDER_ACTIVE && stages && stages->at_exit)
        stages->at_exit();
    pthread_mutex_unlock(&cmt_recorder.start_lock);
    cmt_internal_leave();
}

bool cmt_recorder_start(void)
{
    bool ok = false, started = false;
    /* Off for good (disabled, failed, shut down): never touch the lock. */
    if (__atomic_load_n(&cmt_recorder.state, __ATOMIC_ACQUIRE) == CMT_RECORDER_OFF)
        return false;
    cmt_shim_ensure_loaded();
    pthread_mutex_lock(&cmt_recorder.start_lock);
    int state = cmt_recorder.state;
    if (state != CMT_RECORDER_UNSTARTED) {
        ok = state == CMT_RECORDER_ACTIVE;
        goto out;
    }
    if (cmt_config.disabled) {
        cmt_recorder.state = CMT_RECORDER_OFF;
        goto out;
    }
    char hostname[256];
    if (gethostname(hostname, sizeof hostname) != 0)
        strcpy(hostname, "localhost");
    hostname[sizeof hostname - 1] = '\0';
    /* Under the start lock: one process-wide copy (8 KiB, not on a thread's stack). */
    static struct cmt_job_identity job;
    cmt_job_identity_read(&job);
    struct cmt_template_vars vars = {
        .pid = (long)getpid(),
        .hostname = hostname,
        .start_time = (uint64_t)time(NULL),
        .rank = job.rank_text[0] ? job.rank_text : NULL,
    };
    char path[PATH_MAX];
    if (cmt_expand_path_template(cmt_config.output_template, &vars, path, sizeof path) != 0) {
        cmt_log_warning("CUMEMTRACE_OUTPUT expands to a path longer than %d bytes; running without tracing: give a "
                        "shorter template",
                        PATH_MAX - 1);
        append_manifest_failure("create", "the path it expands to is too long", cmt_config.output_template);
        cmt_recorder.state = CMT_RECORDER_OFF;
        goto out;
    }
    const char *special = cmt_trace_special_path(path);
    if (special) {
        cmt_log_warning("CUMEMTRACE_OUTPUT %s is %s, not a place for a trace file; running without tracing: set "
                        "CUMEMTRACE_OUTPUT to a file path such as trace.%%p.bin",
                        path, special);
        char reason[64];
        size_t len = 0;
        put_text(reason, sizeof reason, &len, "it is ");
        put_text(reason, sizeof reason, &len, special);
        append_manifest_failure("create", reason, path);
        cmt_recorder.state = CMT_RECORDER_OFF;
        goto out;
    }
    struct cmt_trace_create_options opt = {
        .max_size = cmt_config.max_size,
        .pid = (uint32_t)getpid(),
        .extra_flags = cmt_recorder.forked_child ? CMT_FILE_FLAG_FORKED_CHILD : 0,
        .populate = cmt_config.populate,
    };
    int rc = cmt_trace_create(&cmt_recorder.tf, path, &opt);
    if (rc != 0) {
        cmt_log_warning("cannot create trace file %s: %s; running without tracing: set CUMEMTRACE_OUTPUT to a "
                        "path in a writable directory",
                        path, strerror(-rc));
        append_manifest_failure("create", rc == -EEXIST ? "every candidate name is taken" : strerror(-rc), path);
        cmt_recorder.state = CMT_RECORDER_OFF;
        goto out;
    }
    cmt_clock_ready();
    cmt_meta_stream_init(&cmt_recorder.meta);
    cmt_recorder.next_string_id = 0;
    cmt_recorder.next_stack_id = 0;
    cmt_recorder.next_module_id = 0;
    string_table = NULL;
    string_cap = string_count = 0;
    if (stages && stages->trace_reset)
        stages->trace_reset();

    pthread_mutex_lock(&cmt_recorder.meta.lock);
    write_config_record_locked();
    write_process_record_locked(hostname, job.rank);
    write_job_record_locked(&job);
    if (stages && stages->trace_head_locked)
        stages->trace_head_locked();
    pthread_mutex_unlock(&cmt_recorder.meta.lock);

    /* on_exit rather than atexit: the handler learns the exit status, which
     * the END record keeps (check tells a failed allocation the program did
     * not survive from one it caught by it: docs/check.md). */
    static bool exit_handler_registered; /* inherited by forked children, as the handler is */
    if (!exit_handler_registered)
        exit_handler_registered = on_exit(take_exit_sample, NULL) == 0;
    if (!cmt_config.quiet)
        cmt_log_info("writing trace to %s", cmt_recorder.tf.path);
    append_manifest(cmt_recorder.tf.path);
    __atomic_store_n(&cmt_recorder.state, CMT_RECORDER_ACTIVE, __ATOMIC_RELEASE);
    fold_nested_before_trace();
    ok = true;
    started = true;
out:
    pthread_mutex_unlock(&cmt_recorder.start_lock);
    /* Outside the start lock: a note takes the metadata lock. */
    if (started && stages && stages->trace_started)
        stages->trace_started();
    return ok;
}

bool cmt_recorder_thread_setup(struct cmt_thread *t)
{
    memset(&t->stream, 0, sizeof t->stream);
    /* A forked child's thread, or a thread of a restarted recorder: the
     * first timestamp anchors afresh. */
    t->stream.tid = (uint32_t)syscall(SYS_gettid);
    t->generation = cmt_recorder.generation;

    char name[17] = {0};
    if (prctl(PR_GET_NAME, name) != 0)
        return true;
    pthread_mutex_lock(&cmt_recorder.meta.lock);
    uint32_t name_id = cmt_recorder_intern_string_locked(name, strnlen(name, 16));
    if (name_id)
        cmt_meta_write_thread_locked(&cmt_recorder.tf, &cmt_recorder.meta, t->stream.tid, name_id);
    pthread_mutex_unlock(&cmt_recorder.meta.lock);
    return true;
}

/* Moves the calls counted before the trace existed into its header. Runs
 * once the recorder is active; a count added meanwhile by another thread
 * is moved by that thread itself (cmt_recorder_count_nested). */
/* Adds n to a counter of the header stored as a checked word (format.h):
 * the count and its check in one store, lock-free (signal handlers count
 * too). A word still zero (never stored) counts from 0. */
static void add_to_checked_counter(uint64_t *word, uint32_t offset, uint64_t n)
{
    uint64_t old = __atomic_load_n(word, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(word, &old, cmt_checked_word((old & CMT_CHECKED_VALUE_MASK) + n, offset),
                                        false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

static void fold_nested_before_trace(void)
{
    struct cmt_file_header *hdr = __atomic_load_n(&cmt_recorder.tf.header, __ATOMIC_ACQUIRE);
    uint64_t n = __atomic_exchange_n(&nested_before_trace, 0, __ATOMIC_ACQ_REL);
    if (n && hdr)
        add_to_checked_counter(&hdr->reserved[CMT_HEADER_UNRECORDED_NESTED],
                               CMT_HEADER_RESERVED_OFFSET(CMT_HEADER_UNRECORDED_NESTED), n);
}

void cmt_recorder_count_nested(void)
{
    /* The header stays mapped until the process ends or forks; a fork child
     * forgets it before unmapping it (cmt_trace_abandon). */
    int state = __atomic_load_n(&cmt_recorder.state, __ATOMIC_ACQUIRE);
    struct cmt_file_header *hdr = __atomic_load_n(&cmt_recorder.tf.header, __ATOMIC_ACQUIRE);
    if (hdr && state == CMT_RECORDER_ACTIVE) {
        add_to_checked_counter(&hdr->reserved[CMT_HEADER_UNRECORDED_NESTED],
                               CMT_HEADER_RESERVED_OFFSET(CMT_HEADER_UNRECORDED_NESTED), 1);
    } else if (state == CMT_RECORDER_UNSTARTED) {
        __atomic_fetch_add(&nested_before_trace, 1, __ATOMIC_ACQ_REL);
        /* The trace may have started in between, its fold done already. */
        if (__atomic_load_n(&cmt_recorder.state, __ATOMIC_ACQUIRE) == CMT_RECORDER_ACTIVE)
            fold_nested_before_trace();
    }
}

void cmt_recorder_note(enum cmt_note_source source, const char *text)
{
    if (__atomic_load_n(&cmt_recorder.state, __ATOMIC_ACQUIRE) != CMT_RECORDER_ACTIVE)
        return;
    cmt_internal_enter();
    pthread_mutex_lock(&cmt_recorder.meta.lock);
    uint32_t text_id = intern_cstr_locked(text);
    if (text_id)
        cmt_meta_write_note_locked(&cmt_recorder.tf, &cmt_recorder.meta, cmt_now_ns(), (uint32_t)source, text_id);
    pthread_mutex_unlock(&cmt_recorder.meta.lock);
    cmt_internal_leave();
}

void cmt_recorder_write_device(int32_t ordinal, const char *name, uint64_t total, const uint8_t *uuid)
{
    if (ordinal < 0 || __atomic_load_n(&cmt_recorder.state, __ATOMIC_ACQUIRE) != CMT_RECORDER_ACTIVE)
        return;
    cmt_internal_enter();
    pthread_mutex_lock(&cmt_recorder.meta.lock);
    uint32_t name_id = name && *name ? intern_cstr_locked(name) : 0;
    cmt_meta_write_device_locked(&cmt_recorder.tf, &cmt_recorder.meta, ordinal, name_id, total, uuid);
    pthread_mutex_unlock(&cmt_recorder.meta.lock);
    cmt_internal_leave();
}

void cmt_recorder_write_allocator(enum cmt_framework framework, const char *version, enum cmt_blocks_state state,
                                  const char *backend, const char *alloc_conf, const char *cuda_alloc_conf)
{
    if (__atomic_load_n(&cmt_recorder.state, __ATOMIC_ACQUIRE) != CMT_RECORDER_ACTIVE)
        return;
    cmt_internal_enter();
    pthread_mutex_lock(&cmt_recorder.meta.lock);
    struct cmt_meta_allocator a = {.framework = (uint32_t)framework, .state = (uint32_t)state};
    a.version_id = version && *version ? intern_cstr_locked(version) : 0;
    a.backend_id = backend && *backend ? intern_cstr_locked(backend) : 0;
    /* Unset and empty are one: PyTorch parses an empty setting to its defaults. */
    a.alloc_conf_id = alloc_conf && *alloc_conf ? intern_cstr_locked(alloc_conf) : 0;
    a.cuda_alloc_conf_id = cuda_alloc_conf && *cuda_alloc_conf ? intern_cstr_locked(cuda_alloc_conf) : 0;
    a.ts = cmt_now_ns();
    cmt_meta_write_allocator_locked(&cmt_recorder.tf, &cmt_recorder.meta, &a);
    pthread_mutex_unlock(&cmt_recorder.meta.lock);
    cmt_internal_leave();
}

/* The END record's time: from the event clock, as the events are, and not
 * before anything this thread recorded nor any chunk claimed (a thread's
 * floor may hold it ahead of the clock; docs/performance.md). */
static uint64_t end_time(void)
{
    uint64_t t = cmt_trace_last_claim_ns(&cmt_recorder.tf);
    uint64_t now = cmt_clock_now();
    if (now > t)
        t = now;
    struct cmt_thread *self = &cmt_thread_state;
    if (self->generation == cmt_recorder.generation && self->stream.prev_ts > t)
        t = self->stream.prev_ts;
    return t;
}

void cmt_recorder_exit_now(int status)
{
    if (__atomic_load_n(&cmt_recorder.state, __ATOMIC_ACQUIRE) != CMT_RECORDER_ACTIVE)
        return;
    if (cmt_thread_state.depth != 0)
        return;
    const struct cmt_file_header *h = cmt_recorder.tf.header;
    if (!h || h->pid != (uint32_t)getpid())
        return;
    exit_status = status & 0xff;
    cmt_recorder_shutdown();
}

void cmt_recorder_shutdown(void)
{
    cmt_internal_enter();
    pthread_mutex_lock(&cmt_recorder.start_lock);
    if (cmt_recorder.state == CMT_RECORDER_ACTIVE) {
        __atomic_store_n(&cmt_recorder.state, CMT_RECORDER_OFF, __ATOMIC_RELEASE);
        int reason = cmt_trace_stop_reason(&cmt_recorder.tf);
        if (reason == CMT_END_WRITE_ERROR) {
            int err = cmt_recorder.tf.stop_error;
            append_manifest_failure("stop", err == EFBIG ? "it reached the file size limit (ulimit -f)"
                                            : err       ? strerror(err)
                                                        : "the file could not grow",
                                    cmt_recorder.tf.path);
        }
        uint64_t ts = end_time();
        cmt_meta_close_trace(&cmt_recorder.tf, &cmt_recorder.meta, ts, reason < 0 ? CMT_END_EXIT : (unsigned)reason,
                             exit_status);
    }
    pthread_mutex_unlock(&cmt_recorder.start_lock);
    cmt_internal_leave();
}

/* fork: every lock held across the fork so the child never inherits one
 * mid-update; the child then drops the parent's trace (its mapping is shared
 * with the parent: writing it would corrupt the parent's file). */
void cmt_recorder_fork_prepare(void)
{
    pthread_mutex_lock(&cmt_recorder.start_lock);
    pthread_mutex_lock(&cmt_recorder.meta.lock);
    pthread_mutex_lock(&cmt_recorder.tf.claim_lock);
}

void cmt_recorder_fork_parent(void)
{
    pthread_mutex_unlock(&cmt_recorder.tf.claim_lock);
    pthread_mutex_unlock(&cmt_recorder.meta.lock);
    pthread_mutex_unlock(&cmt_recorder.start_lock);
}

void cmt_recorder_fork_child(void)
{
    pthread_mutex_init(&cmt_recorder.start_lock, NULL);
    pthread_mutex_init(&cmt_recorder.meta.lock, NULL);
    pthread_mutex_init(&cmt_recorder.tf.claim_lock, NULL);
    int state = cmt_recorder.state;
    if (state == CMT_RECORDER_ACTIVE)
        cmt_trace_abandon(&cmt_recorder.tf);
    __atomic_store_n(&nested_before_trace, 0, __ATOMIC_RELAXED);
    cmt_recorder.forked_child = true;
    cmt_recorder.generation++;
    int next = CMT_RECORDER_UNSTARTED;
    if (!cmt_config.follow_fork || cmt_config.disabled)
        next = CMT_RECORDER_OFF;
    __atomic_store_n(&cmt_recorder.state, next, __ATOMIC_RELEASE);
}
