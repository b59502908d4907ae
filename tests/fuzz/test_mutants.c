/* SPDX-License-Identifier: MIT */
/* Damaged traces are never read as clean (format.h, "Integrity").
 *
 * Two traces written as the shim writes them (the trace builder uses the
 * shim's own encoder): one of a process that exited and leaked 1 MiB (check
 * FAIL), one of a process killed while it appended two records (check ERROR:
 * leaks cannot be judged). Each is damaged in many ways with deterministic
 * seeds: truncations, appended bytes, byte flips, zeroed ranges, every
 * chunk's magic zeroed, header_size changed, header words replaced. Every
 * mutant must either be detected, or leave every figure exactly as it was:
 *
 *   detected: the analysis says damaged or truncated, or the file is refused,
 *             with a message naming the offset (or what it is: not a trace,
 *             another format); `check` then exits 2, and `report` exits 2
 *             with that message (cmt_cli_damage_status);
 *   unchanged: the check's JSON and the report's JSON, every figure, warning
 *             and state in them, are byte for byte the original's.
 *
 * Usage: test_mutants [SCALE]   (SCALE divides the number of random mutants;
 * CMT_MUTANTS_SCALE does the same; under the valgrind test setup it is 8). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis.h"
#include "check.h"
#include "report.h"
#include "trace_builder.h"
#include "render_parts.h"

#define START 1000000000000ull
#define MS 1000000ull
#define MiB (1ull << 20)

static char dir[256];
static char mutant_path[512];
static unsigned scale = 1;
static unsigned long n_mutants, n_detected, n_unchanged;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "test_mutants: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

/* ---- the two traces ------------------------------------------------------------ */

static void event(struct cmt_trace_builder *b, uint32_t tid, uint8_t type, uint8_t api, uint64_t ts, uint64_t addr,
                  uint64_t size, uint64_t stack, int killed_at)
{
    struct cmt_event e = {
        .type = type,
        .api = api,
        .kind = (uint8_t)cmt_api_default_kind(api),
        .has_device = type == CMT_REC_ALLOC || type == CMT_REC_BLOCK,
        .device = 0,
        .ts = START + ts,
        .addr = addr,
        .size = size,
        .stack = stack,
    };
    int rc = killed_at < 0 ? cmt_tb_event(b, tid, &e)
                           : cmt_tb_event_killed(b, tid, &e, (enum cmt_tb_kill_point)killed_at);
    if (rc != 0)
        fail("cannot add an event");
}

/* Two threads allocate and free in steps; a 1 MiB buffer of load_cache is
 * never freed. killed: the process dies with a record of each thread half
 * written, the file untrimmed. */
