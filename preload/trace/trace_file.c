/* SPDX-License-Identifier: MIT */
#include "trace_file.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "page_populate.h"
#include "path_template.h"

#define CMT_MAX_NAME_SUFFIX 1000u

static int open_exclusive(struct cmt_trace_file *tf, const char *path)
{
    for (unsigned n = 0; n <= CMT_MAX_NAME_SUFFIX; n++) {
        char candidate[PATH_MAX];
        if (n == 0) {
            if (strlen(path) >= sizeof candidate)
                return -ENAMETOOLONG;
            strcpy(candidate, path);
        } else if (cmt_path_with_suffix(path, n, candidate, sizeof candidate) != 0) {
            return -ENAMETOOLONG;
        }
        /* O_EXCL also refuses a symlink at the final component, dangling or
         * not, so a link planted in a shared directory is never followed. */
        int fd = open(candidate, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0) {
            strcpy(tf->path, candidate);
            return fd;
        }
        if (errno != EEXIST)
            return -errno;
    }
    return -EEXIST;
}

const char *cmt_trace_special_path(const char *path)
{
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        if (S_ISDIR(st.st_mode))
            return "a directory";
        if (S_ISCHR(st.st_mode))
            return "a character device";
        if (S_ISBLK(st.st_mode))
            return "a block device";
        if (S_ISFIFO(st.st_mode))
            return "a fifo";
        if (S_ISSOCK(st.st_mode))
            return "a socket";
        return "not a regular file";
    }
    /* Where the trace would be created: the directory part of the path. */
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    size_t len = slash ? (size_t)(slash - path) : 1;
    if (len >= sizeof dir)
        return NULL;
    if (!slash)
        memcpy(dir, ".", 1);
    else if (len == 0)
        memcpy(dir, "/", (len = 1));
    else
        memcpy(dir, path, len);
    dir[len] = '\0';
    struct statfs fs;
    if (statfs(dir, &fs) != 0)
        return NULL;
    switch ((unsigned long)fs.f_type) {
    case 0x9fa0:     /* PROC_SUPER_MAGIC */
        return "in /proc";
    case 0x62656572: /* SYSFS_MAGIC */
        return "in /sys";
    case 0x1cd1:     /* DEVPTS_SUPER_MAGIC */
        return "in /dev/pts";
    case 0x27e0eb:   /* CGROUP_SUPER_MAGIC */
    case 0x63677270: /* CGROUP2_SUPER_MAGIC */
        return "in a cgroup file system";
    case 0x64626720: /* DEBUGFS_MAGIC */
    case 0x74726163: /* TRACEFS_MAGIC */
        return "in a kernel debug file system";
    default:
        return NULL;
    }
}

/* The file size limit (RLIMIT_FSIZE, `ulimit -f`): growing the file past it
 * would raise SIGXFSZ in the host, which kills a program that does not
 * expect it. 0: none. */
static uint64_t file_size_rlimit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_FSIZE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return 0;
    return (uint64_t)rl.rlim_cur;
}

/* The most the file may hold: CUMEMTRACE_MAX_SIZE and RLIMIT_FSIZE, the
 * smaller; 0: unlimited. *by_rlimit says which one binds. */
static uint64_t size_limit(const struct cmt_trace_file *tf, bool *by_rlimit)
{
    uint64_t rlim = file_size_rlimit();
    *by_rlimit = rlim && (!tf->max_size || rlim < tf->max_size);
    return *by_rlimit ? rlim : tf->max_size;
}

/* posix_fallocate with SIGXFSZ blocked in this thread: should the limit
 * be lowered between the check and the call (setrlimit in another thread),
 * the call fails with EFBIG instead of killing the program. The signal the
 * kernel then queues for this thread is taken back before the mask is
 * restored, unless one was pending already (the program's own). */
