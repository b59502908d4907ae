/* SPDX-License-Identifier: MIT */
#include "trace_reader.h"

#include <dirent.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* The format is little-endian (docs/trace-format.md), and the decoder reads
 * varints and words with plain loads of host words: a big-endian host,
 * whose own traces would pass the header's byte-order check, would read them
 * wrong. Said here rather than found there. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "the trace decoder reads little-endian words with host loads (x86-64, aarch64)");

#define READER_MAX_FRAMES 1024u

struct cursor {
    const uint8_t *pos;
    const uint8_t *end;        /* the chunk's end, or the end of the file when it cuts the chunk */
    const uint8_t *commit_end; /* where the chunk's commit word says its records end */
    /* Records that start below this lie whole below the commit end and the
     * chunk's end, with room for a word load past them: decode_fast reads
     * them without bounds checks (cursor_set_commit). */
    const uint8_t *fast_end;
    uint32_t commit_state;     /* the chain's state there */
    uint32_t chain;            /* the chain's state at pos */
    bool past_commit;          /* the one record a writer killed before its commit word leaves was read */
    uint64_t chunk_off;
    bool cut_by_eof;
    /* The delta state: prev_ts, and next.addr and next.device (nothing
     * changes those between decodes; follow mode raises next.ts only). */
    uint64_t prev_ts;
    uint32_t tid;
    /* Where the records not yet in stats.bytes_of_records start: counted
     * per chunk (cursor_count), not per record. */
    const uint8_t *counted;
    /* next's stream, result or aux may be nonzero (decode_fast_fields) */
    bool rare_set;
    bool final; /* follow mode: the chunk will not grow (its thread moved on, the trace ended) */
    struct cmt_event_in next;
};

/* Follow mode: a metadata chunk being read while the writer appends to it. */
struct meta_cursor {
    uint64_t off;
    const uint8_t *pos;
    const uint8_t *end;
    uint32_t chain;
    bool past_commit;
    bool final;
};

/* The merge heap holds the key of each open chunk's next event next to it:
 * ordering compares stay within one array. */
struct heap_entry {
    uint64_t ts;
    uint64_t chunk_off;
    struct cursor *c;
};

struct cmt_reader {
    const uint8_t *data;
    size_t size;
    bool mapped;
    uint64_t page_size;
    uint64_t release_lo, release_hi; /* read pages not yet released (release_range) */
    struct cmt_trace_info info;
    uint64_t next_chunk;
    bool chunks_done;
    uint64_t last_claim_ns;
    bool has_next_claim;  /* another chunk follows: its claim time is next_claim */
    uint64_t next_claim;
    struct heap_entry *heap;
    size_t heap_len;
    size_t heap_cap;
    /* The top cursor's events come first while their ts stays below this:
     * the smaller key of the top's children (0 when it must be checked). */
    uint64_t run_limit;
    struct cmt_reader_stats stats;
    const struct cmt_reader_callbacks *cb;
    void *ctx;
    bool stop_requested;
    bool warned_order;
    bool truncated;
    /* What was committed when the trace was opened, and nothing after it
     * (cmt_reader_open_mode): chunks below the header's claimed end as read
     * then, each chunk's records up to its commit word as read when the
     * chunk is opened. A writer still appending leaves no damage there. */
    bool committed;
    bool in_progress; /* read so because its writer still runs */
    struct cmt_file_header header; /* as read at open */
    uint64_t chunks_seen;          /* non-padding chunks met */
    uint64_t chunks_past_claimed;  /* of them, at or after the header's claimed_end */
    bool end_seen;                 /* the END record */
    struct cmt_end_in end;
    bool finished;                 /* the end-of-file checks ran */
    char error[CMT_READER_MESSAGE_MAX];
    char warnings[CMT_READER_MAX_WARNINGS][CMT_READER_MESSAGE_MAX];
    size_t n_warnings;
    uint64_t frames[READER_MAX_FRAMES];
    /* Follow mode (cmt_reader_open_follow): the file is mapped once with
     * room to grow, and each poll reads what was committed since. */
    bool follow;
    int fd;
    size_t reserved_size;
    struct cursor **pending; /* event chunks read up to their commit word */
    size_t n_pending, cap_pending;
    struct meta_cursor *metas;
    size_t n_metas, cap_metas;
    /* Decoding with the CPU's crc32 and pext instructions (decode_fast);
     * both off after cmt_reader_portable_decode. */
    bool portable;
    bool fast_crc, fast_pext;
    uint64_t follow_ts; /* the latest timestamp delivered */
    uint32_t stack_limit; /* cmt_reader_set_stack_limit */
    uint64_t late_events; /* events committed after a later one was delivered */
};

static void set_error(struct cmt_reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_warning(struct cmt_reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void set_error(struct cmt_reader *r, const char *fmt, ...)
{
    if (r->error[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->error, sizeof r->error, fmt, ap);
    va_end(ap);
}

static void add_warning(struct cmt_reader *r, const char *fmt, ...)
{
    if (r->n_warnings == CMT_READER_MAX_WARNINGS)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->warnings[r->n_warnings], CMT_READER_MESSAGE_MAX, fmt, ap);
    va_end(ap);
    for (size_t i = 0; i < r->n_warnings; i++)
        if (!strcmp(r->warnings[i], r->warnings[r->n_warnings]))
            return;
    r->n_warnings++;
}

/* ---- opening -------------------------------------------------------------- */

static bool all_zero(const uint8_t *p, const uint8_t *end, const uint8_t **first_nonzero)
{
    while (p < end && ((uintptr_t)p & 7)) {
        if (*p) {
            *first_nonzero = p;
            return false;
        }
        p++;
    }
    while (end - p >= 64) {
        uint64_t w[8];
        memcpy(w, p, sizeof w);
        if (w[0] | w[1] | w[2] | w[3] | w[4] | w[5] | w[6] | w[7])
            break;
        p += 64;
    }
    for (; p < end; p++)
        if (*p) {
            *first_nonzero = p;
            return false;
        }
    return true;
}

static int validate_header(struct cmt_reader *r, char *err, size_t errlen)
{
    if (r->size == 0) {
        snprintf(err, errlen, "empty file: the traced process stopped before it wrote the trace header; run it again");
        return -EINVAL;
    }
    size_t magic_cmp = r->size < CMT_FILE_MAGIC_SIZE ? r->size : CMT_FILE_MAGIC_SIZE;
    if (memcmp(r->data, CMT_FILE_MAGIC, magic_cmp) != 0) {
        bool zeros = true;
        for (size_t i = 0; i < CMT_FILE_MAGIC_SIZE && i < r->size; i++)
            zeros = zeros && r->data[i] == 0;
        if (zeros && r->size >= CMT_FILE_MAGIC_SIZE)
            snprintf(err, errlen, "no trace header: the traced process stopped while creating the file; run it again");
        else
            snprintf(err, errlen,
                     "not a cumemtrace trace (no CUMEMTRC magic at the start): give a file the profiler wrote");
        return -EINVAL;
    }
    if (r->size < sizeof(struct cmt_file_header)) {
        snprintf(err, errlen,
                 "trace is truncated: the file ends at offset %zu, inside its %u-byte header; no event is left: "
                 "copy the whole file",
                 r->size, CMT_FILE_HEADER_SIZE);
        return -EBADMSG;
    }
    struct cmt_file_header h;
    memcpy(&h, r->data, sizeof h);
    /* The words a running writer changes, each read once whole: a trace
     * may be read while it is written (cmt_reader_open_mode). */
    const struct cmt_file_header *live = (const struct cmt_file_header *)(const void *)r->data;
    h.flags = __atomic_load_n(&live->flags, __ATOMIC_ACQUIRE);
    h.claimed_end = __atomic_load_n(&live->claimed_end, __ATOMIC_ACQUIRE);
    h.events_dropped = __atomic_load_n(&live->events_dropped, __ATOMIC_RELAXED);
    if (h.endian_check != CMT_ENDIAN_CHECK) {
        snprintf(err, errlen, "written on a machine of another byte order, or its header is damaged (offset 16): "
                              "analyse it on a machine like the one that recorded it");
        return -EINVAL;
    }
    if (h.version_major > CMT_VERSION_MAJOR) {
        snprintf(err, errlen,
                 "written by a newer cumemtrace (trace format %u.%u); this analyzer reads format %u.x: "
                 "upgrade cumemtrace",
                 h.version_major, h.version_minor, CMT_VERSION_MAJOR);
        return -EPROTONOSUPPORT;
    }
    if (h.version_major < CMT_VERSION_MAJOR) {
        snprintf(err, errlen,
                 "trace format %u.%u has no checksums and is no longer read (this analyzer reads format %u.x): "
                 "record it again, or read it with the cumemtrace that wrote it",
                 h.version_major, h.version_minor, CMT_VERSION_MAJOR);
        return -EPROTONOSUPPORT;
    }
    uint32_t check = cmt_file_header_check(&h);
    if (check != h.header_check) {
        snprintf(err, errlen,
                 "damaged trace header: its checksum (offset %zu) is 0x%08x, its contents give 0x%08x "
                 "(version %u.%u, header size %u, pid %u): the file changed after it was written; copy it "
                 "again from where it was recorded, or record again",
                 offsetof(struct cmt_file_header, header_check), h.header_check, check, h.version_major,
                 h.version_minor, h.header_size, h.pid);
        return -EBADMSG;
    }
    if (h.header_size < sizeof h || h.header_size % CMT_CHUNK_ALIGN || h.header_size > (1u << 20)) {
        snprintf(err, errlen,
                 "damaged trace header (header size %u): copy the file again from where it was recorded, or "
                 "record again", h.header_size);
        return -EBADMSG;
    }
    if (r->size < h.header_size) {
        snprintf(err, errlen,
                 "trace is truncated: the file ends at offset %zu, inside its %u-byte header; no event is left: "
                 "copy the whole file",
                 r->size, h.header_size);
        return -EBADMSG;
    }
    /* The words that change while the process runs carry their own check. */
    bool flags_ok = cmt_checked_flags(h.flags) == h.flags;
    bool claimed_ok = cmt_checked_word(h.claimed_end, CMT_HEADER_CLAIMED_END_OFFSET) == h.claimed_end;
    bool dropped_ok = cmt_checked_word(h.events_dropped, CMT_HEADER_EVENTS_DROPPED_OFFSET) == h.events_dropped;
    /* Zero: a writer that counted none (it stores the first count). */
    uint64_t nested = h.reserved[CMT_HEADER_UNRECORDED_NESTED];
    bool nested_ok = nested == 0 ||
                     cmt_checked_word(nested, CMT_HEADER_RESERVED_OFFSET(CMT_HEADER_UNRECORDED_NESTED)) == nested;
    h.flags &= CMT_CHECKED_FLAGS_MASK;
    h.claimed_end = claimed_ok ? h.claimed_end & CMT_CHECKED_VALUE_MASK : r->size;
    h.events_dropped &= CMT_CHECKED_VALUE_MASK;
    r->header = h;
    if (!flags_ok)
        set_error(r, "damaged trace header: its flags word (offset %zu) does not match its check",
                  offsetof(struct cmt_file_header, flags));
    else if (!claimed_ok)
        set_error(r, "damaged trace header: its claimed_end word (offset %zu) does not match its check",
                  offsetof(struct cmt_file_header, claimed_end));
    else if (!dropped_ok)
        set_error(r, "damaged trace header: its events_dropped word (offset %zu) does not match its check",
                  offsetof(struct cmt_file_header, events_dropped));
    else if (!nested_ok)
        set_error(r, "damaged trace header: its unrecorded-calls word (offset %u) does not match its check",
                  CMT_HEADER_RESERVED_OFFSET(CMT_HEADER_UNRECORDED_NESTED));
    r->info.version_major = h.version_major;
    r->info.version_minor = h.version_minor;
    r->info.flags = h.flags;
    r->info.pid = h.pid;
    r->info.start_monotonic_ns = h.start_monotonic_ns;
    r->info.start_realtime_ns = h.start_realtime_ns;
    r->info.events_dropped = h.events_dropped;
    r->info.unrecorded_nested = nested_ok ? nested & CMT_CHECKED_VALUE_MASK : 0;
    r->info.file_size = r->size;
    r->info.claimed_end = h.claimed_end;
    r->next_chunk = h.header_size;
    /* Damage the events can be read past: said at the end of the read. */
    const uint8_t *bad;
    if (h.version_minor <= CMT_VERSION_MINOR &&
        !all_zero(r->data + sizeof h, r->data + h.header_size, &bad))
        set_error(r, "damaged trace header: nonzero byte at offset %llu in its unused space",
                  (unsigned long long)(bad - r->data));
    else if (h.version_minor <= CMT_VERSION_MINOR && (h.flags & ~CMT_FILE_FLAGS_KNOWN))
        set_error(r, "damaged trace header: unknown flag bits 0x%x (offset %zu)", h.flags & ~CMT_FILE_FLAGS_KNOWN,
                  offsetof(struct cmt_file_header, flags));
    else if (h.claimed_end < h.header_size || h.claimed_end % CMT_CHUNK_ALIGN)
        set_error(r, "damaged trace header: claimed_end (offset %zu) is %llu, not a chunk boundary",
                  offsetof(struct cmt_file_header, claimed_end), (unsigned long long)h.claimed_end);
    /* claimed_end is where the writer's last chunk ended: a shorter file lost
     * its tail (a partial copy), even when the cut falls between chunks. */
    if (h.claimed_end > r->size) {
        r->truncated = true;
        add_warning(r,
                    "trace is truncated: the file ends at offset %zu but its chunks reach offset %llu (%llu bytes "
                    "missing); events up to the cut are analysed",
                    r->size, (unsigned long long)h.claimed_end, (unsigned long long)(h.claimed_end - r->size));
    }
    return 0;
}

int cmt_reader_open_memory(const void *data, size_t size, struct cmt_reader **out, char *err, size_t errlen)
{
    struct cmt_reader *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    r->data = data;
    r->size = size;
    r->stack_limit = UINT32_MAX;
    int rc = validate_header(r, err, errlen);
    if (rc != 0) {
        free(r);
        return rc;
    }
    *out = r;
    return 0;
}

/* Whether the process that writes the trace open as fd still runs here: a
 * process with the trace's pid holds the file open (a descriptor in
 * /proc/PID/fd: the shim keeps its trace open until the process ends), or,
 * where another user's descriptors cannot be listed, a process with that pid
 * started no later than the trace did (a pid used again later started
 * after it). A trace from another machine or another pid namespace finds
 * no such process, or one without the file. */
static bool writer_running(int fd, uint32_t pid, uint64_t start_realtime_ns)
{
    struct stat me;
    if (!pid || fstat(fd, &me) != 0)
        return false;
    char path[64];
    snprintf(path, sizeof path, "/proc/%u/fd", pid);
    DIR *d = opendir(path);
    if (d) {
        bool found = false;
        struct dirent *e;
        while (!found && (e = readdir(d))) {
            struct stat st;
            found = e->d_name[0] != '.' && fstatat(dirfd(d), e->d_name, &st, 0) == 0 && st.st_dev == me.st_dev &&
                    st.st_ino == me.st_ino;
        }
        closedir(d);
        return found;
    }
    if (errno != EACCES && errno != EPERM)
        return false; /* no such process */
    /* Its start: field 22 of /proc/PID/stat, in clock ticks since boot. */
    snprintf(path, sizeof path, "/proc/%u/stat", pid);
    FILE *f = fopen(path, "re");
    char line[1024];
    bool got = f && fgets(line, sizeof line, f);
    if (f)
        fclose(f);
    const char *p = got ? strrchr(line, ')') : NULL; /* after the command, which may hold spaces */
    unsigned long long start_ticks = 0;
    for (int field = 2; p && field < 22; field++)
        p = strchr(p + 1, ' ');
    if (!p || sscanf(p, " %llu", &start_ticks) != 1)
        return false;
    unsigned long long btime = 0;
    f = fopen("/proc/stat", "re");
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "btime %llu", &btime) == 1)
            break;
    if (f)
        fclose(f);
    long hz = sysconf(_SC_CLK_TCK);
    if (!btime || hz <= 0)
        return false;
    return btime + start_ticks / (unsigned long long)hz <= start_realtime_ns / 1000000000ull + 1;
}