static void write_trace(const char *path, bool killed)
{
    struct cmt_trace_builder_options opt = {.pid = 4321,
                                            .start_monotonic_ns = START,
                                            .start_realtime_ns = 1767225600000000000ull,
                                            .clean_exit = !killed,
                                            .zero_tail = killed ? 96u << 10 : 0};
    struct cmt_trace_builder *b = cmt_tb_create(path, &opt);
    if (!b)
        fail("cannot create %s: %s", path, strerror(errno));
    const char *argv[] = {"/opt/app/train", "--steps", "40"};
    cmt_tb_process(b, 4321, 1, argv[0], 3, argv, "mutanthost", -1, "/opt/app");
    cmt_tb_device(b, 0, "Mutant GPU", 80ull << 30);
    cmt_tb_thread(b, 4321, "main");
    cmt_tb_thread(b, 4322, "loader");
    uint64_t f_main = cmt_tb_frame(b, "main", "/src/app/main.c", 40);
    uint64_t f_step = cmt_tb_frame(b, "train_step", "/src/app/train.c", 88);
    uint64_t f_load = cmt_tb_frame(b, "load_batch", "/src/app/io.c", 21);
    uint64_t f_cache = cmt_tb_frame(b, "load_cache", "/src/app/io.c", 57);
    uint64_t s_step[] = {f_step, f_main}, s_load[] = {f_load, f_main}, s_cache[] = {f_cache, f_load, f_main};
    uint32_t st_step = cmt_tb_stack(b, s_step, 2), st_load = cmt_tb_stack(b, s_load, 2);
    uint32_t st_cache = cmt_tb_stack(b, s_cache, 3);
    uint64_t ts = 1 * MS;
    /* PyTorch's block layer (format 2.1): a 20 MiB segment of the caching
     * allocator with tensors coming and going in it, one kept to exit. */
    cmt_tb_allocator(b, START + ts, CMT_FRAMEWORK_PYTORCH, "2.11.0+cu130", CMT_BLOCKS_ON, "native", NULL, NULL);
    event(b, 4321, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, ts += 500, 0x7f9000000000ull, 20 * MiB, st_step, -1);
    event(b, 4321, CMT_REC_BLOCK, CMT_API_TORCH_SEGMENT_ALLOC, ts += 10, 0x7f9000000000ull, 20 * MiB, 0, -1);
    event(b, 4321, CMT_REC_BLOCK, CMT_API_TORCH_ALLOC, ts += 10, 0x7f9000000000ull, 3 * MiB, st_cache, -1);
    ts += 500;
    for (unsigned i = 0; i < 240; i++) {
        uint64_t blk = 0x7f9000000000ull + 3 * MiB + (uint64_t)(i % 4) * 4 * MiB;
        event(b, 4321, CMT_REC_BLOCK, CMT_API_TORCH_ALLOC, ts += 200, blk, (i % 3 + 1) * MiB, st_step, -1);
        event(b, 4321, CMT_REC_BLOCK, CMT_API_TORCH_FREE_REQUESTED, ts += 100, blk, (i % 3 + 1) * MiB, 0, -1);
        event(b, 4321, CMT_REC_BLOCK, CMT_API_TORCH_FREE_COMPLETED, ts += 100, blk, (i % 3 + 1) * MiB, 0, -1);
        uint64_t a = 0x7f0000000000ull + (uint64_t)(i % 7) * 64 * MiB;
        uint64_t l = 0x7f4000000000ull + (uint64_t)(i % 5) * 8 * MiB;
        event(b, 4321, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, ts += 1000, a, (i % 13 + 1) * MiB, st_step, -1);
        event(b, 4322, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC_ASYNC, ts += 700, l, (i % 3 + 1) * 4096, st_load, -1);
        if (i == 100)
            event(b, 4322, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, ts += 300, 0x7f8000000000ull, MiB, st_cache, -1);
        event(b, 4321, CMT_REC_FREE, CMT_API_CUDA_FREE, ts += 2000, a, 0, 0, -1);
        event(b, 4322, CMT_REC_FREE, CMT_API_CUDA_FREE_ASYNC, ts += 500, l, 0, 0, -1);
    }
    if (killed) {
        /* Killed between a record's type byte and its commit word on one
         * thread, before the type byte on the other. */
        event(b, 4321, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, ts += 1000, 0x7fc000000000ull, 2 * MiB, st_step,
              CMT_TB_KILLED_BEFORE_COMMIT);
        event(b, 4322, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, ts += 1000, 0x7fc100000000ull, 3 * MiB, st_load,
              CMT_TB_KILLED_BEFORE_TYPE);
    } else {
        cmt_tb_end(b, START + ts + 5000, CMT_END_EXIT);
    }
    if (cmt_tb_close(b) != 0)
        fail("cannot write %s", path);
}

/* ---- judging one file --------------------------------------------------------------- */

struct outcome {
    bool opened, damaged, truncated;
    int check_status;
    char message[1024];
    char *figures; /* check JSON + report JSON */
    size_t figures_len;
};

static void judge_file(const char *path, struct outcome *o)
{
    memset(o, 0, sizeof *o);
    struct cmt_check_options opt;
    cmt_check_options_init(&opt);
    opt.no_default_suppressions = true;
    struct cmt_check c;
    char err[512];
    if (cmt_check_init(&c, &opt, err, sizeof err) != 0 || cmt_check_add_trace(&c, path) != 0)
        fail("check engine: %s", err);
    o->check_status = cmt_check_status(&c);
    struct cmt_check_trace *t = c.traces[0];
    o->opened = t->opened;
    if (!t->opened) {
        snprintf(o->message, sizeof o->message, "%s", t->error);
    } else {
        o->damaged = t->analysis.damaged;
        o->truncated = cmt_reader_truncated(t->analysis.reader);
        snprintf(o->message, sizeof o->message, "%s", t->analysis.damaged ? t->analysis.message : t->error);
        FILE *f = open_memstream(&o->figures, &o->figures_len);
        if (!f)
            fail("open_memstream");
        cmt_check_render_json(&c, f);
        cmt_report_render_json(&t->report, f);
        fclose(f);
    }
    cmt_check_free(&c);
}

/* Where a refused file's message says what is wrong without an offset. */
static bool names_what(const char *m)
{
    static const char *const whole_file[] = {
        "offset", "empty file", "not a cumemtrace trace (no CUMEMTRC magic at the start)", "no trace header",
        "written by a newer cumemtrace", "has no checksums and is no longer read", "another byte order"};
    for (size_t i = 0; i < sizeof whole_file / sizeof whole_file[0]; i++)
        if (strstr(m, whole_file[i]))
            return true;
    return false;
}