static int fallocate_without_sigxfsz(int fd, off_t offset, off_t len)
{
    sigset_t xfsz, old, pending;
    sigemptyset(&xfsz);
    sigaddset(&xfsz, SIGXFSZ);
    pthread_sigmask(SIG_BLOCK, &xfsz, &old);
    bool was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGXFSZ);
    int rc = posix_fallocate(fd, offset, len);
    if (rc == EFBIG && !was_pending && sigpending(&pending) == 0 && sigismember(&pending, SIGXFSZ)) {
        struct timespec zero = {0, 0};
        while (sigtimedwait(&xfsz, NULL, &zero) < 0 && errno == EINTR) {
        }
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

/* Reserves [offset, offset + size) on disk and maps it. The disk space is
 * allocated before the pages are touched: writing to a MAP_SHARED page that
 * the file system cannot back raises SIGBUS in the host program. */
static int map_segment(struct cmt_trace_file *tf, uint64_t offset, uint64_t size)
{
    if (tf->n_segments == CMT_MAX_SEGMENTS)
        return -ENOSPC;
    int rc = fallocate_without_sigxfsz(tf->fd, (off_t)offset, (off_t)size);
    if (rc != 0)
        return -rc;
    void *base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, tf->fd, (off_t)offset);
    if (base == MAP_FAILED)
        return -errno;
    struct cmt_segment *s = &tf->segments[tf->n_segments++];
    s->base = base;
    s->offset = offset;
    s->size = size;
    tf->segment_used = 0;
    tf->populated = 0;
    tf->file_size = offset + size;
    return 0;
}

int cmt_trace_create(struct cmt_trace_file *tf, const char *path, const struct cmt_trace_create_options *opt)
{
    memset(tf, 0, sizeof *tf);
    tf->fd = -1;
    pthread_mutex_init(&tf->claim_lock, NULL);
    tf->max_size = opt->max_size;
    tf->populate_mode = opt->populate;
    int fd = open_exclusive(tf, path);
    if (fd < 0)
        return fd;
    tf->fd = fd;

    uint64_t first = CMT_FIRST_SEGMENT_SIZE;
    bool by_rlimit;
    uint64_t limit = size_limit(tf, &by_rlimit);
    if (limit && first > limit)
        first = limit & ~(uint64_t)(CMT_CHUNK_ALIGN - 1);
    int rc = first < CMT_FILE_HEADER_SIZE + CMT_CHUNK_ALIGN ? -EFBIG : map_segment(tf, 0, first);
    if (rc == -ENOSPC && first > CMT_SMALL_SEGMENT_SIZE) {
        /* A nearly full disk may still hold a small first segment: record
         * what fits rather than nothing. */
        first = CMT_SMALL_SEGMENT_SIZE;
        rc = map_segment(tf, 0, first);
    }
    if (rc != 0) {
        close(fd);
        unlink(tf->path);
        tf->fd = -1;
        return rc;
    }
    tf->next_segment_size = first * 2;
    tf->segment_used = CMT_FILE_HEADER_SIZE;

    struct cmt_file_header *h = (struct cmt_file_header *)tf->segments[0].base;
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    h->version_major = CMT_VERSION_MAJOR;
    h->version_minor = CMT_VERSION_MINOR;
    h->header_size = CMT_FILE_HEADER_SIZE;
    h->endian_check = CMT_ENDIAN_CHECK;
    h->flags = cmt_checked_flags(opt->extra_flags);
    h->events_dropped = cmt_checked_word(0, CMT_HEADER_EVENTS_DROPPED_OFFSET);
    h->pid = opt->pid;
    h->start_monotonic_ns = cmt_now_ns();
    tf->last_claim_ns = h->start_monotonic_ns;
    h->start_realtime_ns = (uint64_t)rt.tv_sec * 1000000000ull + (uint64_t)rt.tv_nsec;
    h->claimed_end = cmt_checked_word(CMT_FILE_HEADER_SIZE, CMT_HEADER_CLAIMED_END_OFFSET);
    h->pointer_size = sizeof(void *);
    struct cmt_file_header sealed = *h;
    memcpy(sealed.magic, CMT_FILE_MAGIC, CMT_FILE_MAGIC_SIZE);
    h->header_check = cmt_file_header_check(&sealed);
    /* The magic goes last: a file with a header but no magic is "not a trace
     * yet", never a trace with a half-written header. */
    __atomic_thread_fence(__ATOMIC_RELEASE);
    memcpy(h->magic, CMT_FILE_MAGIC, CMT_FILE_MAGIC_SIZE);
    tf->header = h;
    __atomic_store_n(&tf->state, CMT_TRACE_ACTIVE, __ATOMIC_RELEASE);
    return 0;
}