int cmt_reader_open(const char *path, struct cmt_reader **out, char *err, size_t errlen)
{
    return cmt_reader_open_mode(path, CMT_READ_WHOLE, out, err, errlen);
}

int cmt_reader_open_mode(const char *path, enum cmt_read_mode mode, struct cmt_reader **out, char *err,
                         size_t errlen)
{
    /* Only a regular file is opened, and without blocking: a FIFO named as
     * a trace (a path in `run --check`'s manifest comes from the traced
     * processes) would block the analyzer for good on open. */
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "not a regular file: give the path of a trace file");
        return -EINVAL;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        int e = errno;
        snprintf(err, errlen, "cannot open: %s; check the path", strerror(e));
        return -e;
    }
    /* A trace being written grows: when its claimed end lies past the size
     * mapped (a segment added meanwhile), it is mapped again, larger. */
    for (int attempt = 0;; attempt++) {
        if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
            close(fd);
            snprintf(err, errlen, "not a regular file: give the path of a trace file");
            return -EINVAL;
        }
        size_t size = (size_t)st.st_size;
        const uint8_t *data = NULL;
        if (size > 0) {
            data = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
            if (data == MAP_FAILED) {
                int e = errno;
                close(fd);
                snprintf(err, errlen, "cannot map it into memory: %s; check `ulimit -v`", strerror(e));
                return -e;
            }
            /* One pass, front to back. */
            madvise((void *)data, size, MADV_SEQUENTIAL);
        }
        int rc = cmt_reader_open_memory(data, size, out, err, errlen);
        if (rc != 0) {
            if (data)
                munmap((void *)data, size);
            close(fd);
            return rc;
        }
        struct cmt_reader *r = *out;
        r->mapped = true;
        r->page_size = (uint64_t)sysconf(_SC_PAGESIZE);
        bool live = !(r->info.flags & CMT_FILE_FLAG_CLEAN_EXIT) &&
                    (mode == CMT_READ_COMMITTED ||
                     (mode == CMT_READ_AUTO && writer_running(fd, r->info.pid, r->info.start_realtime_ns)));
        if (live && r->header.claimed_end > size && attempt < 3) {
            cmt_reader_close(r);
            *out = NULL;
            continue;
        }
        r->committed = r->in_progress = live;
        close(fd);
        return 0;
    }
}

bool cmt_reader_in_progress(const struct cmt_reader *r)
{
    return r->in_progress;
}

const struct cmt_trace_info *cmt_reader_info(const struct cmt_reader *r)
{
    return &r->info;
}

bool cmt_reader_truncated(const struct cmt_reader *r)
{
    return r->truncated;
}

const char *cmt_reader_error(const struct cmt_reader *r)
{
    return r->error[0] ? r->error : NULL;
}

size_t cmt_reader_warning_count(const struct cmt_reader *r)
{
    return r->n_warnings;
}

const char *cmt_reader_warning(const struct cmt_reader *r, size_t i)
{
    return i < r->n_warnings ? r->warnings[i] : NULL;
}

const struct cmt_reader_stats *cmt_reader_stats(const struct cmt_reader *r)
{
    return &r->stats;
}

void cmt_reader_close(struct cmt_reader *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->heap_len; i++)
        free(r->heap[i].c);
    free(r->heap);
    for (size_t i = 0; i < r->n_pending; i++)
        free(r->pending[i]);
    free(r->pending);
    free(r->metas);
    if (r->follow) {
        munmap((void *)r->data, r->reserved_size);
        close(r->fd);
    } else if (r->mapped && r->data) {
        munmap((void *)r->data, r->size);
    }
    free(r);
}

/* ---- event records ---------------------------------------------------------- */

/* DECODE_PENDING: follow mode, at the commit word of a chunk that may grow. */
/* DECODE_STOPPED: the consumer asked to stop (deliver_run). */
enum decode_result { DECODE_STOPPED = 3, DECODE_PENDING = 2, DECODE_EVENT = 1, DECODE_END = 0, DECODE_DAMAGED = -1 };

static enum decode_result cursor_damaged(struct cmt_reader *r, struct cursor *c, const uint8_t *rec)
{
    uint64_t off = (uint64_t)(rec - r->data);
    if (c->cut_by_eof) {
        r->truncated = true;
        add_warning(r, "trace is truncated: it ends inside a record at offset %llu; events up to there are "
                       "analysed",
                    (unsigned long long)off);
        return DECODE_END;
    }
    set_error(r, "damaged event record at offset %llu (chunk at offset %llu): it does not parse",
              (unsigned long long)off, (unsigned long long)c->chunk_off);
    return DECODE_DAMAGED;
}

/* Past the last record of a chunk (its commit end, and the one record a
 * killed writer may leave after it): what a writer can leave there is one
 * partly written record, then zeros to the chunk's end. */
static bool chunk_tail_clean(struct cmt_reader *r, uint64_t chunk_off, const uint8_t *from, const uint8_t *end,
                             size_t partial_max, const char *what)
{
    const uint8_t *scan = (size_t)(end - from) > partial_max ? from + partial_max : end;
    if (from < end && from[0] != 0)
        scan = from; /* a record with its type byte set was committed: it must verify */
    const uint8_t *bad;
    if (all_zero(scan, end, &bad))
        return true;
    set_error(r, "damaged %s chunk at offset %llu: unexpected nonzero byte at offset %llu after its last committed "
                 "record (offset %llu)",
              what, (unsigned long long)chunk_off, (unsigned long long)(bad - r->data),
              (unsigned long long)(from - r->data));
    return false;
}

/* Verifies a record's check: state is the chain before it, [rec, body_end)
 * the record up to its check. Returns 0 and advances *state, or -1. */
static int verify_record(uint32_t *state, const uint8_t *rec, const uint8_t *body_end, const uint8_t *end)
{
    if (end - body_end < (ptrdiff_t)CMT_RECORD_CHECK_SIZE)
        return -2;
    uint32_t next = cmt_record_chain(*state, rec[0], rec + 1, (size_t)(body_end - rec - 1));
    uint16_t check;
    memcpy(&check, body_end, sizeof check);
    if (check != cmt_record_check16(next))
        return -1;
    *state = next;
    return 0;
}

/* Where the chunk's commit word ends and the chain there; reports damage. */
static enum decode_result cursor_at_commit(struct cmt_reader *r, struct cursor *c)
{
    if (c->chain != c->commit_state) {
        set_error(r,
                  "damaged event chunk at offset %llu: its records up to offset %llu do not match the chunk's "
                  "commit checksum",
                  (unsigned long long)c->chunk_off, (unsigned long long)(c->commit_end - r->data));
        return DECODE_DAMAGED;
    }
    return DECODE_EVENT;
}
/* The api's default kind, by table: cmt_api_default_kind is a switch. */
static uint8_t default_kind[256];

#if defined(__x86_64__) && defined(__GNUC__)
/* The CPU has the crc32 instruction, a fast pext (decode_fast). */
static bool decode_fast_crc, decode_fast_pext;
static void init_chain_windows(void);
static bool pext_is_fast(void);
#endif

_Static_assert(CMT_KIND_ALL_COUNT <= 0x80, "default kinds are their own packed kinds");

static void init_default_kinds(void)
{
    for (unsigned api = 0; api < 256; api++)
        default_kind[api] = (uint8_t)cmt_api_default_kind(api); /* below 0x80: its own packed kind */
#if defined(__x86_64__) && defined(__GNUC__)
    decode_fast_crc = cmt_crc32c_have_hw();
    decode_fast_pext = pext_is_fast();
    init_chain_windows();
#endif
}

/* An event's packed fields from the others (struct cmt_event_in): the
 * general path's, where every field was written. */
static inline int8_t packed_device_of(int32_t device)
{
    return device >= -1 && device < CMT_READER_PACKED_DEVICES ? (int8_t)device : INT8_MIN;
}

static inline uint8_t packed_kind_of(uint8_t kind)
{
    return kind & 0x80 ? 0x7f : kind;
}

static inline uint32_t packed_stack_of(const struct cmt_reader *r, uint64_t stack)
{
    return stack < r->stack_limit ? (uint32_t)stack : 0;
}