static const struct outcome *baseline;
static const char *trace_name;

static void try_mutant(const uint8_t *data, size_t len, const char *what, ...) __attribute__((format(printf, 3, 4)));
static void try_mutant(const uint8_t *data, size_t len, const char *what, ...)
{
    char desc[256];
    va_list ap;
    va_start(ap, what);
    vsnprintf(desc, sizeof desc, what, ap);
    va_end(ap);
    FILE *f = fopen(mutant_path, "wb");
    if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0)
        fail("cannot write %s", mutant_path);
    struct outcome o;
    judge_file(mutant_path, &o);
    n_mutants++;
    bool detected = !o.opened || o.damaged || o.truncated;
    if (detected) {
        if (o.check_status != 2)
            fail("%s, %s: detected (%s) but check exits %d, not 2", trace_name, desc, o.message, o.check_status);
        if (o.damaged || !o.opened) {
            if (!names_what(o.message))
                fail("%s, %s: the message does not say where: %s", trace_name, desc, o.message);
        }
        n_detected++;
    } else {
        if (o.check_status != baseline->check_status || o.figures_len != baseline->figures_len ||
            memcmp(o.figures, baseline->figures, o.figures_len) != 0) {
            size_t k = 0;
            while (k < o.figures_len && k < baseline->figures_len && o.figures[k] == baseline->figures[k])
                k++;
            size_t from = k > 300 ? k - 300 : 0;
            fprintf(stderr, "---- first difference, original:\n%.*s\n---- mutant:\n%.*s\n", 400,
                    baseline->figures + from, 400, o.figures + from);
            fail("%s, %s: not detected, and its figures changed (check exits %d, originally %d)", trace_name, desc,
                 o.check_status, baseline->check_status);
        }
        n_unchanged++;
        if (getenv("CMT_MUTANTS_VERBOSE"))
            printf("unchanged: %s, %s\n", trace_name, desc);
    }
    free(o.figures);
}

/* ---- mutants ------------------------------------------------------------------------ */

static uint64_t rng_state;

static uint64_t rnd(void)
{
    /* xorshift64*: deterministic from the seed, the same on every machine */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}