/* Sets flag bits: the word and its check in one store (format.h). */
static void set_flags(struct cmt_trace_file *tf, uint32_t bits)
{
    uint32_t old = __atomic_load_n(&tf->header->flags, __ATOMIC_ACQUIRE);
    while (!__atomic_compare_exchange_n(&tf->header->flags, &old, cmt_checked_flags((old & CMT_CHECKED_FLAGS_MASK) | bits),
                                        false, __ATOMIC_RELEASE, __ATOMIC_ACQUIRE))
        ;
}

static uint32_t flags_now(const struct cmt_trace_file *tf)
{
    return __atomic_load_n(&tf->header->flags, __ATOMIC_ACQUIRE) & CMT_CHECKED_FLAGS_MASK;
}

static uint64_t claimed_end_now(const struct cmt_trace_file *tf)
{
    return __atomic_load_n(&tf->header->claimed_end, __ATOMIC_ACQUIRE) & CMT_CHECKED_VALUE_MASK;
}

static void stop_locked(struct cmt_trace_file *tf, uint32_t flag, int err)
{
    if (tf->state != CMT_TRACE_ACTIVE)
        return;
    set_flags(tf, flag);
    if (flag == CMT_FILE_FLAG_WRITE_ERROR)
        tf->stop_error = -err;
    __atomic_store_n(&tf->state, CMT_TRACE_STOPPED, __ATOMIC_RELEASE);
    bool by_rlimit;
    uint64_t limit = size_limit(tf, &by_rlimit);
    if (err == -EFBIG && by_rlimit)
        cmt_log_warning("trace %s reached the file size limit (RLIMIT_FSIZE, %llu bytes); recording stopped, the "
                        "program continues: raise `ulimit -f` to record the whole run",
                        tf->path, (unsigned long long)limit);
    else if (flag == CMT_FILE_FLAG_SIZE_LIMIT)
        cmt_log_warning("trace %s reached CUMEMTRACE_MAX_SIZE (%llu bytes); recording stopped, the program "
                        "continues: raise CUMEMTRACE_MAX_SIZE to record the whole run",
                        tf->path, (unsigned long long)tf->max_size);
    else
        cmt_log_warning("cannot grow trace %s (%s); recording stopped, the program continues: free disk space, "
                        "or set CUMEMTRACE_OUTPUT to a file system with room", tf->path,
                        strerror(-err));
}

/* Writes a chunk header at file offset `offset`, its magic last (format.h,
 * "Integrity": the check binds it to the offset; the commit word starts
 * with no record). */
static void write_chunk_header(uint8_t *at, uint64_t offset, uint32_t magic, uint32_t size, uint64_t claim_ns,
                               uint32_t tid, uint32_t thread_seq)
{
    struct cmt_chunk_header h = {magic, size, claim_ns, tid, thread_seq, 0, 0, 0, 0};
    h.header_check = cmt_chunk_header_check(offset, &h);
    h.commit = cmt_commit_pack(CMT_CHUNK_HEADER_SIZE, h.header_check);
    struct cmt_chunk_header *c = (struct cmt_chunk_header *)at;
    memcpy((uint8_t *)c + sizeof c->magic, (const uint8_t *)&h + sizeof h.magic, sizeof h - sizeof h.magic);
    __atomic_store_n(&c->magic, magic, __ATOMIC_RELEASE);
}