static void set_packed(const struct cmt_reader *r, struct cmt_event_in *e)
{
    e->packed_aux = e->aux[cmt_event_packed_aux_index(e->api)];
    e->packed_stack = packed_stack_of(r, e->stack);
    e->packed_device = packed_device_of(e->device);
    e->packed_kind = packed_kind_of(e->kind);
}

void cmt_reader_set_stack_limit(struct cmt_reader *r, uint32_t limit)
{
    r->stack_limit = limit;
}

/* The device field's value as the event's ordinal: a zigzag varint may hold
 * any 64-bit value, the event an int32 (both decoding paths clamp it
 * alike). */
static inline int32_t device_of_field(uint64_t v)
{
    int64_t d = cmt_zigzag_decode(v);
    return d < INT32_MIN ? INT32_MIN : d > INT32_MAX ? INT32_MAX : (int32_t)d;
}

/* One varint at *p. With at least 16 bytes left, a varint of 3 to 8 bytes
 * (values below 2^56: every timestamp delta, size and address delta met in
 * practice) is decoded from one 8-byte load without a branch on its length:
 * lengths vary from record to record, and mispredicted branches were what
 * decoding cost. Returns 0, or -1 when the input ends first or the varint
 * is too long. */
static inline int get_varint(const uint8_t **pp, const uint8_t *end, uint64_t *out)
{
    const uint8_t *p = *pp;
    /* One or two bytes (masks, stack ids, time deltas) take a branch each:
     * inlined at each field, they are predicted per field. */
    if (__builtin_expect(end - p >= 16, 1)) {
        if (p[0] < 0x80) {
            *out = p[0];
            *pp = p + 1;
            return 0;
        }
        if (p[1] < 0x80) {
            *out = (uint64_t)(p[0] & 0x7f) | (uint64_t)p[1] << 7;
            *pp = p + 2;
            return 0;
        }
        uint64_t w;
        memcpy(&w, p, sizeof w); /* little-endian (the reader checks the byte order) */
        uint64_t stops = ~w & 0x8080808080808080ull;
        if (__builtin_expect(stops != 0, 1)) {
            unsigned bits = (unsigned)__builtin_ctzll(stops) + 1; /* through the last byte's top bit */
            uint64_t x = bits == 64 ? w : w & ((1ull << bits) - 1);
            x &= 0x7f7f7f7f7f7f7f7full;
            /* squeeze the 7-bit groups together */
            x = ((x & 0x7f007f007f007f00ull) >> 1) | (x & 0x007f007f007f007full);
            x = ((x & 0x3fff00003fff0000ull) >> 2) | (x & 0x00003fff00003fffull);
            x = ((x & 0x0fffffff00000000ull) >> 4) | (x & 0x000000000fffffffull);
            *out = x;
            *pp = p + bits / 8;
            return 0;
        }
    }
    return cmt_varint_get(pp, end, out);
}

/* An IPC record (format 2.2) that verifies but cannot be: an api that is no
 * IPC call (or none yet in the trace's format), or a kind that is not the api's. Named like other damage. */
static bool ipc_record_bad(struct cmt_reader *r, const struct cursor *c, const uint8_t *rec,
                           const struct cmt_event_in *e)
{
    const char *what = NULL;
    if (e->api < CMT_API_IPC_FIRST || e->api > CMT_API_IPC_LAST)
        what = "an IPC record names an API that is no IPC call";
    else if (e->kind != default_kind[e->api])
        what = "an IPC record has a memory kind that is not its API's";
    else if (e->api >= CMT_API_CU_MEM_POOL_EXPORT_TO_SHAREABLE_HANDLE && r->info.version_minor < 3)
        what = "an IPC record names a pool's sharing API (format 2.3) in a trace of an older format";
    if (!what)
        return false;
    set_error(r, "damaged event record at offset %llu (chunk at offset %llu): %s (api %u, kind %u)",
              (unsigned long long)(rec - r->data), (unsigned long long)c->chunk_off, what, (unsigned)e->api,
              (unsigned)e->kind);
    return true;
}

/* Decodes the next delivered record of c into c->next: every record and
 * every case decode_fast leaves (cursor_decode). */
static enum decode_result __attribute__((noinline)) cursor_decode_slow(struct cmt_reader *r, struct cursor *c)
{
    for (;;) {
        const uint8_t *rec = c->pos;
        if (rec == c->commit_end && cursor_at_commit(r, c) != DECODE_EVENT)
            return DECODE_DAMAGED;
        if (rec == c->commit_end && r->follow && !c->final)
            return DECODE_PENDING;
        /* What lies past the commit word of a chunk still being written
         * may be a record half written: not read (cmt_reader_open_mode). */
        if (rec >= c->end || (r->committed && rec >= c->commit_end))
            return DECODE_END;
        if (rec[0] == CMT_REC_NONE || (rec >= c->commit_end && c->past_commit)) {
            if (rec < c->commit_end) {
                set_error(r,
                          "damaged event chunk at offset %llu: the record at offset %llu is zero, but the chunk "
                          "commits records up to offset %llu",
                          (unsigned long long)c->chunk_off, (unsigned long long)(rec - r->data),
                          (unsigned long long)(c->commit_end - r->data));
                return DECODE_DAMAGED;
            }
            return chunk_tail_clean(r, c->chunk_off, rec, c->end, CMT_MAX_EVENT_RECORD, "event") ? DECODE_END
                                                                                                 : DECODE_DAMAGED;
        }
        if (c->end - rec < 3)
            return cursor_damaged(r, c, rec);
        const uint8_t *p = rec + 2;
        const uint8_t *end = c->end;
        uint64_t mask, v;
        if (get_varint(&p, end, &mask) != 0 || mask > 0xffffffffu)
            return cursor_damaged(r, c, rec);
        struct cmt_event_in *e = &c->next;
        r->stats.slow_records++;
        c->rare_set = true;
        e->type = rec[0];
        e->api = rec[1];
        e->kind = default_kind[rec[1]];
        e->mask = (uint32_t)mask;
        e->tid = c->tid;
        uint64_t ts = c->prev_ts, addr = e->addr;
        int32_t device = e->device;
        e->size = e->stream = e->stack = 0;
        e->result = 0;
        e->aux[0] = e->aux[1] = e->aux[2] = e->aux[3] = 0;
#define FIELD(bit)                                         \
    if (mask & (bit)) {                                    \
        if (get_varint(&p, end, &v) != 0)                  \
            return cursor_damaged(r, c, rec);
#define END_FIELD }
        FIELD(CMT_F_TS) ts += (uint64_t)cmt_zigzag_decode(v); END_FIELD
        FIELD(CMT_F_DEVICE) device = device_of_field(v); END_FIELD
        FIELD(CMT_F_ADDR) addr += (uint64_t)cmt_zigzag_decode(v); END_FIELD
        FIELD(CMT_F_SIZE) e->size = v; END_FIELD
        FIELD(CMT_F_STREAM) e->stream = v; END_FIELD
        FIELD(CMT_F_RESULT) e->result = (int32_t)(uint32_t)v; END_FIELD
        FIELD(CMT_F_STACK) e->stack = v; END_FIELD
        FIELD(CMT_F_KIND) e->kind = v < 256 ? (uint8_t)v : 255; END_FIELD
        if (mask & (CMT_F_AUX0 | CMT_F_AUX1 | CMT_F_AUX2 | CMT_F_AUX3)) {
            for (unsigned i = 0; i < CMT_AUX_COUNT; i++)
                FIELD(CMT_F_AUX0 << i) e->aux[i] = v; END_FIELD
        }
        /* Fields from a newer minor version: one varint each, skipped. */
        for (uint64_t rest = mask & ~(uint64_t)CMT_F_KNOWN_MASK; rest; rest &= rest - 1)
            if (get_varint(&p, end, &v) != 0)
                return cursor_damaged(r, c, rec);
#undef FIELD
#undef END_FIELD
        int vr = verify_record(&c->chain, rec, p, end);
        if (vr == -2)
            return cursor_damaged(r, c, rec);
        if (vr != 0) {
            set_error(r, "damaged event record at offset %llu (chunk at offset %llu): its checksum does not match",
                      (unsigned long long)(rec - r->data), (unsigned long long)c->chunk_off);
            return DECODE_DAMAGED;
        }
        p += CMT_RECORD_CHECK_SIZE;
        if (rec < c->commit_end && p > c->commit_end) {
            set_error(r,
                      "damaged event chunk at offset %llu: the record at offset %llu runs past the chunk's commit "
                      "end (offset %llu)",
                      (unsigned long long)c->chunk_off, (unsigned long long)(rec - r->data),
                      (unsigned long long)(c->commit_end - r->data));
            return DECODE_DAMAGED;
        }
        if (rec >= c->commit_end)
            c->past_commit = true; /* committed, its commit word not yet stored: the writer was killed */
        if (__builtin_expect(e->type == CMT_REC_IPC, 0) && ipc_record_bad(r, c, rec, e))
            return DECODE_DAMAGED;
        if (ts < c->prev_ts && !r->warned_order) {
            r->warned_order = true;
            add_warning(r, "events of thread %u are out of time order at offset %llu", c->tid,
                        (unsigned long long)(rec - r->data));
        }
        c->prev_ts = ts;
        e->ts = ts;
        e->addr = addr;
        e->device = device;
        set_packed(r, e);
        c->pos = p;
        if (e->type < CMT_REC_TYPE_COUNT)
            return DECODE_EVENT;
        /* A record type from a newer writer: same shape, skipped. */
    }
}

/* ---- the fast path of decoding ---------------------------------------------- */

/* Most records are allocations and releases well inside a chunk's committed
 * part, with a one- or two-byte mask and short fields: decode_fast reads
 * those without a bounds check per field and verifies them with two crc32
 * instructions. Whatever it does not take (the last records before the
 * commit end or the chunk's end, a record that does not verify, a long
 * field, an IPC record or an unknown type, a thread out of time order, a
 * zero byte) goes to cursor_decode_slow from the same record, which says
 * what is wrong with it, so the two paths deliver the same events and the
 * same errors. Callgrind, bench_gen_trace's 1 million events, the reading
 * loop with its decoding (the function itself, without the callback): 219
 * instructions per event at 0f6d910, 152 with a copy per common mask and
 * BMI (read_loop_bmi2). */

/* Room decode_fast needs past a record's start: the longest record its masks
 * allow, and one word load past its last field. */
#define DECODE_FAST_MARGIN (CMT_MAX_EVENT_RECORD + 16u)

/* Sets where c's records are committed up to, and the part decode_fast
 * reads. */
static void cursor_set_commit(struct cursor *c, const uint8_t *commit_end)
{
    c->commit_end = commit_end;
    const uint8_t *limit = commit_end < c->end ? commit_end : c->end;
    c->fast_end = limit - c->pos > (ptrdiff_t)DECODE_FAST_MARGIN ? limit - DECODE_FAST_MARGIN : c->pos;
}

#if defined(__x86_64__) && defined(__GNUC__)
#define DECODE_FAST_CRC 1
/* The crc32 instruction (SSE4.2) as an inline asm: a function with
 * target("sse4.2") could not be inlined here. Used only where the CPU has it
 * (decode_fast_crc). */
static inline uint64_t crc32_u64(uint64_t crc, uint64_t w)
{
    __asm__("crc32q %1, %0" : "+r"(crc) : "rm"(w));
    return crc;
}

/* BMI2's pext, as an inline asm for the same reason; used only where the
 * CPU has it and it is fast (decode_fast_pext). */
static inline uint64_t pext_u64(uint64_t w, uint64_t mask)
{
    uint64_t x;
    __asm__("pextq %2, %1, %0" : "=r"(x) : "r"(w), "rm"(mask));
    return x;
}

/* pext is one instruction of 3 cycles on Intel since Haswell and AMD since
 * Zen 3, but microcode of tens to hundreds of cycles on earlier AMD (Zen 1
 * and 2, families 17h and Hygon's 18h): there the shifts and masks are
 * faster. */
static bool pext_is_fast(void)
{
    /* BMI1 too: the loop that uses pext is compiled for both (read_loop_bmi2) */
    if (!__builtin_cpu_supports("bmi2") || !__builtin_cpu_supports("bmi"))
        return false;
    unsigned a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d))
        return false;
    char vendor[13];
    memcpy(vendor, &b, 4);
    memcpy(vendor + 4, &d, 4);
    memcpy(vendor + 8, &c, 4);
    vendor[12] = 0;
    if (strcmp(vendor, "AuthenticAMD") != 0 && strcmp(vendor, "HygonGenuine") != 0)
        return true;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return false;
    unsigned family = (a >> 8) & 0xf;
    if (family == 0xf)
        family += (a >> 20) & 0xff;
    return family >= 0x19;
}