static uint8_t *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fail("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc((size_t)n + 4096);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n)
        fail("cannot read %s", path);
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static void mutate(const char *name, const char *path, uint64_t seed, int expect_status)
{
    trace_name = name;
    size_t len;
    uint8_t *orig = read_file(path, &len);
    /* The original, judged under the mutants' name: the JSON names the file. */
    FILE *f = fopen(mutant_path, "wb");
    if (!f || fwrite(orig, 1, len, f) != len || fclose(f) != 0)
        fail("cannot write %s", mutant_path);
    struct outcome base;
    judge_file(mutant_path, &base);
    if (!base.opened || base.damaged || base.truncated || base.check_status != expect_status)
        fail("%s: the original reads as %s (check exits %d, expected %d)", name,
             base.opened ? base.message : "unreadable", base.check_status, expect_status);
    baseline = &base;
    uint8_t *m = malloc(len + 4096);
    struct cmt_file_header h;
    memcpy(&h, orig, sizeof h);
    /* Where the records are: most random damage goes there, the rest
     * anywhere (a killed trace's zero tail included). */
    size_t focus = h.claimed_end < len ? (size_t)h.claimed_end : len;
    rng_state = seed;
    unsigned n = 400 / scale + 1;

    /* Truncations: fixed places, then random ones. */
    const size_t cuts[] = {0, 4, 8, 100, sizeof(struct cmt_file_header), CMT_FILE_HEADER_SIZE,
                           CMT_FILE_HEADER_SIZE + 20, len / 2, focus - 1, focus - CMT_CHUNK_ALIGN, len - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++)
        if (cuts[i] < len)
            try_mutant(orig, cuts[i], "cut to %zu bytes", cuts[i]);
    for (unsigned i = 0; i < n / 4; i++) {
        size_t at = (size_t)(rnd() % len);
        try_mutant(orig, at, "cut to %zu bytes", at);
    }
    /* Appended bytes: random ones, then zeros. */
    for (unsigned i = 0; i < n / 8; i++) {
        size_t extra = 1 + (size_t)(rnd() % 300);
        memcpy(m, orig, len);
        for (size_t k = 0; k < extra; k++)
            m[len + k] = (uint8_t)(rnd() | 1);
        try_mutant(m, len + extra, "%zu random bytes appended", extra);
    }
    memcpy(m, orig, len);
    memset(m + len, 0, 4096);
    try_mutant(m, len + 4096, "4096 zero bytes appended");
    /* Byte flips. */
    for (unsigned i = 0; i < n; i++) {
        size_t at = (size_t)(rnd() % (i % 5 ? focus : len));
        uint8_t x = (uint8_t)(1 + rnd() % 255);
        memcpy(m, orig, len);
        m[at] ^= x;
        try_mutant(m, len, "byte %zu xor 0x%02x", at, x);
    }
    /* Zeroed ranges. */
    for (unsigned i = 0; i < n / 2; i++) {
        size_t at = (size_t)(rnd() % (i % 5 ? focus : len));
        size_t k = 1 + (size_t)(rnd() % (i % 3 ? 16 : 600));
        if (at + k > len)
            k = len - at;
        memcpy(m, orig, len);
        memset(m + at, 0, k);
        try_mutant(m, len, "%zu bytes zeroed at offset %zu", k, at);
    }
    /* Every chunk's magic zeroed, one at a time; every chunk's size word. */
    unsigned chunks = 0;
    for (size_t off = h.header_size; off + CMT_CHUNK_HEADER_SIZE <= len;) {
        struct cmt_chunk_header c;
        memcpy(&c, orig + off, sizeof c);
        if (c.magic == 0 || c.size == 0)
            break;
        memcpy(m, orig, len);
        memset(m + off, 0, 4);
        try_mutant(m, len, "magic of the chunk at offset %zu zeroed", off);
        /* The chunk's last records zeroed, k bytes back from where its
         * commit word says they end: one of these zeroes exactly its last
         * record, which then looks like the uncommitted tail a killed
         * writer leaves. */
        uint32_t commit_end = (uint32_t)c.commit;
        for (uint32_t k = 1; c.magic != CMT_CHUNK_MAGIC_PAD && k <= 24 && k + CMT_CHUNK_HEADER_SIZE <= commit_end;
             k++) {
            memcpy(m, orig, len);
            memset(m + off + commit_end - k, 0, k);
            try_mutant(m, len, "%u bytes before the commit end of the chunk at offset %zu zeroed", k, off);
        }
        memcpy(m, orig, len);
        uint32_t bigger = c.size + CMT_CHUNK_ALIGN;
        memcpy(m + off + 4, &bigger, 4);
        try_mutant(m, len, "size of the chunk at offset %zu made %u", off, bigger);
        off += c.size;
        chunks++;
    }
    if (chunks < 3)
        fail("%s: only %u chunks: the trace does not exercise chunk damage", name, chunks);
    /* header_size changed. */
    const uint32_t sizes[] = {0, 64, 128, 4032, 4160, 8192, 1u << 20, 0xffffffffu};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        memcpy(m, orig, len);
        memcpy(m + offsetof(struct cmt_file_header, header_size), &sizes[i], 4);
        try_mutant(m, len, "header_size made %u", sizes[i]);
    }
    /* Every 4-byte word of the header struct replaced. */
    for (size_t off = 0; off < sizeof(struct cmt_file_header); off += 4) {
        uint32_t w = (uint32_t)rnd();
        memcpy(m, orig, len);
        memcpy(m + off, &w, 4);
        try_mutant(m, len, "header word at offset %zu made 0x%08x", off, w);
    }
    free(m);
    free(orig);
    free(base.figures);
}

int main(int argc, char **argv)
{
    const char *env = getenv("CMT_MUTANTS_SCALE");
    if (argc > 1)
        scale = (unsigned)strtoul(argv[1], NULL, 10);
    else if (env)
        scale = (unsigned)strtoul(env, NULL, 10);
    else if (getenv("CMT_VALGRIND") && !strcmp(getenv("CMT_VALGRIND"), "1"))
        scale = 8; /* the valgrind setup: a tenth of the time, every targeted mutant kept */
    if (scale == 0)
        scale = 1;
    snprintf(dir, sizeof dir, "%s/cmt-mutants-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir))
        fail("mkdtemp: %s", strerror(errno));
    snprintf(mutant_path, sizeof mutant_path, "%s/mutant.bin", dir);
    char clean[512], killed[512];
    snprintf(clean, sizeof clean, "%s/exited.bin", dir);
    snprintf(killed, sizeof killed, "%s/killed.bin", dir);
    write_trace(clean, false);
    write_trace(killed, true);
    /* The exited trace leaks 1 MiB: FAIL (1). The killed one cannot have its
     * leaks judged: ERROR (2), yet it is not damaged. */
    mutate("exited trace", clean, 0x9e3779b97f4a7c15ull, 1);
    mutate("killed trace", killed, 0xd1b54a32d192ed03ull, 2);
    printf("%lu mutants: %lu detected, %lu with every figure unchanged\n", n_mutants, n_detected, n_unchanged);
    unlink(mutant_path);
    unlink(clean);
    unlink(killed);
    rmdir(dir);
    return 0;
}
