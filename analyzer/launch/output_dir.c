/* SPDX-License-Identifier: MIT */
#include "output_dir.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "size_parse.h"

int cmt_output_dir_check(const char *tmpl, char *dir, size_t dirlen, char *why, size_t whylen)
{
    if (!tmpl || !*tmpl)
        tmpl = "cumemtrace.%p.bin";
    const char *slash = strrchr(tmpl, '/');
    size_t len = slash ? (size_t)(slash - tmpl) : 0;
    if (!slash)
        snprintf(dir, dirlen, ".");
    else if (len == 0)
        snprintf(dir, dirlen, "/");
    else
        snprintf(dir, dirlen, "%.*s", (int)len, tmpl);
    /* "%%" is a literal percent sign (made one here, as the shim does); any
     * other conversion is the shim's to expand. */
    for (char *p = dir; (p = strchr(p, '%'));) {
        if (p[1] != '%')
            return 0;
        memmove(p + 1, p + 2, strlen(p + 2) + 1);
        p++;
    }
    struct stat st;
    if (stat(dir, &st) != 0) {
        snprintf(why, whylen, "%s", errno == ENOENT    ? "it does not exist"
                                    : errno == ENOTDIR ? "a part of it is not a directory"
                                                       : strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(why, whylen, "it is not a directory");
        return -1;
    }
    if (access(dir, W_OK | X_OK) != 0) {
        snprintf(why, whylen, "%s", errno == EROFS    ? "it is on a read-only file system"
                                    : errno == EACCES ? "it is not writable by this user"
                                                      : strerror(errno));
        return -1;
    }
    struct statvfs fs;
    if (statvfs(dir, &fs) == 0) {
        /* root may use the blocks reserved for it, as the shim would */
        unsigned long long blocks = geteuid() == 0 ? fs.f_bfree : fs.f_bavail;
        unsigned long long free_bytes = blocks * (unsigned long long)fs.f_frsize;
        if (fs.f_flag & ST_RDONLY) {
            snprintf(why, whylen, "it is on a read-only file system");
            return -1;
        }
        if (free_bytes < CMT_OUTPUT_MIN_FREE) {
            char b[32];
            cmt_format_size(free_bytes, b, sizeof b);
            snprintf(why, whylen, "its file system is full (%s free)", b);
            return -1;
        }
    }
    return 0;
}