/* The CRC-32C register update of the n bytes (4 <= n <= 16) that end at
 * body_end, from state: computed from the 16 bytes that end there, those
 * before the n zeroed and the state XORed into the first four of the n. A
 * CRC register update without inversions from 0 is unchanged by leading
 * zero bytes, and the register's start value enters linearly into the
 * first 32 bits of the message: so this is the CRC of the n bytes from
 * that state, in two crc32 instructions and without a branch on n. How the
 * 16 bytes are masked and where the state goes, by n (32 bytes an entry,
 * one shift to index them): */
struct chain_window {
    uint64_t keep_lo, keep_hi; /* the body's bytes in the two words */
    /* the state's bytes in the low word: state << shift_lo, those past it
     * cut by keep_lo; in the high word: state << up_hi >> down_hi (none:
     * shifted down by 32) */
    uint8_t shift_lo, up_hi, down_hi;
} __attribute__((aligned(32)));

static struct chain_window chain_windows[17];

static void init_chain_windows(void)
{
    for (unsigned n = 4; n <= 16; n++) {
        unsigned k = 16 - n; /* bytes before the body */
        struct chain_window *w = &chain_windows[n];
        w->keep_lo = k >= 8 ? 0 : ~0ull << (8 * k);
        w->keep_hi = k <= 8 ? ~0ull : ~0ull << (8 * (k - 8));
        /* the state's 4 bytes go to bytes k..k+3 of the 16 */
        w->shift_lo = (uint8_t)(k < 8 ? 8 * k : 0);
        w->up_hi = (uint8_t)(k > 8 ? 8 * (k - 8) : 0);
        w->down_hi = (uint8_t)(k <= 4 ? 32 : k <= 8 ? 8 * (8 - k) : 0);
    }
}

static inline uint32_t chain_last16(uint32_t state, const uint8_t *body_end, size_t n)
{
    const struct chain_window *t = &chain_windows[n];
    uint64_t lo, hi;
    memcpy(&lo, body_end - 16, sizeof lo);
    memcpy(&hi, body_end - 8, sizeof hi);
    lo = (lo ^ ((uint64_t)state << t->shift_lo)) & t->keep_lo;
    hi = (hi & t->keep_hi) ^ ((uint64_t)state << t->up_hi >> t->down_hi);
    return (uint32_t)crc32_u64(crc32_u64(0, lo), hi);
}
#endif

/* A varint of one to eight bytes at p (no bounds check: the caller keeps
 * DECODE_FAST_MARGIN); NULL for a longer one. Values of one byte (masks,
 * stack ids, small deltas) take a branch, predicted per field; longer ones
 * are decoded from one 8-byte load without a branch on their length. The
 * value's bits are those up to the first byte without a continuation bit
 * (stops ^ (stops - 1), its top bit and those below it), less the
 * continuation bits; its length in bytes is that top bit's position / 8 + 1.
 * c80 is 0x8080808080808080 (decode_fast_fields). */
static inline const uint8_t *fast_varint(const uint8_t *p, uint64_t *out, const bool pext, uint64_t c80)
{
    if (p[0] < 0x80) {
        *out = p[0];
        return p + 1;
    }
    uint64_t w;
    memcpy(&w, p, sizeof w); /* little-endian (the reader checks the byte order) */
    uint64_t stops = ~w & c80;
    if (__builtin_expect(stops == 0, 0))
        return NULL;
    uint64_t bits = (stops ^ (stops - 1)) & ~c80;
    const uint8_t *next = p + ((unsigned)__builtin_ctzll(stops) >> 3) + 1;
#ifdef DECODE_FAST_CRC
    if (pext) {
        *out = pext_u64(w, bits);
        return next;
    }
#else
    (void)pext;
#endif
    uint64_t x = w & bits;
    /* squeeze the 7-bit groups together */
    x = ((x & 0x7f007f007f007f00ull) >> 1) | (x & 0x007f007f007f007full);
    x = ((x & 0x3fff00003fff0000ull) >> 2) | (x & 0x00003fff00003fffull);
    x = ((x & 0x0fffffff00000000ull) >> 4) | (x & 0x000000000fffffffull);
    *out = x;
    return next;
}

/* Fields most records lack: c->next keeps them zero without a store per
 * record while its records lack them (cursor.rare_set). */
#define FAST_RARE_FIELDS (CMT_F_STREAM | CMT_F_RESULT | CMT_F_AUX0 | CMT_F_AUX1 | CMT_F_AUX2 | CMT_F_AUX3)

_Static_assert(offsetof(struct cmt_event_in, packed_device) == 44 && offsetof(struct cmt_event_in, type) == 45 &&
                   offsetof(struct cmt_event_in, api) == 46 && offsetof(struct cmt_event_in, packed_kind) == 47 &&
                   offsetof(struct cmt_event_in, kind) == 48 && offsetof(struct cmt_event_in, mask) == 52,
               "the packed device, type, api and packed kind in 4 bytes, the kind and the mask in the next 8 (a "
               "store each in decode_fast_fields)");

/* The fields of the record at rec, from p (after its mask), and its check:
 * decode_fast's work once it has the mask. Inlined with the masks records
 * usually have as constants (decode_fast), so that their tests fold away:
 * with the mask a variable, a test per field the format knows was about a
 * tenth of the reading thread's instructions (callgrind). */
static inline __attribute__((always_inline)) bool decode_fast_fields(struct cmt_reader *r, struct cursor *c,
                                                                     const uint8_t *rec, const uint8_t *p,
                                                                     const uint64_t mask, const bool pext)
{
    /* A mask decode_fast passes as a constant without the rare fields:
     * they are zeroed only when the chunk's last record had some. */
    const bool rare = !__builtin_constant_p(mask) || (mask & FAST_RARE_FIELDS);
    struct cmt_event_in *e = &c->next;
    /* The deltas and the kind stay raw values until the record verifies;
     * the other fields go to c->next as they come (a record that goes to
     * the general path after all is written whole again there). */
    uint64_t ts_v = 0, device_v = 0, addr_v = 0, kind_v = 0, v;
    /* In a register for every field (and not folded: each field loaded
     * 0x80... and 0x7f... anew, callgrind). */
    uint64_t c80 = 0x8080808080808080ull;
    __asm__("" : "+r"(c80));
#define FAST_FIELD(bit, set, absent)                   \
    if (mask & (bit)) {                                \
        if (!(p = fast_varint(p, &v, pext, c80)))      \
            return false;                              \
        set;                                           \
    } else {                                           \
        absent;                                        \
    }
    FAST_FIELD(CMT_F_TS, ts_v = v, (void)0)
    FAST_FIELD(CMT_F_DEVICE, device_v = v, (void)0)
    FAST_FIELD(CMT_F_ADDR, addr_v = v, (void)0)
    FAST_FIELD(CMT_F_SIZE, e->size = v, e->size = 0)
    FAST_FIELD(CMT_F_STREAM, e->stream = v, if (rare) e->stream = 0)
    FAST_FIELD(CMT_F_RESULT, e->result = (int32_t)(uint32_t)v, if (rare) e->result = 0)
    FAST_FIELD(CMT_F_STACK, (e->stack = v, e->packed_stack = packed_stack_of(r, v)),
               (e->stack = 0, e->packed_stack = 0))
    FAST_FIELD(CMT_F_KIND, kind_v = v, (void)0)
    if (mask & (CMT_F_AUX0 | CMT_F_AUX1 | CMT_F_AUX2 | CMT_F_AUX3)) {
        for (unsigned i = 0; i < CMT_AUX_COUNT; i++)
            FAST_FIELD(CMT_F_AUX0 << i, e->aux[i] = v, e->aux[i] = 0)
        e->packed_aux = e->aux[cmt_event_packed_aux_index(rec[1])];
    } else if (rare) {
        memset(e->aux, 0, sizeof e->aux);
        e->packed_aux = 0;
    }
#undef FAST_FIELD
    if (rare) {
        c->rare_set = (mask & FAST_RARE_FIELDS) != 0;
    } else if (__builtin_expect(c->rare_set, 0)) {
        e->stream = 0;
        e->result = 0;
        memset(e->aux, 0, sizeof e->aux);
        e->packed_aux = 0;
        c->rare_set = false;
    }
    unsigned type = rec[0];
    size_t n = (size_t)(p - rec - 1);
    uint32_t chain;
#ifdef DECODE_FAST_CRC
    /* pext: the CPU has crc32 too (r->fast_pext); n >= 4 is certain with
     * two fields (the api, the mask and each field a byte at least) */
    const bool n_fits = __builtin_constant_p(mask) && __builtin_popcountll(mask) >= 2;
    if (__builtin_expect((pext || r->fast_crc) && (n_fits || n >= 4), 1)) {
        /* a longer body: its first 8 bytes at a time, the last 9 to 16 from
         * their window */
        uint64_t state = c->chain ^ type;
        for (const uint8_t *b = rec + 1; n > 16; b += 8, n -= 8) {
            uint64_t w;
            memcpy(&w, b, sizeof w);
            state = crc32_u64(state, w);
        }
        chain = chain_last16((uint32_t)state, p, n);
    } else
#endif
        chain = cmt_record_chain(c->chain, (uint8_t)type, rec + 1, n);
    uint16_t check;
    memcpy(&check, p, sizeof check);
    if (check != cmt_record_check16(chain))
        return false; /* the slow path says so */
    uint64_t ts = c->prev_ts + (uint64_t)cmt_zigzag_decode(ts_v);
    if (__builtin_expect(ts < c->prev_ts, 0) && !r->warned_order)
        return false; /* the slow path warns */
    /* default kinds are below 0x80: packed as they are */
    uint8_t kind = mask & CMT_F_KIND ? (kind_v < 256 ? (uint8_t)kind_v : 255) : default_kind[rec[1]];
    uint8_t packed_kind = mask & CMT_F_KIND ? packed_kind_of(kind) : kind;
    /* the address and the device stay as they are without their fields */
    if (mask & CMT_F_ADDR)
        e->addr += (uint64_t)cmt_zigzag_decode(addr_v);
    int8_t packed_device;
    if (mask & CMT_F_DEVICE) {
        e->device = device_of_field(device_v);
        packed_device = packed_device_of(e->device);
    } else {
        packed_device = e->packed_device;
    }
    /* the packed device, type and api as they lie in the record, the
     * packed kind; then the kind and the mask (a little-endian host, as
     * fast_varint's loads assume) */
    uint16_t type_api;
    memcpy(&type_api, rec, sizeof type_api);
    uint32_t packed_head = (uint8_t)packed_device | (uint32_t)type_api << 8 | (uint32_t)packed_kind << 24;
    memcpy(&e->packed_device, &packed_head, sizeof packed_head);
    uint64_t head = kind | mask << 32;
    memcpy(&e->kind, &head, sizeof head);
    e->ts = ts;
    c->chain = chain;
    c->prev_ts = ts;
    c->pos = p + CMT_RECORD_CHECK_SIZE;
    return true;
}

/* Decodes the record at rec (below c->fast_end) into c->next as
 * cursor_decode_slow would, and moves past it; false when the record is one
 * decode_fast leaves (c->next may then be changed: the general path writes
 * it whole). */
