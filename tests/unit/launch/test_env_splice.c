/* SPDX-License-Identifier: MIT */
/* The environment `cumemtrace run` splices (env_splice.h): where the shim
 * goes in LD_PRELOAD among other preloads and sanitizer runtimes, a nested
 * run, the output template made absolute, NVTX's injection path. */
#include <stdlib.h>

#include "env_splice.h"
#include "test_util.h"

#define SHIM "/opt/cmt/libcumemtrace.so"

static void splice(const char *old, const char *runtime, const char *want)
{
    char *v = (char *)"unset";
    CHECK(cmt_preload_splice(old, SHIM, runtime, &v) == 0);
    if (!want) {
        CHECK(v == NULL);
        return;
    }
    CHECK_STR(v, want);
    free(v);
}

int main(void)
{
    splice(NULL, NULL, SHIM);
    splice("", NULL, SHIM);
    splice("libfoo.so", NULL, SHIM ":libfoo.so");
    /* spaces separate entries too; empty entries are dropped */
    splice("libfoo.so libbar.so", NULL, SHIM ":libfoo.so:libbar.so");
    splice("::libfoo.so:", NULL, SHIM ":libfoo.so");
    /* sanitizer runtimes stay ahead of the shim, others after it */
    splice("/usr/lib/libasan.so.8:libfoo.so", NULL, "/usr/lib/libasan.so.8:" SHIM ":libfoo.so");
    splice("libclang_rt.asan-x86_64.so libtsan.so.2", NULL, "libclang_rt.asan-x86_64.so:libtsan.so.2:" SHIM);
    /* the program's own runtime first, unless LD_PRELOAD starts with one */
    splice(NULL, "libasan.so.8", "libasan.so.8:" SHIM);
    splice("libfoo.so", "libasan.so.8", "libasan.so.8:" SHIM ":libfoo.so");
    splice("libasan.so.8", "libasan.so.8", "libasan.so.8:" SHIM);
    /* a nested run leaves it alone */
    splice("libfoo.so:" SHIM, NULL, NULL);

    char *a = cmt_output_absolute("traces/t.%p.bin", "/home/u");
    CHECK_STR(a, "/home/u/traces/t.%p.bin");
    free(a);
    a = cmt_output_absolute("/tmp/t.bin", "/home/u");
    CHECK_STR(a, "/tmp/t.bin");
    free(a);
    a = cmt_output_absolute(NULL, "/w");
    CHECK_STR(a, "/w/cumemtrace.%p.bin");
    free(a);
    a = cmt_output_absolute("", "/w");
    CHECK_STR(a, "/w/cumemtrace.%p.bin");
    free(a);

    CHECK_STR(cmt_nvtx_injection(NULL, SHIM), SHIM);
    CHECK_STR(cmt_nvtx_injection("", SHIM), SHIM);
    CHECK(cmt_nvtx_injection("/opt/nsys/libToolsInjection64.so", SHIM) == NULL);
    printf("env_splice: ok\n");
    return 0;
}
