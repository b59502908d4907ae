/* SPDX-License-Identifier: MIT */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

__attribute__((format(printf, 2, 0))) static void log_write(const char *prefix, const char *fmt, va_list ap)
{
    int saved = errno;
    char buf[1024];
    int n = snprintf(buf, sizeof buf, "cumemtrace: %s", prefix);
    if (n < 0)
        n = 0;
    int m = vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
    if (m > 0)
        n += m;
    if ((size_t)n >= sizeof buf - 1)
        n = (int)sizeof buf - 2;
    buf[n++] = '\n';
    ssize_t w = write(STDERR_FILENO, buf, (size_t)n);
    (void)w;
    errno = saved;
}

void cmt_log_warning(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_write("warning: ", fmt, ap);
    va_end(ap);
}

void cmt_log_info(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_write("", fmt, ap);
    va_end(ap);
}