/* Fills the rest of the current segment with a padding chunk so that a reader
 * walking chunk to chunk can step over it. */
static void pad_segment_locked(struct cmt_trace_file *tf)
{
    struct cmt_segment *s = &tf->segments[tf->n_segments - 1];
    uint64_t left = s->size - tf->segment_used;
    if (left == 0)
        return;
    write_chunk_header(s->base + tf->segment_used, s->offset + tf->segment_used, CMT_CHUNK_MAGIC_PAD,
                       (uint32_t)left, 0, 0, 0);
    tf->segment_used = s->size;
}

static int grow_locked(struct cmt_trace_file *tf, uint32_t need)
{
    uint64_t size = tf->next_segment_size;
    if (size < need)
        size = need;
    bool by_rlimit;
    uint64_t limit = size_limit(tf, &by_rlimit);
    if (limit) {
        uint64_t room = limit > tf->file_size ? limit - tf->file_size : 0;
        room &= ~(uint64_t)(CMT_CHUNK_ALIGN - 1);
        if (room < need)
            return -EFBIG;
        if (size > room)
            size = room;
    }
    uint64_t offset = tf->file_size;
    pad_segment_locked(tf);
    int rc = map_segment(tf, offset, size);
    if (rc == -ENOSPC && size > need) {
        /* A nearly full disk may still hold a smaller segment. */
        size = need > CMT_SMALL_SEGMENT_SIZE ? need : CMT_SMALL_SEGMENT_SIZE;
        rc = map_segment(tf, offset, size);
    }
    if (rc != 0)
        return rc;
    if (tf->next_segment_size < CMT_MAX_SEGMENT_SIZE)
        tf->next_segment_size *= 2;
    return 0;
}

/* Each claim asks for the pages up to CMT_POPULATE_AHEAD past it to be made
 * writable before they are written (page_populate.h: by a helper thread, or
 * inline in one call instead of a fault per page). Returns the range (len 0:
 * none) and advances tf->populated under the claim lock, so ranges never
 * overlap; the caller hands it over after the lock is released. */
struct populate_range {
    uint8_t *addr;
    size_t len;
};

static struct populate_range populate_ahead_locked(struct cmt_trace_file *tf, const struct cmt_segment *s,
                                                   uint64_t chunk_offset)
{
    struct populate_range r = {NULL, 0};
    if (tf->populate_mode == CMT_POPULATE_OFF || cmt_populate_refused() ||
        tf->segment_used + CMT_POPULATE_AHEAD / 2 <= tf->populated)
        return r;
    const uint64_t page = 4096;
    uint64_t from = chunk_offset & ~(page - 1);
    if (from < tf->populated)
        from = tf->populated;
    uint64_t to = (tf->segment_used + CMT_POPULATE_AHEAD + page - 1) & ~(page - 1);
    if (to > s->size)
        to = s->size;
    if (to <= from)
        return r;
    tf->populated = to;
    r.addr = s->base + from;
    r.len = to - from;
    return r;
}

/* The largest chunk of at least min_size bytes (both multiples of
 * CMT_CHUNK_ALIGN) that still fits under the size limit when size does
 * not: the rest of the last segment, or a last segment of what the limit
 * leaves. 0: none fits. */
static uint32_t fit_under_limit_locked(struct cmt_trace_file *tf, uint32_t min_size)
{
    const struct cmt_segment *s = &tf->segments[tf->n_segments - 1];
    uint64_t left = s->size - tf->segment_used;
    bool by_rlimit;
    uint64_t limit = size_limit(tf, &by_rlimit);
    if (left < min_size && limit > tf->file_size) /* then a last segment of what the limit leaves */
        left = (limit - tf->file_size) & ~(uint64_t)(CMT_CHUNK_ALIGN - 1);
    if (left > CMT_CHUNK_MAX_SIZE)
        left = CMT_CHUNK_MAX_SIZE;
    return left >= min_size ? (uint32_t)left : 0;
}