static inline __attribute__((always_inline)) bool decode_fast(struct cmt_reader *r, struct cursor *c,
                                                              const uint8_t *rec, const bool pext)
{
    unsigned type = rec[0];
    if (type - 1u >= CMT_REC_IPC - 1u)
        return false; /* zero (damage), IPC records (their own checks), unknown types (skipped) */
    const uint8_t *p = rec + 3;
    uint64_t mask = rec[2];
    if (mask >= 0x80) {
        mask = (mask & 0x7f) | (uint64_t)*p++ << 7;
        if (mask > CMT_F_KNOWN_MASK)
            return false; /* fields of a newer writer, or a longer mask */
    }
    /* The masks of most records (the shim's and bench_gen_trace's
     * allocations, releases and blocks), each decoded by a copy of its own,
     * tested in the order of how often they come: allocations and releases
     * first (a switch compared each with three to four, callgrind). */
#define FAST_MASK(m)                                                     \
    if (__builtin_expect(mask == (m), 1))                                \
        return decode_fast_fields(r, c, rec, p, (m), pext);
    FAST_MASK(CMT_F_TS | CMT_F_ADDR | CMT_F_SIZE | CMT_F_STACK)
    FAST_MASK(CMT_F_TS | CMT_F_ADDR)
    FAST_MASK(CMT_F_TS | CMT_F_ADDR | CMT_F_SIZE | CMT_F_STREAM | CMT_F_STACK)
    FAST_MASK(CMT_F_TS | CMT_F_ADDR | CMT_F_STREAM)
    FAST_MASK(CMT_F_TS | CMT_F_SIZE)
    FAST_MASK(CMT_F_TS | CMT_F_ADDR | CMT_F_SIZE)
#undef FAST_MASK
    return decode_fast_fields(r, c, rec, p, mask, pext);
}

/* Decodes the next delivered record of c into c->next (pext: whether
 * decode_fast may use it, a constant where it is inlined). */
static inline __attribute__((always_inline)) enum decode_result cursor_decode_with(struct cmt_reader *r,
                                                                                   struct cursor *c, const bool pext)
{
    const uint8_t *rec = c->pos;
    if (__builtin_expect(rec < c->fast_end, 1) && decode_fast(r, c, rec, pext))
        return DECODE_EVENT;
    return cursor_decode_slow(r, c);
}

static inline enum decode_result cursor_decode(struct cmt_reader *r, struct cursor *c)
{
    return cursor_decode_with(r, c, false);
}

/* ---- the merge heap, ordered by (ts, chunk offset) ---------------------------- */

static inline bool entry_before(const struct heap_entry *a, const struct heap_entry *b)
{
    return a->ts < b->ts || (a->ts == b->ts && a->chunk_off < b->chunk_off);
}

static void heap_sift_up(struct cmt_reader *r, size_t i)
{
    struct heap_entry x = r->heap[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!entry_before(&x, &r->heap[parent]))
            break;
        r->heap[i] = r->heap[parent];
        i = parent;
    }
    r->heap[i] = x;
}

/* Places x at position i or below. x comes by value: storing a new key into
 * the heap and reading the entry back whole stalls on store forwarding. */
static void heap_sift_down(struct cmt_reader *r, size_t i, struct heap_entry x)
{
    size_t n = r->heap_len;
    for (;;) {
        size_t l = 2 * i + 1;
        if (l >= n)
            break;
        size_t m = l + 1 < n && entry_before(&r->heap[l + 1], &r->heap[l]) ? l + 1 : l;
        if (!entry_before(&r->heap[m], &x))
            break;
        r->heap[i] = r->heap[m];
        i = m;
    }
    r->heap[i] = x;
}

static void update_run_limit(struct cmt_reader *r)
{
    uint64_t limit = UINT64_MAX;
    /* strictly below: equal keys order by chunk offset, left to the heap */
    if (r->heap_len > 1 && r->heap[1].ts < limit)
        limit = r->heap[1].ts;
    if (r->heap_len > 2 && r->heap[2].ts < limit)
        limit = r->heap[2].ts;
    r->run_limit = r->heap_len ? limit : 0;
}

static int heap_push(struct cmt_reader *r, struct cursor *c)
{
    if (r->heap_len == r->heap_cap) {
        size_t cap = r->heap_cap ? r->heap_cap * 2 : 16;
        struct heap_entry *h = realloc(r->heap, cap * sizeof *h);
        if (!h)
            return -1;
        r->heap = h;
        r->heap_cap = cap;
    }
    r->heap[r->heap_len++] = (struct heap_entry){c->next.ts, c->chunk_off, c};
    heap_sift_up(r, r->heap_len - 1);
    update_run_limit(r);
    if (r->heap_len > r->stats.max_open_chunks)
        r->stats.max_open_chunks = r->heap_len;
    return 0;
}

/* ---- metadata records ------------------------------------------------------- */

struct payload {
    const uint8_t *p;
    const uint8_t *end;
    bool bad;
};

static uint64_t pl_varint(struct payload *b)
{
    uint64_t v = 0;
    if (!b->bad && cmt_varint_get(&b->p, b->end, &v) != 0)
        b->bad = true;
    return b->bad ? 0 : v;
}

static const uint8_t *pl_bytes(struct payload *b, size_t *len)
{
    uint64_t n = pl_varint(b);
    if (b->bad || n > (uint64_t)(b->end - b->p)) {
        b->bad = true;
        *len = 0;
        return NULL;
    }
    const uint8_t *s = b->p;
    b->p += n;
    *len = (size_t)n;
    return s;
}

static uint32_t pl_id(struct payload *b)
{
    uint64_t v = pl_varint(b);
    if (v > UINT32_MAX)
        b->bad = true;
    return (uint32_t)v;
}

static int meta_process(struct cmt_reader *r, struct payload *b)
{
    struct cmt_process_in p = {0};
    p.pid = pl_varint(b);
    p.ppid = pl_varint(b);
    p.exe_id = pl_id(b);
    uint64_t argc = pl_varint(b);
    /* Every argument id takes at least one byte: bounded by the payload. */
    if (b->bad || argc > (uint64_t)(b->end - b->p))
        return -1;
    uint32_t *args = calloc(argc ? argc : 1, sizeof *args);
    if (!args)
        return -1;
    for (uint64_t i = 0; i < argc; i++)
        args[i] = pl_id(b);
    p.argc = (uint32_t)argc;
    p.arg_ids = args;
    p.hostname_id = pl_id(b);
    p.rank = cmt_zigzag_decode(pl_varint(b));
    p.cwd_id = pl_id(b);
    if (!b->bad && r->cb->on_process)
        r->cb->on_process(r->ctx, &p);
    free(args);
    return b->bad ? -1 : 0;
}

/* A rank or size below -1 (unknown) is no writer's: the record is bad. */
static int64_t pl_rank(struct payload *b)
{
    int64_t v = cmt_zigzag_decode(pl_varint(b));
    if (v < -1)
        b->bad = true;
    return v;
}

static int meta_job(struct cmt_reader *r, struct payload *b)
{
    struct cmt_job_in j = {0};
    j.ts = pl_varint(b);
    j.source = pl_varint(b);
    j.rank = pl_rank(b);
    j.local_rank = pl_rank(b);
    j.world_size = pl_rank(b);
    j.local_world_size = pl_rank(b);
    j.job_id = pl_id(b);
    uint64_t n = pl_varint(b);
    /* Two ids of at least one byte each per variable: bounded by the payload. */
    if (b->bad || n > (uint64_t)(b->end - b->p) / 2)
        return -1;
    for (uint64_t i = 0; i < n; i++) {
        struct cmt_job_var_in v = {pl_id(b), pl_id(b)};
        if (v.name_id == 0 || v.value_id == 0)
            b->bad = true;
        if (i < CMT_JOB_MAX_VARS)
            j.vars[i] = v;
    }
    j.nvars = n < CMT_JOB_MAX_VARS ? (uint32_t)n : CMT_JOB_MAX_VARS;
    if (b->bad)
        return -1;
    if (r->cb->on_job)
        r->cb->on_job(r->ctx, &j);
    return 0;
}

static int meta_stack(struct cmt_reader *r, struct payload *b)
{
    uint32_t id = pl_id(b);
    uint32_t known = pl_id(b);
    uint64_t n = pl_varint(b);
    if (b->bad)
        return -1;
    if (n > READER_MAX_FRAMES) {
        add_warning(r, "stack %u has %llu frames; only stacks up to %u frames are read", id,
                    (unsigned long long)n, READER_MAX_FRAMES);
        return 0;
    }
    uint64_t prev = 0;
    for (uint64_t i = 0; i < n; i++) {
        prev += (uint64_t)cmt_zigzag_decode(pl_varint(b));
        r->frames[i] = prev;
    }
    if (b->bad)
        return -1;
    if (id == 0)
        return -1;
    if (r->cb->on_stack)
        r->cb->on_stack(r->ctx, id, known, r->frames, (uint32_t)n);
    return 0;
}

static int meta_dispatch(struct cmt_reader *r, uint8_t type, struct payload *b)
{
    const struct cmt_reader_callbacks *cb = r->cb;
    switch (type) {
    case CMT_META_STRING: {
        uint32_t id = pl_id(b);
        size_t len;
        const uint8_t *s = pl_bytes(b, &len);
        if (b->bad || id == 0)
            return -1;
        if (cb->on_string)
            cb->on_string(r->ctx, id, (const char *)s, len);
        return 0;
    }
    case CMT_META_MODULE: {
        struct cmt_module_in m = {0};
        m.id = pl_id(b);
        m.path_id = pl_id(b);
        m.bias = pl_varint(b);
        m.lo = pl_varint(b);
        m.hi = pl_varint(b);
        m.build_id = pl_bytes(b, &m.build_id_len);
        m.ts = pl_varint(b);
        if (b->bad || m.id == 0)
            return -1;
        if (cb->on_module)
            cb->on_module(r->ctx, &m);
        return 0;
    }
    case CMT_META_STACK:
        return meta_stack(r, b);
    case CMT_META_PROCESS:
        return meta_process(r, b);
    case CMT_META_THREAD: {
        uint32_t tid = pl_id(b), name = pl_id(b);
        if (b->bad)
            return -1;
        if (cb->on_thread)
            cb->on_thread(r->ctx, tid, name);
        return 0;
    }
    case CMT_META_CONFIG: {
        struct cmt_config_in c = {0};
        c.stack_depth = pl_varint(b);
        c.free_stacks = pl_varint(b);
        c.sample_ms = pl_varint(b);
        c.max_size = pl_varint(b);
        c.version_id = pl_id(b);
        if (b->bad)
            return -1;
        if (cb->on_config)
            cb->on_config(r->ctx, &c);
        return 0;
    }
    case CMT_META_DEVICE: {
        struct cmt_device_in d = {0};
        d.ordinal = pl_id(b);
        d.name_id = pl_id(b);
        d.total = pl_varint(b);
        if (b->bad)
            return -1;
        if (b->p < b->end) {
            /* the uuid: 16 bytes, or none (0 bytes: not known) */
            size_t len = 0;
            const uint8_t *u = pl_bytes(b, &len);
            if (b->bad || (len != 0 && len != sizeof d.uuid))
                return -1;
            if (len) {
                memcpy(d.uuid, u, sizeof d.uuid);
                d.has_uuid = true;
            }
        }
        if (cb->on_device)
            cb->on_device(r->ctx, &d);
        return 0;
    }
    case CMT_META_FRAME: {
        struct cmt_frame_in f = {0};
        f.id = pl_id(b);
        f.function_id = pl_id(b);
        f.file_id = pl_id(b);
        f.line = pl_id(b);
        f.language = pl_id(b);
        if (b->bad || f.id == 0)
            return -1;
        if (cb->on_frame)
            cb->on_frame(r->ctx, &f);
        return 0;
    }
    case CMT_META_END: {
        struct cmt_end_in e = {0};
        e.ts = pl_varint(b);
        e.reason = pl_varint(b);
        e.events_dropped = pl_varint(b);
        e.flags = pl_varint(b);
        e.claimed_end = pl_varint(b);
        e.chunks = pl_varint(b);
        e.exit_status = -1;
        if (b->p < b->end) { /* the exit status + 1, 0 unknown: a trailing field, absent before */
            uint64_t st = pl_varint(b);
            e.exit_status = st >= 1 && st <= 256 ? (int32_t)(st - 1) : -1;
        }
        if (b->bad)
            return -1;
        r->end_seen = true;
        r->end = e;
        if (cb->on_end)
            cb->on_end(r->ctx, &e);
        return 0;
    }
    case CMT_META_NOTE: {
        struct cmt_note_in n = {0};
        n.ts = pl_varint(b);
        n.source = pl_varint(b);
        n.text_id = pl_id(b);
        if (b->bad)
            return -1;
        if (cb->on_note)
            cb->on_note(r->ctx, &n);
        return 0;
    }
    case CMT_META_ALLOCATOR: {
        struct cmt_allocator_in a = {0};
        a.ts = pl_varint(b);
        a.framework = pl_varint(b);
        a.version_id = pl_id(b);
        a.state = pl_varint(b);
        a.backend_id = pl_id(b);
        if (b->p < b->end) { /* 2.4 */
            a.alloc_conf_id = pl_id(b);
            a.cuda_alloc_conf_id = pl_id(b);
            a.settings_known = true;
        }
        if (b->bad)
            return -1;
        if (cb->on_allocator)
            cb->on_allocator(r->ctx, &a);
        return 0;
    }
    case CMT_META_JOB:
        return meta_job(r, b);
    default:
        return 0; /* a record type from a newer writer: skipped */
    }
}

