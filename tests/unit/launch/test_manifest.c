/* SPDX-License-Identifier: MIT */
/* What `run --check` reads and checks before the program runs: the
 * manifest's lines (launch/manifest.h) and the trace directory
 * (launch/output_dir.h). */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "manifest.h"
#include "output_dir.h"
#include "test_util.h"

static void test_lines(void)
{
    struct cmt_manifest_entry e;
    CHECK(cmt_manifest_parse_line("/ci/t.42.bin", &e) == 0);
    CHECK_EQ_U64(e.kind, CMT_MANIFEST_TRACE);
    CHECK_STR(e.path, "/ci/t.42.bin");
    CHECK(e.reason == NULL);
    free(e.path);
    CHECK(cmt_manifest_parse_line("!create 4242 No such file or directory\t/ci/out-4242/t.bin", &e) == 0);
    CHECK_EQ_U64(e.kind, CMT_MANIFEST_CREATE);
    CHECK_EQ_U64(e.pid, 4242);
    CHECK_STR(e.reason, "No such file or directory");
    CHECK_STR(e.path, "/ci/out-4242/t.bin");
    free(e.reason);
    free(e.path);
    /* a path with a tab in it: the path is all after the first tab */
    CHECK(cmt_manifest_parse_line("!stop 7 it reached the file size limit (ulimit -f)\t/ci/a\tb.bin", &e) == 0);
    CHECK_EQ_U64(e.kind, CMT_MANIFEST_STOP);
    CHECK_STR(e.reason, "it reached the file size limit (ulimit -f)");
    CHECK_STR(e.path, "/ci/a\tb.bin");
    free(e.reason);
    free(e.path);
    /* what is not a failure line is a path, as older shims wrote them */
    const char *odd[] = {"!create x y\t/p", "!create 5\t/p", "!other 5 r\t/p", "!create 5 r"};
    for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
        CHECK(cmt_manifest_parse_line(odd[i], &e) == 0);
        CHECK_EQ_U64(e.kind, CMT_MANIFEST_TRACE);
        CHECK_STR(e.path, odd[i]);
        free(e.path);
    }
}

static void test_output_dir(void)
{
    char dir[4096], why[128];
    char tmp[] = "/tmp/cmt-outdir-XXXXXX";
    CHECK(mkdtemp(tmp) != NULL);
    char tmpl[4200];
    snprintf(tmpl, sizeof tmpl, "%s/t.%%p.bin", tmp);
    CHECK(cmt_output_dir_check(tmpl, dir, sizeof dir, why, sizeof why) == 0);
    snprintf(tmpl, sizeof tmpl, "%s/missing/t.bin", tmp);
    CHECK(cmt_output_dir_check(tmpl, dir, sizeof dir, why, sizeof why) == -1);
    snprintf(tmpl, sizeof tmpl, "%s/missing", tmp);
    CHECK_STR(dir, tmpl);
    CHECK_STR(why, "it does not exist");
    /* a directory the shim expands is the shim's to find */
    snprintf(tmpl, sizeof tmpl, "%s/missing-%%p/t.bin", tmp);
    CHECK(cmt_output_dir_check(tmpl, dir, sizeof dir, why, sizeof why) == 0);
    /* "%%" is a percent sign */
    snprintf(tmpl, sizeof tmpl, "%s/a%%b", tmp);
    CHECK(mkdir(tmpl, 0700) == 0);
    snprintf(tmpl, sizeof tmpl, "%s/a%%%%b/t.bin", tmp);
    CHECK(cmt_output_dir_check(tmpl, dir, sizeof dir, why, sizeof why) == 0);
    /* a file where the directory should be */
    snprintf(tmpl, sizeof tmpl, "%s/f", tmp);
    FILE *f = fopen(tmpl, "w");
    CHECK(f != NULL);
    fclose(f);
    snprintf(tmpl, sizeof tmpl, "%s/f/t.bin", tmp);
    CHECK(cmt_output_dir_check(tmpl, dir, sizeof dir, why, sizeof why) == -1);
    CHECK_STR(why, "it is not a directory");
    /* the working directory when the template has no slash; the default */
    CHECK(cmt_output_dir_check("t.bin", dir, sizeof dir, why, sizeof why) == 0);
    CHECK_STR(dir, ".");
    CHECK(cmt_output_dir_check(NULL, dir, sizeof dir, why, sizeof why) == 0);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    CHECK(system(cmd) == 0);
}

int main(void)
{
    test_lines();
    test_output_dir();
    printf("ok\n");
    return 0;
}
