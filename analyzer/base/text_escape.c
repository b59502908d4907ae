/* SPDX-License-Identifier: MIT */
#include "text_escape.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The length of the valid UTF-8 sequence at p (1 to 4), or 0 when it is not
 * one (overlong forms, surrogates and code points past U+10FFFF are not). */
static size_t utf8_length(const unsigned char *p, uint32_t *cp)
{
    unsigned char c = p[0];
    size_t n;
    uint32_t v, min;
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if ((c & 0xe0) == 0xc0)
        n = 2, v = c & 0x1f, min = 0x80;
    else if ((c & 0xf0) == 0xe0)
        n = 3, v = c & 0x0f, min = 0x800;
    else if ((c & 0xf8) == 0xf0)
        n = 4, v = c & 0x07, min = 0x10000;
    else
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        v = v << 6 | (p[i] & 0x3f);
    }
    if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
        return 0;
    *cp = v;
    return n;
}

/* Bytes at p printed as they are (> 0), or 0 when the byte at p is escaped. */
static size_t plain_length(const unsigned char *p)
{
    uint32_t cp;
    size_t n = utf8_length(p, &cp);
    if (n == 0 || cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f))
        return 0;
    return n;
}

bool cmt_text_needs_escape(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        if (*p >= 0x20 && *p < 0x7f) {
            p++;
            continue;
        }
        size_t n = plain_length(p);
        if (n == 0)
            return true;
        p += n;
    }
    return false;
}

/* The escape of the byte at p: "\n", "\e", "\x1b"... */
static void escape_byte(unsigned char c, char out[5])
{
    switch (c) {
    case '\n':
        memcpy(out, "\\n", 3);
        return;
    case '\r':
        memcpy(out, "\\r", 3);
        return;
    case '\t':
        memcpy(out, "\\t", 3);
        return;
    case 0x1b:
        memcpy(out, "\\e", 3);
        return;
    default:
        snprintf(out, 5, "\\x%02x", c);
    }
}

char *cmt_escape_into(const char *s, char *buf, size_t len)
{
    if (!len)
        return buf;
    size_t used = 0;
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        size_t n = plain_length(p);
        if (n) {
            if (used + n >= len)
                break;
            memcpy(buf + used, p, n);
            used += n;
            p += n;
            continue;
        }
        /* An escaped character: each of its bytes (a C1 control is two in
         * UTF-8; an invalid byte is one). */
        uint32_t cp;
        size_t k = utf8_length(p, &cp);
        if (k == 0)
            k = 1;
        char e[5 * 4];
        size_t el = 0;
        for (size_t i = 0; i < k; i++) {
            escape_byte(p[i], e + el);
            el += strlen(e + el);
        }
        if (used + el >= len)
            break;
        memcpy(buf + used, e, el);
        used += el;
        p += k;
    }
    buf[used] = '\0';
    return buf;
}

const char *cmt_esc(const char *s)
{
    /* Per thread: the library may render on several (a follower's). */
    static __thread char *slots[CMT_ESC_SLOTS];
    static __thread size_t caps[CMT_ESC_SLOTS];
    static __thread unsigned next;
    if (!s)
        return "";
    if (!cmt_text_needs_escape(s))
        return s;
    size_t need = strlen(s) * 4 + 1; /* "\x1b" for every byte at most */
    unsigned i = next++ % CMT_ESC_SLOTS;
    if (caps[i] < need) {
        char *more = realloc(slots[i], need);
        if (!more)
            return "(unprintable: out of memory)";
        slots[i] = more;
        caps[i] = need;
    }
    return cmt_escape_into(s, slots[i], need);
}
