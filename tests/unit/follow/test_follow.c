/* SPDX-License-Identifier: MIT */
/* The follower's windows (analyzer/follow/follow.h) over a trace the
 * builder writes: what a window is charged with and what it leaves, PyTorch
 * tensors rounded as its allocator rounds them, a caching allocator's
 * segments never charged, nested windows charging the innermost, a phase
 * of another name not a window, the default suppressions, and what an
 * earlier window still holds. Figures are read from the JSON the library
 * hands out. */
#include <unistd.h>

#include "follow.h"
#include "test_util.h"
#include "trace_builder.h"

#define MiB (1ull << 20)

static char dir[64], path[128];
static uint64_t now = 1000;

static void ev(struct cmt_trace_builder *b, uint8_t type, uint8_t api, uint64_t addr, uint64_t size, uint32_t stack,
               uint64_t name)
{
    struct cmt_event e = {.type = type, .api = api, .kind = cmt_api_default_kind(api), .has_device = true,
                          .ts = now += 100, .addr = addr, .size = size, .stack = stack};
    if (type == CMT_REC_MARK)
        e.aux[CMT_MARK_AUX_NAME] = name;
    CHECK(cmt_tb_event(b, 7, &e) == 0);
}

static void push(struct cmt_trace_builder *b, const char *name)
{
    ev(b, CMT_REC_MARK, CMT_API_MARK_PUSH, 0, 0, 0, cmt_tb_string(b, name));
}

static void pop(struct cmt_trace_builder *b)
{
    ev(b, CMT_REC_MARK, CMT_API_MARK_POP, 0, 0, 0, 0);
}

static uint32_t stack_named(struct cmt_trace_builder *b, const char *function, const char *file, uint32_t line)
{
    uint64_t frames[2] = {cmt_tb_frame_language(b, function, file, line, 1),
                          cmt_tb_frame_language(b, "test", "test_x.py", 99, 1)};
    return cmt_tb_stack(b, frames, 2);
}

/* The JSON text of the first window's object named name, up to the next. */
static const char *window(const char *json, const char *name, char *buf, size_t len)
{
    char key[128];
    snprintf(key, sizeof key, "\"name\":\"%s\"", name);
    const char *w = strstr(json, key);
    CHECK(w != NULL);
    const char *end = strstr(w + 1, "{\"id\":");
    size_t n = end ? (size_t)(end - w) : strlen(w);
    CHECK(n < len);
    memcpy(buf, w, n);
    buf[n] = 0;
    return buf;
}

