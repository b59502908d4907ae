/* SPDX-License-Identifier: MIT */
/* The JSON writer's strings: escapes, and UTF-8 that strict parsers accept
 * whatever bytes a trace's strings hold. */
#include <stdio.h>

#include "json_writer.h"
#include "test_util.h"

static void expect(const char *in, const char *want)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK(f != NULL);
    struct cmt_json j;
    cmt_json_init(&j, f, false);
    cmt_json_string(&j, in);
    fclose(f);
    if (strcmp(buf, want) != 0) {
        fprintf(stderr, "json string: got %s, want %s\n", buf, want);
        exit(1);
    }
    free(buf);
}

/* cmt_json_decimal: exact, whatever the magnitude (nanoseconds of a run of
 * hours as microseconds; a double's 6 digits made them whole). */
static void expect_decimal(uint64_t v, unsigned decimals, const char *want)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK(f != NULL);
    struct cmt_json j;
    cmt_json_init(&j, f, false);
    cmt_json_begin_array(&j);
    cmt_json_decimal(&j, v, decimals);
    cmt_json_uint(&j, 7);
    cmt_json_end_array(&j);
    fclose(f);
    if (strcmp(buf, want) != 0) {
        fprintf(stderr, "json decimal %llu/10^%u: got %s, want %s\n", (unsigned long long)v, decimals, buf, want);
        exit(1);
    }
    free(buf);
}

int main(void)
{
    expect_decimal(0, 3, "[0.000,7]");
    expect_decimal(300, 3, "[0.300,7]");
    expect_decimal(1000, 3, "[1.000,7]");
    expect_decimal(1234567, 3, "[1234.567,7]");
    /* 5 h 0 min 0.000000007 s in ns: 18,000,000,000,007 ns */
    expect_decimal(18000000000007ull, 3, "[18000000000.007,7]");
    expect_decimal(UINT64_MAX, 3, "[18446744073709551.615,7]");
    expect_decimal(UINT64_MAX, 19, "[1.8446744073709551615,7]");
    expect_decimal(UINT64_MAX, 25, "[1.8446744073709551615,7]"); /* at most 19 decimals */
    expect_decimal(42, 0, "[42,7]");
    /* Escapes and control characters. */
    expect("a\"b\\c\nd\re\tf", "\"a\\\"b\\\\c\\nd\\re\\tf\"");
    expect("\x01\x1f\x7f", "\"\\u0001\\u001f\x7f\"");
    /* Well-formed UTF-8 of each length, as it is. */
    expect("caf\xc3\xa9 \xe4\xb8\xad \xf0\x9f\x98\x80", "\"caf\xc3\xa9 \xe4\xb8\xad \xf0\x9f\x98\x80\"");
    expect("\xef\xbf\xbf\xf4\x8f\xbf\xbf", "\"\xef\xbf\xbf\xf4\x8f\xbf\xbf\""); /* U+FFFF, U+10FFFF */
    expect("\xe0\xa0\x80\xf0\x90\x80\x80", "\"\xe0\xa0\x80\xf0\x90\x80\x80\""); /* U+0800, U+10000 */
    expect("\xed\x9f\xbf\xee\x80\x80", "\"\xed\x9f\xbf\xee\x80\x80\"");         /* U+D7FF, U+E000 */
    /* Each byte that starts no well-formed sequence becomes U+FFFD. */
    expect("a\x80z", "\"a\\ufffdz\"");                         /* lone continuation */
    expect("\xff\xfe", "\"\\ufffd\\ufffd\"");                  /* never in UTF-8 */
    expect("\xc0\xaf", "\"\\ufffd\\ufffd\"");                  /* overlong '/' */
    expect("\xe0\x80\xaf", "\"\\ufffd\\ufffd\\ufffd\"");       /* overlong, 3 bytes */
    expect("\xf0\x80\x80\xaf", "\"\\ufffd\\ufffd\\ufffd\\ufffd\""); /* overlong, 4 bytes */
    expect("\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"");       /* surrogate U+D800 */
    expect("\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\""); /* above U+10FFFF */
    expect("\xf5\x80\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
    /* Cut short, at the end and before other text: the lead byte only. */
    expect("x\xe4\xb8", "\"x\\ufffd\\ufffd\"");
    expect("\xe4\xb8y", "\"\\ufffd\\ufffdy\"");
    expect("\xf0\x9f\x98", "\"\\ufffd\\ufffd\\ufffd\"");
    expect("\xc3", "\"\\ufffd\"");
    expect("", "\"\"");
    return 0;
}
