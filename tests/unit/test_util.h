/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_TEST_UTIL_H
#define CUMEMTRACE_TEST_UTIL_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Minimal assertions: print where and what, then fail the test. */
#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

#define CHECK_EQ_U64(a, b)                                                                              \
    do {                                                                                                \
        uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);                                                \
        if (a_ != b_) {                                                                                 \
            fprintf(stderr, "%s:%d: %s == %s failed: %" PRIu64 " != %" PRIu64 "\n", __FILE__, __LINE__, \
                    #a, #b, a_, b_);                                                                    \
            exit(1);                                                                                    \
        }                                                                                               \
    } while (0)

#define CHECK_STR(a, b)                                                                              \
    do {                                                                                             \
        const char *a_ = (a), *b_ = (b);                                                             \
        if (!a_ || !b_ || strcmp(a_, b_) != 0) {                                                     \
            fprintf(stderr, "%s:%d: %s == %s failed: \"%s\" != \"%s\"\n", __FILE__, __LINE__, #a, #b, \
                    a_ ? a_ : "(null)", b_ ? b_ : "(null)");                                         \
            exit(1);                                                                                 \
        }                                                                                            \
    } while (0)

#endif