/* The chunk being read, as its header says. */
struct chunk_view {
    uint64_t off;
    const uint8_t *body;
    const uint8_t *end;        /* the chunk's end, or the file's when it cuts the chunk */
    const uint8_t *commit_end;
    uint32_t commit_state;
    uint32_t chain;            /* the chunk's header_check: the chain's start */
    bool cut_by_eof;
};

#define META_PARTIAL_MAX (CMT_MAX_META_RECORD + 4u + 10u + CMT_RECORD_CHECK_SIZE)

/* Reads a metadata chunk's records from *pos (the chain's state there in
 * *chain). Returns 0 at its end, -1 on damage, and in follow mode, for a
 * chunk that may grow (!final), 1 at its commit word: *pos, *chain and
 * *past_commit then say where the next poll goes on. */
static int read_meta_records(struct cmt_reader *r, const struct chunk_view *v, const uint8_t **pos, uint32_t *chain_io,
                             bool *past_commit_io, bool final)
{
    const uint8_t *p = *pos, *end = v->end;
    uint32_t chain = *chain_io;
    bool past_commit = *past_commit_io;
    for (;;) {
        if (p == v->commit_end && chain != v->commit_state) {
            set_error(r,
                      "damaged metadata chunk at offset %llu: its records up to offset %llu do not match the "
                      "chunk's commit checksum",
                      (unsigned long long)v->off, (unsigned long long)(v->commit_end - r->data));
            return -1;
        }
        if (p == v->commit_end && !final) {
            *pos = p;
            *chain_io = chain;
            *past_commit_io = past_commit;
            return 1;
        }
        if (p >= end || (r->committed && p >= v->commit_end))
            return 0;
        if (p[0] == CMT_META_NONE || (p >= v->commit_end && past_commit)) {
            if (p < v->commit_end) {
                set_error(r,
                          "damaged metadata chunk at offset %llu: the record at offset %llu is zero, but the chunk "
                          "commits records up to offset %llu",
                          (unsigned long long)v->off, (unsigned long long)(p - r->data),
                          (unsigned long long)(v->commit_end - r->data));
                return -1;
            }
            return chunk_tail_clean(r, v->off, p, end, META_PARTIAL_MAX, "metadata") ? 0 : -1;
        }
        const uint8_t *rec = p;
        uint8_t type = p[0];
        p++;
        uint64_t len;
        if (cmt_varint_get(&p, end, &len) != 0 || len > (uint64_t)(end - p) ||
            (uint64_t)(end - p) - len < CMT_RECORD_CHECK_SIZE) {
            if (v->cut_by_eof) {
                r->truncated = true;
                add_warning(r, "trace is truncated inside a metadata record at offset %llu",
                            (unsigned long long)(rec - r->data));
                return 0;
            }
            set_error(r, "damaged metadata record at offset %llu (its length runs past its chunk)",
                      (unsigned long long)(rec - r->data));
            return -1;
        }
        if (verify_record(&chain, rec, p + len, end) != 0) {
            set_error(r, "damaged metadata record (type %u) at offset %llu (chunk at offset %llu): its checksum "
                         "does not match",
                      type, (unsigned long long)(rec - r->data), (unsigned long long)v->off);
            return -1;
        }
        const uint8_t *next = p + len + CMT_RECORD_CHECK_SIZE;
        if (rec < v->commit_end && next > v->commit_end) {
            set_error(r,
                      "damaged metadata chunk at offset %llu: the record at offset %llu runs past the chunk's "
                      "commit end (offset %llu)",
                      (unsigned long long)v->off, (unsigned long long)(rec - r->data),
                      (unsigned long long)(v->commit_end - r->data));
            return -1;
        }
        if (rec >= v->commit_end)
            past_commit = true;
        struct payload b = {p, p + len, false};
        if (meta_dispatch(r, type, &b) != 0) {
            set_error(r, "damaged metadata record (type %u) at offset %llu", type,
                      (unsigned long long)(rec - r->data));
            return -1;
        }
        r->stats.meta_records++;
        p = next;
    }
}

static int read_meta_chunk(struct cmt_reader *r, const struct chunk_view *v)
{
    const uint8_t *p = v->body;
    uint32_t chain = v->chain;
    bool past_commit = false;
    return read_meta_records(r, v, &p, &chain, &past_commit, true);
}

/* ---- chunks ------------------------------------------------------------------ */

/* Pages of a chunk read to its end leave the process's memory: a trace is
 * read once, and without this the mapped file would count in full towards
 * the resident set, which must not grow with the trace. A page shared with
 * a neighbouring chunk still being read is faulted in again from the page
 * cache when that chunk touches it. */
static void release_now(struct cmt_reader *r, uint64_t from, uint64_t to)
{
    uint64_t lo = from & ~(r->page_size - 1);
    uint64_t hi = (to + r->page_size - 1) & ~(r->page_size - 1);
    if (hi > r->size)
        hi = r->size & ~(r->page_size - 1);
    if (hi > lo && lo >= r->page_size) /* the header page stays */
        madvise((void *)(r->data + lo), hi - lo, MADV_DONTNEED);
}

/* Released a few chunks at a time: with two threads each madvise stops the
 * replay's CPU too (the TLB shootdown's interrupt), one per 256 KiB chunk
 * before. Neighbouring ranges are joined up to RELEASE_BATCH, which bounds
 * what stays resident meanwhile; the rest at the end of a read. */
#define RELEASE_BATCH (2u << 20)

static void release_pending(struct cmt_reader *r)
{
    if (r->release_hi > r->release_lo)
        release_now(r, r->release_lo, r->release_hi);
    r->release_lo = r->release_hi = 0;
}

static void release_range(struct cmt_reader *r, uint64_t from, uint64_t to)
{
    if (!r->mapped || !r->page_size || to <= from)
        return;
    if (r->release_hi > r->release_lo && from == r->release_hi)
        r->release_hi = to;
    else if (r->release_hi > r->release_lo && to == r->release_lo)
        r->release_lo = from;
    else {
        release_pending(r);
        r->release_lo = from;
        r->release_hi = to;
    }
    if (r->release_hi - r->release_lo >= RELEASE_BATCH)
        release_pending(r);
}

static void cursor_count(struct cmt_reader *r, struct cursor *c)
{
    r->stats.bytes_of_records += (uint64_t)(c->pos - c->counted);
    c->counted = c->pos;
}

/* Counts the records read so far in the chunks still open: when a read
 * returns. */
static void count_open_cursors(struct cmt_reader *r)
{
    for (size_t i = 0; i < r->heap_len; i++)
        cursor_count(r, r->heap[i].c);
    for (size_t i = 0; i < r->n_pending; i++)
        cursor_count(r, r->pending[i]);
}

static void cursor_done(struct cmt_reader *r, struct cursor *c)
{
    cursor_count(r, c);
    release_range(r, c->chunk_off, (uint64_t)(c->end - r->data));
    free(c);
}

/* After the last chunk: what a writer can leave there is the header fields
 * of a chunk it was claiming (magic still zero), then zeros to the end of
 * the file (preallocated space, or nothing after a clean exit's trim). */
static int check_file_tail(struct cmt_reader *r, uint64_t off)
{
    r->chunks_done = true;
    uint64_t from = off + CMT_CHUNK_HEADER_SIZE;
    if (off < r->header.claimed_end && off < r->size) {
        set_error(r,
                  "damaged trace: no chunk at offset %llu (its magic is zero), but the header says chunks were "
                  "claimed up to offset %llu",
                  (unsigned long long)off, (unsigned long long)r->header.claimed_end);
        return -1;
    }
    if (r->end_seen)
        from = off; /* after a clean exit nothing was being claimed */
    const uint8_t *bad;
    if (from < r->size && !all_zero(r->data + from, r->data + r->size, &bad)) {
        set_error(r, "damaged trace: unexpected nonzero byte at offset %llu after its last chunk (offset %llu)",
                  (unsigned long long)(bad - r->data), (unsigned long long)off);
        return -1;
    }
    return 0;
}

static bool chunk_header_ok(const struct cmt_reader *r, uint64_t off, const struct cmt_chunk_header *h)
{
    (void)r;
    return h->header_check == cmt_chunk_header_check(off, h) && h->reserved == 0;
}

/* Opens the next chunk in file order: metadata is delivered now, an event
 * chunk joins the merge. Returns 0, or -1 on damage. Sets chunks_done at the
 * end of the claimed part of the file. */
static int open_next_chunk(struct cmt_reader *r)
{
    uint64_t off = r->next_chunk;
    /* Read as committed when opened: chunks claimed since are not looked at,
     * nor the space reserved past them. */
    if (off >= r->size || (r->committed && off >= r->header.claimed_end)) {
        r->chunks_done = true;
        return 0;
    }
    if (r->size - off < CMT_CHUNK_HEADER_SIZE) {
        bool zeros = true;
        for (uint64_t i = off; i < r->size; i++)
            zeros = zeros && r->data[i] == 0;
        if (!zeros || off < r->header.claimed_end) {
            r->truncated = true;
            add_warning(r, "trace is truncated: it ends inside a chunk header at offset %llu",
                        (unsigned long long)off);
        }
        r->chunks_done = true;
        return 0;
    }
    struct cmt_chunk_header h;
    memcpy(&h, r->data + off, sizeof h);
    /* The commit word, read whole (its writer may be appending): the
     * records up to it are complete once it is seen. */
    h.commit = __atomic_load_n(&((const struct cmt_chunk_header *)(const void *)(r->data + off))->commit,
                               __ATOMIC_ACQUIRE);
    if (h.magic == 0)
        return check_file_tail(r, off);
    bool known = h.magic == CMT_CHUNK_MAGIC_EVENTS || h.magic == CMT_CHUNK_MAGIC_META ||
                 h.magic == CMT_CHUNK_MAGIC_PAD;
    if (!known || !chunk_header_ok(r, off, &h)) {
        set_error(r, "damaged chunk header at offset %llu: %s", (unsigned long long)off,
                  known ? "its checksum does not match" : "unknown magic");
        return -1;
    }
    if (h.size < CMT_CHUNK_HEADER_SIZE || h.size % CMT_CHUNK_ALIGN ||
        (h.magic != CMT_CHUNK_MAGIC_PAD && h.size > CMT_CHUNK_MAX_SIZE)) {
        set_error(r, "damaged chunk header at offset %llu: size %u", (unsigned long long)off, h.size);
        return -1;
    }
    uint32_t commit_end = (uint32_t)h.commit;
    if (h.magic != CMT_CHUNK_MAGIC_PAD && (commit_end < CMT_CHUNK_HEADER_SIZE || commit_end > h.size)) {
        set_error(r, "damaged chunk header at offset %llu: its commit word (offset %llu) says %u bytes of %u",
                  (unsigned long long)off, (unsigned long long)(off + offsetof(struct cmt_chunk_header, commit)),
                  commit_end, h.size);
        return -1;
    }
    if (h.magic != CMT_CHUNK_MAGIC_PAD) {
        r->chunks_seen++;
        if (off >= r->header.claimed_end && ++r->chunks_past_claimed > 1) {
            set_error(r, "damaged trace: chunk at offset %llu lies past the header's claimed end (offset %llu)",
                      (unsigned long long)off, (unsigned long long)r->header.claimed_end);
            return -1;
        }
    }
    r->next_chunk = off + h.size;
    bool cut = off + h.size > r->size;
    if (cut) {
        r->truncated = true;
        add_warning(r, "trace is truncated: %llu bytes of the chunk at offset %llu are missing; events up to "
                       "there are analysed",
                    (unsigned long long)(off + h.size - r->size), (unsigned long long)off);
    }
    const uint8_t *body = r->data + off + CMT_CHUNK_HEADER_SIZE;
    const uint8_t *end = cut ? r->data + r->size : r->data + off + h.size;
    if (h.magic == CMT_CHUNK_MAGIC_PAD) {
        int rc = chunk_tail_clean(r, off, body, end, 0, "padding") ? 0 : -1;
        release_range(r, off, (uint64_t)(end - r->data));
        return rc;
    }
    if (h.claim_ns < r->last_claim_ns)
        add_warning(r, "chunk claim times go backwards at offset %llu", (unsigned long long)off);
    r->last_claim_ns = h.claim_ns;
    struct chunk_view v = {
        .off = off,
        .body = body,
        .end = end,
        .commit_end = r->data + off + commit_end,
        .commit_state = (uint32_t)(h.commit >> 32),
        .chain = h.header_check,
        .cut_by_eof = cut,
    };
    if (h.magic == CMT_CHUNK_MAGIC_META) {
        r->stats.meta_chunks++;
        int rc = read_meta_chunk(r, &v);
        release_range(r, off, (uint64_t)(end - r->data));
        return rc;
    }
    r->stats.event_chunks++;
    struct cursor *c = calloc(1, sizeof *c);
    if (!c) {
        set_error(r, "out of memory");
        return -1;
    }
    c->pos = body;
    c->end = end;
    cursor_set_commit(c, v.commit_end);
    c->commit_state = v.commit_state;
    c->chain = v.chain;
    c->chunk_off = off;
    c->cut_by_eof = cut;
    c->prev_ts = h.claim_ns;
    c->next.addr = h.base_addr;
    c->tid = h.tid;
    c->next.tid = h.tid; /* the same for every event of the chunk: written once */
    c->counted = body;
    enum decode_result d = cursor_decode(r, c);
    if (d != DECODE_EVENT) {
        cursor_done(r, c);
        return d == DECODE_DAMAGED ? -1 : 0;
    }
    if (heap_push(r, c) != 0) {
        free(c);
        set_error(r, "out of memory");
        return -1;
    }
    return 0;
}

