/* SPDX-License-Identifier: MIT */
#include "path_template.h"
#include "test_util.h"

int main(void)
{
    struct cmt_template_vars v = {.pid = 4242, .hostname = "gpu7", .start_time = 1700000000, .rank = "3"};
    char out[64];
    CHECK(cmt_expand_path_template("cumemtrace.%p.bin", &v, out, sizeof out) == 0);
    CHECK_STR(out, "cumemtrace.4242.bin");
    CHECK(cmt_expand_path_template("/t/%h-%r-%t-%%-%x.bin", &v, out, sizeof out) == 0);
    CHECK_STR(out, "/t/gpu7-3-1700000000-%-%x.bin");
    v.rank = NULL;
    CHECK(cmt_expand_path_template("r%r", &v, out, sizeof out) == 0);
    CHECK_STR(out, "r0");
    CHECK(cmt_expand_path_template("trailing%", &v, out, sizeof out) == 0);
    CHECK_STR(out, "trailing%");
    /* Never cut short: a path that does not fit is refused. */
    char tiny[12];
    CHECK(cmt_expand_path_template("cumemtrace.%p.bin", &v, tiny, sizeof tiny) == -1);
    CHECK(cmt_expand_path_template("%h%h%h%h", &v, tiny, sizeof tiny) == -1);

    CHECK(cmt_path_with_suffix("dir/trace.bin", 2, out, sizeof out) == 0);
    CHECK_STR(out, "dir/trace.2.bin");
    CHECK(cmt_path_with_suffix("dir.d/trace", 1, out, sizeof out) == 0);
    CHECK_STR(out, "dir.d/trace.1");
    CHECK(cmt_path_with_suffix(".hidden", 1, out, sizeof out) == 0);
    CHECK_STR(out, ".hidden.1");
    return 0;
}
