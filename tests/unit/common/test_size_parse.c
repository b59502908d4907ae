/* SPDX-License-Identifier: MIT */
#include "size_parse.h"
#include "test_util.h"

static uint64_t parse(const char *s)
{
    uint64_t v = 0;
    CHECK(cmt_parse_size(s, &v) == 0);
    return v;
}

static void check_bad(const char *s)
{
    uint64_t v;
    if (cmt_parse_size(s, &v) == 0) {
        fprintf(stderr, "accepted bad size '%s'\n", s);
        exit(1);
    }
}

int main(void)
{
    CHECK_EQ_U64(parse("0"), 0);
    CHECK_EQ_U64(parse("4096"), 4096);
    CHECK_EQ_U64(parse("64KiB"), 65536);
    CHECK_EQ_U64(parse("64 kib"), 65536);
    CHECK_EQ_U64(parse("1.5GiB"), 1610612736);
    CHECK_EQ_U64(parse("2G"), 2147483648u);
    CHECK_EQ_U64(parse("10MB"), 10000000);
    CHECK_EQ_U64(parse("3kB"), 3000);
    CHECK_EQ_U64(parse("1TiB"), 1099511627776ull);
    CHECK_EQ_U64(parse(" 7 B "), 7);
    check_bad("");
    check_bad("-1");
    check_bad("12 parsecs");
    check_bad("1.GiB");
    check_bad("99999999999999999999");
    check_bad("20000000TiB");
    check_bad("5 mb"); /* decimal units keep their case */

    char buf[32];
    cmt_format_size(0, buf, sizeof buf);
    CHECK_STR(buf, "0 B");
    cmt_format_size(1023, buf, sizeof buf);
    CHECK_STR(buf, "1023 B");
    cmt_format_size(1536, buf, sizeof buf);
    CHECK_STR(buf, "1.5 KiB");
    cmt_format_size(64ull << 20, buf, sizeof buf);
    CHECK_STR(buf, "64.0 MiB");
    return 0;
}