/* The claim time of the next chunk in file order, kept until it is opened:
 * reading its header for every event costs a cache miss each time. */
static void peek_next_claim(struct cmt_reader *r)
{
    r->has_next_claim = false;
    uint64_t off = r->next_chunk;
    if (r->chunks_done || off >= r->size || r->size - off < CMT_CHUNK_HEADER_SIZE)
        return;
    if (r->committed && off >= r->header.claimed_end)
        return;
    struct cmt_chunk_header h;
    memcpy(&h, r->data + off, sizeof h);
    if (h.magic == 0 && off >= r->header.claimed_end)
        return;
    r->has_next_claim = true;
    /* Padding and damaged headers are opened at once (claim 0). */
    r->next_claim = (h.magic == CMT_CHUNK_MAGIC_EVENTS || h.magic == CMT_CHUNK_MAGIC_META) &&
                            chunk_header_ok(r, off, &h)
                        ? h.claim_ns
                        : 0;
}

/* After every chunk was read: what the header and the END record say must
 * agree with what was found. */
static void finish_checks(struct cmt_reader *r)
{
    if (r->finished)
        return;
    r->finished = true;
    if (r->end_seen) {
        r->info.events_dropped = r->end.events_dropped;
        if (r->error[0])
            return;
        if (r->end.flags != r->header.flags)
            set_error(r, "damaged trace header: its flags (offset %zu) are 0x%x, the END record says 0x%llx",
                      offsetof(struct cmt_file_header, flags), r->header.flags, (unsigned long long)r->end.flags);
        else if (r->end.claimed_end != r->header.claimed_end)
            set_error(r,
                      "damaged trace header: its claimed_end (offset %zu) is %llu, the END record says %llu",
                      offsetof(struct cmt_file_header, claimed_end), (unsigned long long)r->header.claimed_end,
                      (unsigned long long)r->end.claimed_end);
        else if (!r->truncated && r->end.chunks != r->chunks_seen)
            set_error(r, "damaged trace: %llu chunks found, the END record says %llu were written",
                      (unsigned long long)r->chunks_seen, (unsigned long long)r->end.chunks);
        else if (r->chunks_past_claimed)
            set_error(r, "damaged trace: a chunk lies past the header's claimed end (offset %llu)",
                      (unsigned long long)r->header.claimed_end);
    } else if ((r->info.flags & CMT_FILE_FLAG_CLEAN_EXIT) && !r->committed) {
        /* The flag is set just before the END record is written: the
         * process was killed in between, or the record could not be read.
         * (Read as committed, the END record may simply come later.) */
        r->info.flags &= ~(uint32_t)CMT_FILE_FLAG_CLEAN_EXIT;
        if (!r->error[0] && !r->truncated)
            add_warning(r, "the trace has no END record although its header says the process exited: it was "
                           "ended while finishing the trace");
    }
}

static void open_and_peek(struct cmt_reader *r)
{
    if (open_next_chunk(r) != 0)
        r->chunks_done = true; /* damage: deliver what is already open, then stop */
    peek_next_claim(r);
}

void cmt_reader_portable_decode(struct cmt_reader *r)
{
    r->portable = true;
}

static void reader_start(struct cmt_reader *r)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, init_default_kinds);
#ifdef DECODE_FAST_CRC
    r->fast_crc = decode_fast_crc && !r->portable;
    r->fast_pext = decode_fast_pext && decode_fast_crc && !r->portable;
#else
    r->fast_crc = r->fast_pext = false;
#endif
}

static int no_event(void *ctx, const struct cmt_event_in *e)
{
    (void)ctx, (void)e;
    return 0;
}

/* Delivers c's events while they come before until: the reader's
 * innermost loop, in two copies (with pext and without). The callback and
 * the count come in registers: through r, each event reloaded them after
 * the call. Returns the result of the last decode, or DECODE_STOPPED when
 * on_event asked to stop. */
static inline __attribute__((always_inline)) enum decode_result
deliver_run(struct cmt_reader *r, struct cursor *c, uint64_t until, int (*on_event)(void *, const struct cmt_event_in *),
            void *ctx, const bool pext)
{
    enum decode_result d;
    uint64_t n = 0;
    do {
        n++;
        if (on_event(ctx, &c->next) != 0) {
            d = DECODE_STOPPED;
            break;
        }
        d = cursor_decode_with(r, c, pext);
    } while (d == DECODE_EVENT && c->next.ts < until);
    r->stats.events += n;
    return d;
}

/* The events of the whole trace, merged by time; returns what
 * cmt_reader_run does. In two copies, as deliver_run. */
static inline __attribute__((always_inline)) int read_loop(struct cmt_reader *r,
                                                           int (*on_event)(void *, const struct cmt_event_in *),
                                                           void *ctx, const bool pext)
{
    for (;;) {
        if (r->heap_len == 0) {
            if (r->chunks_done)
                break;
            open_and_peek(r);
            continue;
        }
        /* Every chunk claimed at or before the earliest pending event may
         * hold earlier events: open those first (W1, W2). */
        struct cursor *c = r->heap[0].c;
        if (r->has_next_claim && r->next_claim <= r->heap[0].ts) {
            open_and_peek(r);
            continue;
        }
        /* A thread's events come in runs: while the next one is earlier
         * than every other open chunk's and than the next chunk's claim,
         * they are delivered in this loop and the heap stays as it is. */
        uint64_t until = r->has_next_claim && r->next_claim < r->run_limit ? r->next_claim : r->run_limit;
        enum decode_result d = deliver_run(r, c, until, on_event, ctx, pext);
        if (d == DECODE_STOPPED) {
            count_open_cursors(r);
            return 0;
        }
        struct heap_entry top;
        if (d == DECODE_DAMAGED) {
            r->chunks_done = true; /* deliver what is open, then stop */
            r->has_next_claim = false;
        }
        if (d == DECODE_EVENT) {
            if (c->next.ts < r->run_limit) {
                r->heap[0].ts = c->next.ts; /* the next chunk opens first */
                continue;
            }
            top = (struct heap_entry){c->next.ts, c->chunk_off, c};
        } else {
            /* End of this chunk's records, or damage inside it: the other
             * threads' events before the damage are still delivered. */
            top = r->heap[--r->heap_len];
            cursor_done(r, c);
        }
        if (r->heap_len > 1)
            heap_sift_down(r, 0, top);
        else if (r->heap_len == 1)
            r->heap[0] = top;
        update_run_limit(r);
    }
    count_open_cursors(r);
    finish_checks(r);
    return r->error[0] ? -1 : 0;
}

#ifdef DECODE_FAST_CRC
/* Compiled for the CPUs that take it (pext_is_fast: BMI1 and BMI2, and
 * crc32): the decoding's shifts, masks and bit scans then take BMI's
 * instructions (shlx, andn, blsmsk, tzcnt), no longer moves into %cl and
 * copies of constants (bench-instructions: the reading side 287 -> 274
 * instructions per event of bench_gen_trace). */
static __attribute__((noinline, target("sse4.2,bmi,bmi2"))) int
read_loop_bmi2(struct cmt_reader *r, int (*on_event)(void *, const struct cmt_event_in *), void *ctx)
{
    return read_loop(r, on_event, ctx, true);
}
#endif

static __attribute__((noinline)) int read_loop_portable(struct cmt_reader *r,
                                                        int (*on_event)(void *, const struct cmt_event_in *),
                                                        void *ctx)
{
    return read_loop(r, on_event, ctx, false);
}

int cmt_reader_run(struct cmt_reader *r, const struct cmt_reader_callbacks *cb, void *ctx)
{
    reader_start(r);
    r->cb = cb;
    r->ctx = ctx;
    int (*on_event)(void *, const struct cmt_event_in *) = cb->on_event ? cb->on_event : no_event;
    peek_next_claim(r);
    int rc;
#ifdef DECODE_FAST_CRC
    if (r->fast_pext)
        rc = read_loop_bmi2(r, on_event, ctx);
    else
#endif
        rc = read_loop_portable(r, on_event, ctx);
    release_pending(r);
    return rc;
}

/* ---- follow mode: a trace still being written ------------------------------- */

/* The file is mapped once with this much room: pages past its end become
 * readable as the writer's posix_fallocate grows it, and the cursors'
 * pointers stay valid. Address space only (MAP_NORESERVE, read-only). Where
 * that much cannot be had (valgrind's address space, a `ulimit -v`), a
 * quarter of it, and so on down to FOLLOW_RESERVE_MIN. */
#define FOLLOW_RESERVE (64ull << 30)
#define FOLLOW_RESERVE_MIN (64ull << 20)

int cmt_reader_open_follow(const char *path, struct cmt_reader **out, char *err, size_t errlen)
{
    /* A regular file only, opened without blocking (as cmt_reader_open_mode). */
    struct stat before;
    if (stat(path, &before) == 0 && !S_ISREG(before.st_mode)) {
        snprintf(err, errlen, "not a regular file: give the path of a trace file");
        return -EINVAL;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        int e = errno;
        snprintf(err, errlen, "cannot open: %s; check the path", strerror(e));
        return -e;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        snprintf(err, errlen, "not a regular file: give the path of a trace file");
        return -EINVAL;
    }
    size_t reserve = FOLLOW_RESERVE;
    void *data = mmap(NULL, reserve, PROT_READ, MAP_SHARED | MAP_NORESERVE, fd, 0);
    while (data == MAP_FAILED && reserve / 4 >= FOLLOW_RESERVE_MIN && reserve / 4 >= (size_t)st.st_size) {
        reserve /= 4;
        data = mmap(NULL, reserve, PROT_READ, MAP_SHARED | MAP_NORESERVE, fd, 0);
    }
    if (data == MAP_FAILED) {
        int e = errno;
        close(fd);
        snprintf(err, errlen, "cannot map it into memory: %s; check `ulimit -v`", strerror(e));
        return -e;
    }
    int rc = cmt_reader_open_memory(data, (size_t)st.st_size, out, err, errlen);
    if (rc != 0) {
        munmap(data, reserve);
        close(fd);
        return rc;
    }
    struct cmt_reader *r = *out;
    r->follow = true;
    r->fd = fd;
    r->reserved_size = reserve;
    r->mapped = true;
    r->page_size = (uint64_t)sysconf(_SC_PAGESIZE);
    return 0;
}

