/* SPDX-License-Identifier: MIT
 * Helpers shared by the symbolizer tests: return-address capture, module
 * enumeration with dl_iterate_phdr, assertions, scratch directories. */
#ifndef CMT_SYMTEST_H
#define CMT_SYMTEST_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Returns its own return address: an address inside the caller, right after
 * the call instruction, whose line is the line of the call. */
void *symt_ra(void);
/* Stores its return address in *slot. Called as a statement of its own, the
 * return address is the first instruction of the next line, so only a
 * lookup of return address - 1 finds the line of the call. */
void symt_ra_into(void **slot);

#ifndef __cplusplus
#include "symbolizer.h"

struct symt_module {
    struct cmt_module_info info; /* path/build_id point into this struct */
    char path[PATH_MAX];
    uint8_t build_id[64];
    uint64_t exec_lo, exec_hi;   /* the executable PT_LOAD segment */
};

/* All modules of this process, ids from 1 in dl_iterate_phdr order (the
 * main program first, its path from /proc/self/exe). Returns the count. */
size_t symt_collect_modules(struct symt_module *out, size_t max);
/* Points info.path/info.build_id at the struct's own buffers again (after a
 * copy). */
void symt_fix_pointers(struct symt_module *m);
/* The module containing addr, or NULL. */
struct symt_module *symt_module_of(struct symt_module *v, size_t n, const void *addr);
void symt_add_all(struct cmt_symbolizer *s, struct symt_module *v, size_t n);

const char *symt_basename(const char *path); /* NULL for NULL */
char *symt_hex(const uint8_t *id, size_t len); /* malloc'd */

/* Scratch space, removed by symt_cleanup (registered with atexit). */
const char *symt_tmpdir(void);
char *symt_path(const char *fmt, ...) __attribute__((format(printf, 1, 2))); /* malloc'd */
int symt_mkdirs(const char *dir);              /* mkdir -p */
int symt_copy(const char *src, const char *dst); /* creates dst's directory */
int symt_run(const char *const argv[]);        /* exit status, -1 on spawn failure */

extern int symt_failures;
void symt_fail(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#define CHECK(cond)                                                           \
    do {                                                                      \
        if (!(cond))                                                          \
            symt_fail(__FILE__, __LINE__, "CHECK(%s)", #cond);                \
    } while (0)
#define CHECK_INT(got, want)                                                  \
    do {                                                                      \
        long long g_ = (long long)(got), w_ = (long long)(want);              \
        if (g_ != w_)                                                         \
            symt_fail(__FILE__, __LINE__, "%s == %lld, want %s == %lld",      \
                      #got, g_, #want, w_);                                   \
    } while (0)
#define CHECK_U64(got, want)                                                  \
    do {                                                                      \
        unsigned long long g_ = (got), w_ = (want);                           \
        if (g_ != w_)                                                         \
            symt_fail(__FILE__, __LINE__, "%s == %#llx, want %#llx",          \
                      #got, g_, w_);                                          \
    } while (0)
/* Either may be NULL. */
#define CHECK_STR(got, want)                                                  \
    do {                                                                      \
        const char *g_ = (got), *w_ = (want);                                 \
        if (!((g_ == NULL && w_ == NULL) ||                                   \
              (g_ && w_ && __builtin_strcmp(g_, w_) == 0)))                   \
            symt_fail(__FILE__, __LINE__, "%s == \"%s\", want \"%s\"", #got,  \
                      g_ ? g_ : "(null)", w_ ? w_ : "(null)");                \
    } while (0)

void symt_print_frames(const char *what, const struct cmt_frame *f, size_t n);
#endif /* !__cplusplus */

#ifdef __cplusplus
}
#endif

#endif