static void has(const char *text, const char *part)
{
    if (!strstr(text, part)) {
        fprintf(stderr, "expected %s in %s\n", part, text);
        exit(1);
    }
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/cmt-follow-XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/t.bin", dir);
    struct cmt_trace_builder_options opt = {.pid = 9, .start_monotonic_ns = 1000, .clean_exit = true};
    struct cmt_trace_builder *b = cmt_tb_create(path, &opt);
    CHECK(b != NULL);
    cmt_tb_allocator(b, now, CMT_FRAMEWORK_PYTORCH, "2.11.0", 0, "native", NULL, NULL);
    uint32_t user = stack_named(b, "make", "model.py", 12);
    uint32_t other = stack_named(b, "other", "model.py", 30);
    uint64_t seg_frames[2] = {cmt_tb_frame(b, "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc",
                                           "CUDACachingAllocator.cpp", 1),
                              cmt_tb_frame_language(b, "test", "test_x.py", 5, 1)};
    uint32_t segment = cmt_tb_stack(b, seg_frames, 2);
    uint64_t cublas_frames[2] = {cmt_tb_frame(b, "cublasCreate_v2", "cublas.cpp", 1),
                                 cmt_tb_frame_language(b, "test", "test_x.py", 6, 1)};
    uint32_t cublas = cmt_tb_stack(b, cublas_frames, 2);

    /* Window A: a 20 MiB segment (the cache: not charged), two tensors in
     * it (1000 B rounds to 1024 B; 3 MiB), the first let go; a cuBLAS
     * handle's 1 MiB (suppressed by default); a driver allocation freed. */
    push(b, "w:A");
    ev(b, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 0x10000000, 20 * MiB, segment, 0);
    ev(b, CMT_REC_BLOCK, CMT_API_TORCH_SEGMENT_ALLOC, 0x10000000, 20 * MiB, 0, 0);
    ev(b, CMT_REC_BLOCK, CMT_API_TORCH_ALLOC, 0x10000000, 1000, user, 0);
    ev(b, CMT_REC_BLOCK, CMT_API_TORCH_ALLOC, 0x10000400, 3 * MiB, other, 0);
    ev(b, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 0x20000000, 1 * MiB, cublas, 0);
    ev(b, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 0x30000000, 8 * MiB, user, 0);
    ev(b, CMT_REC_BLOCK, CMT_API_TORCH_FREE_REQUESTED, 0x10000000, 1000, 0, 0);
    ev(b, CMT_REC_FREE, CMT_API_CUDA_FREE, 0x30000000, 0, 0, 0);
    pop(b);
    /* Window B with a phase of another name and window C inside: C is
     * charged what is allocated while it is innermost. */
    push(b, "w:B");
    push(b, "forward");
    ev(b, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 0x40000000, 2 * MiB, user, 0);
    push(b, "w:C");
    ev(b, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 0x50000000, 5 * MiB, other, 0);
    pop(b);
    ev(b, CMT_REC_FREE, CMT_API_CUDA_FREE, 0x40000000, 0, 0, 0);
    pop(b);
    pop(b);
    cmt_tb_end(b, now += 100, 0);
    CHECK(cmt_tb_close(b) == 0);

    struct cmt_follow *f;
    char err[512];
    struct cmt_follow_options fo = {.window_prefix = "w:"};
    CHECK(cmt_follow_open(path, &fo, &f, err, sizeof err) == 0);
    CHECK(cmt_follow_poll(f, err, sizeof err) == 0);
    char *json = cmt_follow_take_json(f, NULL);
    CHECK(json != NULL);
    has(json, "\"ended\":true");
    has(json, "\"block_layer\":\"on\"");
    /* In the order they closed: A, then C (inner), then B. */
    const char *a = strstr(json, "\"name\":\"w:A\""), *c = strstr(json, "\"name\":\"w:C\""),
               *bb = strstr(json, "\"name\":\"w:B\"");
    CHECK(a && c && bb && a < c && c < bb);
    static char buf[8192];
    window(json, "w:A", buf, sizeof buf);
    has(buf, "\"cached_bytes\":20971520,\"cached_count\":1");
    /* peak: 1024 (1000 rounded) + 3 MiB + 1 MiB + 8 MiB; left: the 3 MiB tensor and the 1 MiB */
    has(buf, "\"devices\":[{\"device\":0,\"peak_bytes\":12583936,\"left_bytes\":4194304,\"left_count\":2}]");
    has(buf, "{\"bytes\":3145728,\"count\":1,\"device\":0,\"memory\":\"tensor\",\"api\":\"torch:alloc\","
             "\"suppressed_by\":null,\"site\":{\"function\":\"other\",\"file\":\"model.py\",\"line\":30");
    has(buf, "{\"bytes\":1048576,\"count\":1,\"device\":0,\"memory\":\"device\",\"api\":\"cudaMalloc\","
             "\"suppressed_by\":\"leak:cublasCreate (default.supp:");
    window(json, "w:C", buf, sizeof buf);
    has(buf, "\"devices\":[{\"device\":0,\"peak_bytes\":5242880,\"left_bytes\":5242880,\"left_count\":1}]");
    window(json, "w:B", buf, sizeof buf);
    has(buf, "\"devices\":[{\"device\":0,\"peak_bytes\":2097152,\"left_bytes\":0,\"left_count\":0}]");
    has(buf, "\"left\":[]");
    CHECK(strstr(json, "forward") == NULL); /* not a window */
    free(json);
    /* Nothing closed since; window 1 (A) still holds its two. */
    json = cmt_follow_take_json(f, NULL);
    has(json, "\"windows\":[]");
    free(json);
    json = cmt_follow_held_json(f, 1, NULL);
    CHECK(json != NULL);
    has(json, "\"name\":\"w:A\",\"held\":[{\"bytes\":3145728");
    free(json);
    CHECK(cmt_follow_held_json(f, 9, NULL) == NULL);
    cmt_follow_close(f);
    unlink(path);
    rmdir(dir);
    puts("ok follow");
    return 0;
}
