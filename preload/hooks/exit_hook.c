/* SPDX-License-Identifier: MIT */
/* _exit and _Exit: the trace ended like exit's. A process that ends with
 * _exit(0) (a forked worker, Python's os._exit, the usual end of a child)
 * runs no exit handler, so its trace had no END record and read as one that
 * did not exit normally: "killed, crashed or _exit", and an error in check
 * (issue 33). Here the recorder closes the trace with the status first, when
 * that is safe (cmt_recorder_exit_now: this process's own trace, no hook of
 * this thread in progress, as in a signal handler that interrupted one),
 * then the process ends as glibc's _exit ends it (exit_group). glibc's own
 * exit() reaches its _exit internally, never through this symbol. */
#include <sys/syscall.h>
#include <unistd.h>

#include "real_symbols.h"
#include "recorder.h"

static __attribute__((noreturn)) void end_process(int status)
{
    cmt_recorder_exit_now(status);
    for (;;) {
        syscall(SYS_exit_group, status);
        syscall(SYS_exit, status);
    }
}

CMT_EXPORT __attribute__((noreturn)) void _exit(int status)
{
    end_process(status);
}

CMT_EXPORT __attribute__((noreturn)) void _Exit(int status)
{
    end_process(status);
}