bool cmt_reader_writer_running(const struct cmt_reader *r)
{
    return r->follow && writer_running(r->fd, r->info.pid, r->info.start_realtime_ns);
}

static uint64_t load_word(const struct cmt_reader *r, uint64_t off)
{
    return __atomic_load_n((const uint64_t *)(const void *)(r->data + off), __ATOMIC_ACQUIRE);
}

/* The file's size and the header's changing words, as they are now. */
static void follow_refresh(struct cmt_reader *r)
{
    struct stat st;
    if (fstat(r->fd, &st) == 0) {
        size_t size = (size_t)st.st_size;
        if (size > r->reserved_size) {
            size = r->reserved_size;
            add_warning(r, "the trace grew past %llu MiB: it is followed up to there",
                        (unsigned long long)(r->reserved_size >> 20));
        }
        if (size >= r->header.header_size)
            r->size = size;
        r->info.file_size = r->size;
    }
    uint64_t claimed = load_word(r, offsetof(struct cmt_file_header, claimed_end));
    if (cmt_checked_word(claimed, CMT_HEADER_CLAIMED_END_OFFSET) == claimed)
        r->header.claimed_end = r->info.claimed_end = claimed & CMT_CHECKED_VALUE_MASK;
    uint32_t flags = __atomic_load_n((const uint32_t *)(const void *)(r->data + offsetof(struct cmt_file_header, flags)),
                                     __ATOMIC_ACQUIRE);
    if (cmt_checked_flags(flags) == flags)
        r->header.flags = r->info.flags = flags & CMT_CHECKED_FLAGS_MASK;
}

/* A chunk's commit word now: where its committed records end and the
 * chain's state there. Returns -1 (damage said) when it is not one. */
static int follow_commit(struct cmt_reader *r, uint64_t off, uint32_t size, const uint8_t **commit_end,
                         uint32_t *state)
{
    uint64_t w = load_word(r, off + offsetof(struct cmt_chunk_header, commit));
    uint32_t end = (uint32_t)w;
    if (end < CMT_CHUNK_HEADER_SIZE || end > size) {
        set_error(r, "damaged chunk header at offset %llu: its commit word (offset %llu) says %u bytes of %u",
                  (unsigned long long)off, (unsigned long long)(off + offsetof(struct cmt_chunk_header, commit)),
                  end, size);
        return -1;
    }
    *commit_end = r->data + off + end;
    *state = (uint32_t)(w >> 32);
    return 0;
}

static int pending_add(struct cmt_reader *r, struct cursor *c)
{
    if (r->n_pending == r->cap_pending) {
        size_t cap = r->cap_pending ? r->cap_pending * 2 : 16;
        struct cursor **p = realloc(r->pending, cap * sizeof *p);
        if (!p)
            return -1;
        r->pending = p;
        r->cap_pending = cap;
    }
    r->pending[r->n_pending++] = c;
    return 0;
}

/* Opens the chunks claimed since the last poll, up to the first whose
 * magic is not stored yet. A thread claims a new chunk only when its
 * current one is full, and the metadata stream likewise: a new chunk makes
 * its predecessor final. */
static int follow_open_chunks(struct cmt_reader *r)
{
    for (;;) {
        uint64_t off = r->next_chunk;
        if (off + CMT_CHUNK_HEADER_SIZE > r->size)
            return 0;
        uint32_t magic = __atomic_load_n((const uint32_t *)(const void *)(r->data + off), __ATOMIC_ACQUIRE);
        if (magic == 0)
            return 0;
        struct cmt_chunk_header h;
        memcpy(&h, r->data + off, sizeof h);
        h.magic = magic;
        bool known = h.magic == CMT_CHUNK_MAGIC_EVENTS || h.magic == CMT_CHUNK_MAGIC_META ||
                     h.magic == CMT_CHUNK_MAGIC_PAD;
        if (!known || !chunk_header_ok(r, off, &h)) {
            set_error(r, "damaged chunk header at offset %llu: %s", (unsigned long long)off,
                      known ? "its checksum does not match" : "unknown magic");
            return -1;
        }
        if (h.size < CMT_CHUNK_HEADER_SIZE || h.size % CMT_CHUNK_ALIGN ||
            (h.magic != CMT_CHUNK_MAGIC_PAD && h.size > CMT_CHUNK_MAX_SIZE)) {
            set_error(r, "damaged chunk header at offset %llu: size %u", (unsigned long long)off, h.size);
            return -1;
        }
        if (off + h.size > r->size)
            return 0; /* the file grows before a chunk is claimed: seen at the next poll */
        r->next_chunk = off + h.size;
        if (h.magic == CMT_CHUNK_MAGIC_PAD)
            continue;
        r->chunks_seen++;
        if (h.claim_ns < r->last_claim_ns)
            add_warning(r, "chunk claim times go backwards at offset %llu", (unsigned long long)off);
        r->last_claim_ns = h.claim_ns;
        const uint8_t *body = r->data + off + CMT_CHUNK_HEADER_SIZE, *end = r->data + off + h.size;
        if (h.magic == CMT_CHUNK_MAGIC_META) {
            r->stats.meta_chunks++;
            for (size_t i = 0; i < r->n_metas; i++)
                r->metas[i].final = true;
            if (r->n_metas == r->cap_metas) {
                size_t cap = r->cap_metas ? r->cap_metas * 2 : 4;
                struct meta_cursor *m = realloc(r->metas, cap * sizeof *m);
                if (!m) {
                    set_error(r, "out of memory");
                    return -1;
                }
                r->metas = m;
                r->cap_metas = cap;
            }
            r->metas[r->n_metas++] = (struct meta_cursor){off, body, end, h.header_check, false, false};
            continue;
        }
        r->stats.event_chunks++;
        for (size_t i = 0; i < r->n_pending; i++)
            if (r->pending[i]->tid == h.tid)
                r->pending[i]->final = true;
        struct cursor *c = calloc(1, sizeof *c);
        if (!c || pending_add(r, c) != 0) {
            free(c);
            set_error(r, "out of memory");
            return -1;
        }
        c->pos = body;
        c->end = end;
        cursor_set_commit(c, body);
        c->chain = h.header_check;
        c->commit_state = h.header_check;
        c->chunk_off = off;
        c->prev_ts = h.claim_ns;
        c->next.addr = h.base_addr;
        c->tid = h.tid;
        c->next.tid = h.tid; /* the same for every event of the chunk: written once */
        c->counted = body;
    }
}

/* The metadata committed so far, read after the event chunks' commit words
 * were taken: a record an event refers to is committed before the event,
 * so every stack, string and module those events name is read first. */
static int follow_read_metas(struct cmt_reader *r)
{
    size_t keep = 0;
    for (size_t i = 0; i < r->n_metas; i++) {
        struct meta_cursor *m = &r->metas[i];
        uint32_t size = (uint32_t)(m->end - (r->data + m->off));
        struct chunk_view v = {.off = m->off, .body = r->data + m->off + CMT_CHUNK_HEADER_SIZE, .end = m->end};
        if (follow_commit(r, m->off, size, &v.commit_end, &v.commit_state) != 0)
            return -1;
        bool final = m->final || r->end_seen;
        int rc = read_meta_records(r, &v, &m->pos, &m->chain, &m->past_commit, final);
        if (rc < 0)
            return -1;
        if (rc == 0)
            release_range(r, m->off, (uint64_t)(m->end - r->data));
        else
            r->metas[keep++] = *m;
    }
    r->n_metas = keep;
    return 0;
}

int cmt_reader_poll(struct cmt_reader *r, const struct cmt_reader_callbacks *cb, void *ctx)
{
    reader_start(r);
    if (!r->follow)
        return -1; /* the caller's error: cmt_reader_open_follow opens readers that poll */
    r->cb = cb;
    r->ctx = ctx;
    if (r->error[0])
        return -1;
    if (r->finished)
        return 0;
    follow_refresh(r);
    if (follow_open_chunks(r) != 0)
        return -1;
    for (size_t i = 0; i < r->n_pending; i++) {
        struct cursor *c = r->pending[i];
        const uint8_t *commit_end;
        if (follow_commit(r, c->chunk_off, (uint32_t)(c->end - (r->data + c->chunk_off)), &commit_end,
                          &c->commit_state) != 0)
            return -1;
        cursor_set_commit(c, commit_end);
    }
    if (follow_read_metas(r) != 0)
        return -1;
    /* The END record just read: the metadata chunks are final too, read to
     * their ends (the tail checks of a whole read). */
    if (r->end_seen && r->n_metas && follow_read_metas(r) != 0)
        return -1;
    /* Every event chunk's commit word was taken before the metadata: once
     * the END record is read, nothing more is written anywhere. */
    size_t n = r->n_pending;
    r->n_pending = 0;
    for (size_t i = 0; i < n; i++) {
        struct cursor *c = r->pending[i];
        c->final = c->final || r->end_seen;
        enum decode_result d = cursor_decode(r, c);
        if (d == DECODE_EVENT) {
            if (heap_push(r, c) != 0) {
                free(c);
                set_error(r, "out of memory");
            }
        } else if (d == DECODE_PENDING) {
            r->pending[r->n_pending++] = c;
        } else {
            cursor_done(r, c);
        }
    }
    /* Merged by time, as far as each chunk is committed. A record committed
     * after a later one of another thread was delivered (its writer took
     * the time, then was preempted before the commit) comes at the next
     * poll; it is delivered with the latest time delivered, so the replay
     * never goes back in time. */
    while (r->heap_len) {
        struct cursor *c = r->heap[0].c;
        /* Events of this chunk before the next one of any other chunk
         * (strictly: equal keys are the heap's to order) come without heap
         * work: a sift per event was 7% of a live view's instructions with
         * one writing thread (callgrind). */
        uint64_t limit = UINT64_MAX;
        if (r->heap_len > 1)
            limit = r->heap[1].ts;
        if (r->heap_len > 2 && r->heap[2].ts < limit)
            limit = r->heap[2].ts;
        enum decode_result d;
        do {
            /* Delivered in place, as a whole read does: a copy of the event
             * loaded it as 16-byte vectors just after cursor_decode stored it
             * field by field, which cannot be forwarded from those stores
             * and stalled until they retired (most of the 15% of a live
             * view's time perf put in this loop). The next decode starts
             * from c->prev_ts, never from c->next, so a late event's time
             * is raised where it lies. */
            struct cmt_event_in *e = &c->next;
            if (e->ts < r->follow_ts) {
                e->ts = r->follow_ts;
                r->late_events++;
            }
            r->follow_ts = e->ts;
            r->stats.events++;
            if (cb->on_event)
                cb->on_event(ctx, e);
            d = cursor_decode(r, c);
        } while (d == DECODE_EVENT && c->next.ts < limit);
        if (d == DECODE_EVENT) {
            heap_sift_down(r, 0, (struct heap_entry){c->next.ts, c->chunk_off, c});
            continue;
        }
        struct heap_entry top = r->heap[--r->heap_len];
        if (r->heap_len)
            heap_sift_down(r, 0, top);
        if (d == DECODE_PENDING && pending_add(r, c) == 0)
            continue;
        cursor_done(r, c);
    }
    count_open_cursors(r);
    release_pending(r);
    if (r->end_seen && r->n_pending == 0 && r->n_metas == 0 && !r->error[0])
        finish_checks(r);
    return r->error[0] ? -1 : 0;
}

bool cmt_reader_follow_ended(const struct cmt_reader *r)
{
    return r->finished;
}

uint64_t cmt_reader_late_events(const struct cmt_reader *r)
{
    return r->late_events;
}