uint8_t *cmt_trace_claim_chunk(struct cmt_trace_file *tf, uint32_t magic, uint32_t size, uint32_t tid,
                               uint32_t thread_seq, uint64_t not_before, uint64_t *claim_ns)
{
    return cmt_trace_claim_chunk_fit(tf, magic, size, size, tid, thread_seq, not_before, claim_ns, NULL);
}

uint8_t *cmt_trace_claim_chunk_fit(struct cmt_trace_file *tf, uint32_t magic, uint32_t size, uint32_t min_size,
                                   uint32_t tid, uint32_t thread_seq, uint64_t not_before, uint64_t *claim_ns,
                                   uint32_t *got_size)
{
    if (!cmt_trace_is_active(tf))
        return NULL;
    pthread_mutex_lock(&tf->claim_lock);
    uint8_t *chunk = NULL;
    struct populate_range ahead = {NULL, 0};
    if (tf->state != CMT_TRACE_ACTIVE)
        goto out;
    struct cmt_segment *s = &tf->segments[tf->n_segments - 1];
    if (s->size - tf->segment_used < size) {
        int rc = grow_locked(tf, size);
        if (rc == -EFBIG && min_size < size) {
            /* Near the limit: what fits, so that a larger limit never
             * records less (a whole chunk refused would waste the rest). */
            uint32_t fit = fit_under_limit_locked(tf, min_size);
            if (fit) {
                size = fit;
                rc = s->size - tf->segment_used >= size ? 0 : grow_locked(tf, size);
            }
        }
        if (rc != 0) {
            bool by_rlimit;
            size_limit(tf, &by_rlimit);
            stop_locked(tf, rc == -EFBIG && !by_rlimit ? CMT_FILE_FLAG_SIZE_LIMIT : CMT_FILE_FLAG_WRITE_ERROR, rc);
            goto out;
        }
        s = &tf->segments[tf->n_segments - 1];
    }
    if (got_size)
        *got_size = size;
    chunk = s->base + tf->segment_used;
    uint64_t chunk_offset = tf->segment_used;
    tf->segment_used += size;
    ahead = populate_ahead_locked(tf, s, chunk_offset);
    /* Taken under the lock: claim times never decrease in file order (W2).
     * From the event clock, as the events are: a claim floors the first
     * event of its chunk, and a claim from clock_gettime (which the TSC
     * conversion may trail by tens of ns) raised a thread's free above
     * another thread's allocation of the same address just after it
     * (issue 15). The raises below then apply only where a thread's
     * counter lags another's (its floor) or under the test skew. */
    uint64_t now = cmt_clock_now();
    if (now < tf->last_claim_ns)
        now = tf->last_claim_ns;
    if (now < not_before)
        now = not_before;
    tf->last_claim_ns = now;
    *claim_ns = now;
    write_chunk_header(chunk, s->offset + chunk_offset, magic, size, now, tid, thread_seq);
    tf->chunks++;
    __atomic_store_n(&tf->header->claimed_end, cmt_checked_word(s->offset + tf->segment_used, CMT_HEADER_CLAIMED_END_OFFSET),
                     __ATOMIC_RELEASE);
out:
    pthread_mutex_unlock(&tf->claim_lock);
    /* Segments stay mapped until the process ends (only a fork child,
     * single-threaded and without the helper, unmaps them). */
    cmt_populate_request(tf->populate_mode, ahead.addr, ahead.len);
    return chunk;
}

uint64_t cmt_trace_last_claim_ns(struct cmt_trace_file *tf)
{
    pthread_mutex_lock(&tf->claim_lock);
    uint64_t t = tf->last_claim_ns;
    pthread_mutex_unlock(&tf->claim_lock);
    return t;
}

