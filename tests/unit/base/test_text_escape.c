/* SPDX-License-Identifier: MIT */
/* Strings of a trace printed in text output (base/text_escape.h): control
 * characters, C1 controls and bytes that are not UTF-8 escaped, everything
 * else (UTF-8 text included) as it is. */
#include "test_util.h"
#include "text_escape.h"

int main(void)
{
    /* Nothing to escape: the very same pointer. */
    const char *plain = "train.py --lr 0.1 été 日本 \xf0\x9f\x98\x80";
    CHECK(!cmt_text_needs_escape(plain));
    CHECK(cmt_esc(plain) == plain);
    CHECK_STR(cmt_esc(NULL), "");
    /* Terminal escapes, BEL, CR, newline, tab, DEL. */
    CHECK_STR(cmt_esc("a\x1b[2J\x1b]0;owned\x07z"), "a\\e[2J\\e]0;owned\\x07z");
    CHECK_STR(cmt_esc("line\nPASS\rx\ty\x7f"), "line\\nPASS\\rx\\ty\\x7f");
    /* C1 controls: U+009B (CSI) in UTF-8, and a raw 0x9b byte (not UTF-8). */
    CHECK_STR(cmt_esc("x\xc2\x9b" "31m"), "x\\xc2\\x9b31m");
    CHECK_STR(cmt_esc("x\x9b" "31m"), "x\\x9b31m");
    /* Invalid UTF-8: overlong, surrogate, cut sequence, stray continuation. */
    CHECK_STR(cmt_esc("\xc0\xaf"), "\\xc0\\xaf");
    CHECK_STR(cmt_esc("\xed\xa0\x80"), "\\xed\\xa0\\x80");
    CHECK_STR(cmt_esc("ab\xe6\x97"), "ab\\xe6\\x97");
    CHECK_STR(cmt_esc("\x80 ok"), "\\x80 ok");
    /* Valid UTF-8 beside escapes is kept. */
    CHECK_STR(cmt_esc("été\x1b"), "été\\e");
    /* Several results alive at once (one printf takes several). */
    const char *a = cmt_esc("1\n"), *b = cmt_esc("2\n"), *c = cmt_esc("3\n");
    CHECK_STR(a, "1\\n");
    CHECK_STR(b, "2\\n");
    CHECK_STR(c, "3\\n");
    /* Into a buffer: cut at a character boundary, always terminated. */
    char buf[8];
    CHECK_STR(cmt_escape_into("ab\x1b" "cdef", buf, sizeof buf), "ab\\ecde");
    CHECK_STR(cmt_escape_into("abcdef\x1b", buf, sizeof buf), "abcdef");
    CHECK_STR(cmt_escape_into("abc日本", buf, sizeof buf), "abc日");
    printf("ok\n");
    return 0;
}
