/* SPDX-License-Identifier: MIT */
/* The pieces of `cumemtrace check` as a library: LeakSanitizer's pattern
 * semantics, the suppressions file syntax, path display, site keys, and the
 * engine's verdicts on traces written here with the recorder's own writer
 * (an empty trace, a leak, an unfinished trace). */
#include <unistd.h>

#include "check.h"
#include "clock.h"
#include "event_stream.h"
#include "meta_stream.h"
#include "suppressions.h"
#include "test_util.h"
#include "trace_file.h"

static char dir[64];

static void test_patterns(void)
{
    static const struct {
        const char *pattern, *text;
        bool match;
    } cases[] = {
        {"alloc", "vendor_alloc", true},     {"alloc", "allocator", true},      {"alloc", "", false},
        {"^vendor", "vendor_alloc", true},   {"^alloc", "vendor_alloc", false}, {"alloc$", "vendor_alloc", true},
        {"vendor$", "vendor_alloc", false},  {"^vendor_alloc$", "vendor_alloc", true},
        {"^vendor_alloc$", "vendor_alloc2", false}, {"v*c", "vendor_alloc", true}, {"^v*c$", "vendor_alloc", true},
        {"^v*x$", "vendor_alloc", false},    {"*", "x", true},                  {"a*b*c", "xaybzc", true},
        {"a*b*c", "xacb", false},            {"^a*a$", "a", false},             {"^a*a$", "aa", true},
        {"operator[]", "std::vector<int>::operator[](unsigned long)", true},  {"lib.so", "libXso", false},
        {"^/usr/lib/", "/usr/lib/x86_64-linux-gnu/libcublas.so.13", true},   {"$", "abc", true},
        {"^", "abc", true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bool got = cmt_suppression_pattern_match(cases[i].pattern, cases[i].text);
        if (got != cases[i].match) {
            fprintf(stderr, "pattern '%s' on '%s': expected %d\n", cases[i].pattern, cases[i].text, cases[i].match);
            exit(1);
        }
    }
    CHECK(!cmt_suppression_pattern_match("x", NULL));
}

static void test_parse_and_match(void)
{
    struct cmt_suppressions s;
    cmt_suppressions_init(&s);
    char err[256];
    const char *text = "# comment\n\n  leak:first_fn\t\r\nleak: libvendor.so \nleak:^main$";
    CHECK(cmt_suppressions_parse(&s, text, strlen(text), "t.supp", false, err, sizeof err) == 0);
    CHECK_EQ_U64(s.n, 3);
    CHECK_STR(s.items[0].pattern, "first_fn");
    CHECK_EQ_U64(s.items[0].line, 3);
    CHECK_STR(s.items[1].pattern, "libvendor.so");
    CHECK_EQ_U64(s.items[2].line, 5);
    struct cmt_frame frames[3] = {
        {.ip = 1, .function = "inner", .file = "/src/a.c", .line = 3, .module = "/opt/libvendor.so.1"},
        {.ip = 2, .function = "first_fn", .file = "/src/b.c", .line = 9, .module = "/bin/app"},
        {.ip = 3, .function = "main", .file = "/src/main.c", .line = 1, .module = "/bin/app"},
    };
    /* The first suppression in order wins, whichever frame it matches. */
    CHECK_EQ_U64(cmt_suppressions_match(&s, frames, 3), 0);
    CHECK_EQ_U64(cmt_suppressions_match(&s, frames, 1), 1);
    CHECK_EQ_U64(cmt_suppressions_match(&s, frames + 2, 1), 2);
    /* The profiler's own frames never match. */
    struct cmt_frame shim = {.ip = 4, .function = "first_fn", .module = "/lib/libcumemtrace.so"};
    CHECK(cmt_suppressions_match(&s, &shim, 1) == -1);
    cmt_suppressions_free(&s);

    static const struct {
        const char *text, *error;
    } bad[] = {
        {"leak:ok\nfoo\n", "t.supp:2: expected leak:PATTERN, got 'foo'"},
        {"called_from_lib:x\n", "t.supp:1: unknown suppression type 'called_from_lib' (cumemtrace understands "
                                "leak:PATTERN)"},
        {"leak:\n", "t.supp:1: empty pattern after 'leak:'; write leak:PATTERN, such as leak:libfoo.so"},
        {"LEAK:x\n", "t.supp:1: unknown suppression type 'LEAK' (cumemtrace understands leak:PATTERN)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cmt_suppressions_init(&s);
        CHECK(cmt_suppressions_parse(&s, bad[i].text, strlen(bad[i].text), "t.supp", false, err, sizeof err) != 0);
        CHECK_STR(err, bad[i].error);
        cmt_suppressions_free(&s);
    }
    /* The built-in list parses. */
    cmt_suppressions_init(&s);
    CHECK(cmt_suppressions_parse(&s, cmt_default_suppressions, strlen(cmt_default_suppressions), "default", true, err,
                                 sizeof err) == 0);
    CHECK(s.n > 0 && s.items[0].is_default);
    /* What each entry is for: the first clause of the comment above its
     * paragraph (the report prints it). */
    CHECK_STR(s.items[0].pattern, "cublasCreate");
    CHECK_STR(s.items[0].reason, "cuBLAS handle state");
    CHECK_STR(s.items[1].reason, "cuDNN handle state");
    CHECK_STR(s.items[2].pattern, "at::cuda::getCurrentCUDABlasHandle");
    CHECK_STR(s.items[2].reason, "PyTorch's cuBLAS and cuBLASLt workspaces");
    CHECK_STR(s.items[3].reason, "PyTorch's cuBLAS and cuBLASLt workspaces");
    cmt_suppressions_free(&s);
    /* A blank line ends a comment's paragraph; an entry without one has none. */
    cmt_suppressions_init(&s);
    const char *notes = "# Vendor. Kept until exit\n#  more words: ignored\nleak:a\nleak:b\n\nleak:c\n"
                        "## The pool; reused\nleak:d\n";
    CHECK(cmt_suppressions_parse(&s, notes, strlen(notes), "t.supp", false, err, sizeof err) == 0);
    CHECK_EQ_U64(s.n, 4);
    CHECK_STR(s.items[0].reason, "Vendor");
    CHECK_STR(s.items[1].reason, "Vendor");
    CHECK_STR(s.items[2].reason, "");
    CHECK_STR(s.items[3].reason, "The pool");
    cmt_suppressions_free(&s);
}

static void test_paths_and_keys(void)
{
    struct cmt_check c;
    memset(&c, 0, sizeof c);
    snprintf(c.source_root, sizeof c.source_root, "/work/proj");
    char buf[256];
    CHECK(cmt_check_path(&c, "/work/proj/build/../src/./a.c", buf, sizeof buf));
    CHECK_STR(buf, "src/a.c");
    CHECK(!cmt_check_path(&c, "/work/project/a.c", buf, sizeof buf));
    CHECK_STR(buf, "/work/project/a.c");
    CHECK(!cmt_check_path(&c, "/work//other/../../x.c", buf, sizeof buf));
    CHECK_STR(buf, "/x.c");
    CHECK(!cmt_check_path(&c, "/../../a.c", buf, sizeof buf));
    CHECK_STR(buf, "/a.c");
    CHECK(!cmt_check_path(&c, "../up/./b.c", buf, sizeof buf));
    CHECK_STR(buf, "../up/b.c");
    CHECK(!cmt_check_path(&c, "a/../../b.c", buf, sizeof buf));
    CHECK_STR(buf, "../b.c");
    CHECK(!cmt_check_path(&c, "/work/proj", buf, sizeof buf));
    snprintf(c.source_root, sizeof c.source_root, "/");
    CHECK(cmt_check_path(&c, "/src/a.c", buf, sizeof buf));
    CHECK_STR(buf, "src/a.c");

    /* Keys: symbols, base names and lines; never addresses. */
    struct cmt_frame a[2] = {
        {.ip = 0x1000, .function = "leak", .file = "/x/src/a.c", .line = 7, .module = "/x/bin/app"},
        {.ip = 0x2000, .module = "/usr/lib/libfoo.so", .module_offset = 0x40},
    };
    struct cmt_frame b[2] = {
        {.ip = 0x9000, .function = "leak", .file = "/y/src/a.c", .line = 7, .module = "/y/app"},
        {.ip = 0xa000, .module = "/lib/libfoo.so", .module_offset = 0x40},
    };
    struct cmt_stack_frames sa = {2, a}, sb = {2, b};
    char *ka = cmt_check_site_key(&sa, CMT_KIND_DEVICE, true), *kb = cmt_check_site_key(&sb, CMT_KIND_DEVICE, true);
    CHECK_STR(ka, "device\nleak|a.c|7|app\n?|libfoo.so+0x40");
    CHECK_STR(ka, kb);
    free(kb);
    b[0].line = 9;
    kb = cmt_check_site_key(&sb, CMT_KIND_DEVICE, true);
    CHECK(strcmp(ka, kb) != 0);
    free(ka);
    free(kb);
    ka = cmt_check_site_key(&sa, CMT_KIND_DEVICE, false);
    kb = cmt_check_site_key(&sb, CMT_KIND_DEVICE, false);
    CHECK_STR(ka, kb);
    free(kb);
    kb = cmt_check_site_key(&sb, CMT_KIND_HOST_PINNED, false);
    CHECK(strcmp(ka, kb) != 0);
    free(ka);
    free(kb);
}

/* ---- the engine on traces written here ---------------------------------- */

static void write_trace(const char *name, const struct cmt_event *events, size_t n, bool close, char path[PATH_MAX])
{
    struct cmt_trace_file tf;
    char p[128];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    struct cmt_trace_create_options opt = {.pid = 4242};
    CHECK(cmt_trace_create(&tf, p, &opt) == 0);
    struct cmt_event_stream s = {.tid = 1};
    for (size_t i = 0; i < n; i++) {
        CHECK(cmt_event_stream_reserve(&tf, &s));
        struct cmt_event e = events[i];
        e.ts = cmt_now_ns();
        cmt_event_stream_append(&s, &e);
    }
    if (close)
        cmt_trace_finish(&tf, cmt_now_ns());
    snprintf(path, PATH_MAX, "%s", tf.path);
}

static struct cmt_check *checked(const struct cmt_check_options *o, const char *path)
{
    static struct cmt_check c;
    char err[512];
    CHECK(cmt_check_init(&c, o, err, sizeof err) == 0);
    CHECK(cmt_check_add_trace(&c, path) == 0);
    CHECK_EQ_U64(c.n_traces, 1);
    return &c;
}

static void test_engine(void)
{
    struct cmt_check_options o;
    cmt_check_options_init(&o);
    o.no_default_suppressions = true;
    char empty[PATH_MAX], leak[PATH_MAX], unfinished[PATH_MAX];

    /* No events at all: nothing leaked, nothing peaked: it passes. */
    write_trace("empty.bin", NULL, 0, true, empty);
    struct cmt_check *c = checked(&o, empty);
    CHECK(c->traces[0]->status == CMT_TRACE_PASS);
    CHECK(c->traces[0]->complete && c->traces[0]->leaks_checked);
    CHECK_EQ_U64(c->traces[0]->n_findings, 0);
    CHECK_EQ_U64(cmt_check_status(c), 0);
    cmt_check_free(c);

    /* 1 MiB allocated, never freed (no stack recorded). */
    struct cmt_event ev[2] = {
        {.type = CMT_REC_ALLOC, .api = CMT_API_CUDA_MALLOC, .kind = CMT_KIND_DEVICE, .has_device = true,
         .addr = 0x7f0000000000ull, .size = 1u << 20},
        {.type = CMT_REC_ALLOC, .api = CMT_API_CUDA_MALLOC, .kind = CMT_KIND_DEVICE, .has_device = true,
         .addr = 0x7f0000100000ull, .size = 1u << 20},
    };
    write_trace("leak.bin", ev, 1, true, leak);
    c = checked(&o, leak);
    const struct cmt_check_trace *t = c->traces[0];
    CHECK(t->status == CMT_TRACE_FAIL);
    CHECK_EQ_U64(t->n_findings, 1);
    CHECK_EQ_U64(t->n_errors, 1);
    CHECK(t->findings[0].rule == CMT_RULE_LEAK && t->findings[0].level == CMT_LEVEL_ERROR);
    CHECK_STR(t->findings[0].message, "leaked 1.0 MiB in 1 allocation (cudaMalloc)");
    CHECK_EQ_U64(cmt_check_status(c), 1);
    cmt_check_free(c);
    o.violation_status = 42;
    o.has_max_leak_bytes = true;
    o.max_leak_bytes = 1u << 20;
    c = checked(&o, leak);
    CHECK(c->traces[0]->status == CMT_TRACE_PASS);
    CHECK(c->traces[0]->findings[0].level == CMT_LEVEL_WARNING);
    CHECK_EQ_U64(cmt_check_status(c), 0);
    cmt_check_free(c);
    o.max_leak_bytes = (1u << 20) - 1;
    c = checked(&o, leak);
    CHECK_EQ_U64(cmt_check_status(c), 42);
    cmt_check_free(c);
    /* The count alone: the byte limit is lifted. */
    o.has_max_leak_bytes = false;
    o.has_max_leak_count = true;
    o.max_leak_count = 1;
    c = checked(&o, leak);
    CHECK_EQ_U64(cmt_check_status(c), 0);
    cmt_check_free(c);
    o.has_max_leak_count = false;

    /* Never closed (the process died): leaks cannot be judged. */
    write_trace("unfinished.bin", ev, 2, false, unfinished);
    c = checked(&o, unfinished);
    t = c->traces[0];
    CHECK(t->status == CMT_TRACE_ERROR && !t->complete && !t->leaks_checked);
    CHECK(strstr(t->error, "the process did not exit normally") != NULL);
    CHECK_EQ_U64(cmt_check_status(c), 2);
    cmt_check_free(c);
    o.check_incomplete = true;
    c = checked(&o, unfinished);
    CHECK(c->traces[0]->status == CMT_TRACE_FAIL);
    CHECK_STR(c->traces[0]->findings[0].message, "leaked 2.0 MiB in 2 allocations (cudaMalloc)");
    cmt_check_free(c);
    o.check_incomplete = false;
    /* ...but a peak over budget is a violation even then. */
    o.peak_limits[0] = (struct cmt_peak_limit){-1, (2u << 20) - 1};
    o.n_peak_limits = 1;
    c = checked(&o, unfinished);
    CHECK(c->traces[0]->status == CMT_TRACE_FAIL);
    CHECK(c->traces[0]->findings[0].rule == CMT_RULE_PEAK);
    CHECK_EQ_U64(cmt_check_status(c), 42);
    cmt_check_free(c);
    unlink(empty);
    unlink(leak);
    unlink(unfinished);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/cmt-check-unit-XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
    test_patterns();
    test_parse_and_match();
    test_paths_and_keys();
    test_engine();
    rmdir(dir);
    printf("ok\n");
    return 0;
}