void cmt_trace_count_dropped(struct cmt_trace_file *tf)
{
    if (!tf->header || __atomic_load_n(&tf->state, __ATOMIC_ACQUIRE) == CMT_TRACE_CLOSED)
        return;
    /* The count and its check in one store (format.h): a kill between two
     * counts leaves a word that verifies. */
    uint64_t old = __atomic_load_n(&tf->header->events_dropped, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(
        &tf->header->events_dropped, &old,
        cmt_checked_word((old & CMT_CHECKED_VALUE_MASK) + 1, CMT_HEADER_EVENTS_DROPPED_OFFSET), false,
        __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

bool cmt_trace_seal(struct cmt_trace_file *tf, struct cmt_trace_seal *out)
{
    bool sealed = false;
    pthread_mutex_lock(&tf->claim_lock);
    if (tf->state == CMT_TRACE_ACTIVE || tf->state == CMT_TRACE_STOPPED) {
        __atomic_store_n(&tf->state, CMT_TRACE_CLOSED, __ATOMIC_RELEASE);
        set_flags(tf, CMT_FILE_FLAG_CLEAN_EXIT);
        out->flags = flags_now(tf);
        out->claimed_end = claimed_end_now(tf);
        out->events_dropped = cmt_trace_events_dropped(tf);
        out->chunks = tf->chunks;
        sealed = true;
    }
    pthread_mutex_unlock(&tf->claim_lock);
    return sealed;
}

void cmt_trace_trim(struct cmt_trace_file *tf)
{
    pthread_mutex_lock(&tf->claim_lock);
    if (tf->state == CMT_TRACE_CLOSED && tf->fd >= 0) {
        /* Every claimed chunk lies below claimed_end, so no thread still
         * writing its chunk can touch a page beyond the new end of file. */
        uint64_t end = claimed_end_now(tf);
        if (ftruncate(tf->fd, (off_t)end) != 0)
            cmt_log_warning("could not trim trace %s to its last chunk (ftruncate: %s); the trace is whole, with "
                            "zero bytes after its end that the analyzer skips",
                            tf->path, strerror(errno));
    }
    pthread_mutex_unlock(&tf->claim_lock);
}

void cmt_trace_abandon(struct cmt_trace_file *tf)
{
    /* Forgotten before it is unmapped: a signal handler's hook counting an
     * unrecorded call (recorder.c) must never find it half gone. */
    __atomic_store_n(&tf->header, NULL, __ATOMIC_RELEASE);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    for (unsigned i = 0; i < tf->n_segments; i++)
        munmap(tf->segments[i].base, tf->segments[i].size);
    if (tf->fd >= 0)
        close(tf->fd);
    tf->fd = -1;
    tf->n_segments = 0;
    tf->header = NULL;
    pthread_mutex_init(&tf->claim_lock, NULL);
    __atomic_store_n(&tf->state, CMT_TRACE_UNOPENED, __ATOMIC_RELEASE);
}

int cmt_trace_stop_reason(const struct cmt_trace_file *tf)
{
    if (!tf->header)
        return -1;
    uint32_t f = flags_now(tf);
    if (f & CMT_FILE_FLAG_SIZE_LIMIT)
        return CMT_END_SIZE_LIMIT;
    if (f & CMT_FILE_FLAG_WRITE_ERROR)
        return CMT_END_WRITE_ERROR;
    return -1;
}

uint64_t cmt_trace_events_dropped(const struct cmt_trace_file *tf)
{
    return tf->header ? __atomic_load_n(&tf->header->events_dropped, __ATOMIC_ACQUIRE) & CMT_CHECKED_VALUE_MASK : 0;
}

uint32_t cmt_trace_flags(const struct cmt_trace_file *tf)
{
    return tf->header ? flags_now(tf) : 0;
}
