/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_PAGE_POPULATE_H
#define CUMEMTRACE_PRELOAD_PAGE_POPULATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Making the trace file's pages writable before the recording threads write
 * them (MADV_POPULATE_WRITE, Linux 5.14). Writing a page of a shared file
 * mapping for the first time faults: the kernel allocates a page-cache page,
 * zeroes it, asks the file system for leave to write it and maps it, about
 * 3 us per 4 KiB on the H200 machine, 15 ns per event at 19 bytes per event
 * (docs/performance.md, "Profiles"). The trace file (trace_file.c) asks for
 * the pages ahead of its claims; this module does the work:
 *
 *   thread  (default) a helper thread of the shim's own populates them, off
 *           the program's threads. It is started at the first request, has
 *           every signal blocked (a signal sent to the process is never
 *           delivered to it) and does nothing but wait and populate. Never
 *           in a fork child nor under a sanitizer runtime: there the work
 *           is done inline (fork safety, page_populate.c);
 *   inline  the claiming thread populates them itself: one call per 256 KiB
 *           or so instead of one fault per page, still on the program's
 *           thread;
 *   off     nothing is populated: pages fault in one by one.
 *
 * CUMEMTRACE_POPULATE chooses (docs/environment.md). A kernel that refuses
 * the call turns it off for the rest of the process; a helper that cannot be
 * started leaves the work inline. Populating only maps pages that the file
 * already has reserved (posix_fallocate): it never changes what is written. */

enum cmt_populate_mode {
    CMT_POPULATE_THREAD = 0,
    CMT_POPULATE_INLINE = 1,
    CMT_POPULATE_OFF = 2
};

/* Asks for [addr, addr + len) to be made writable, by the helper or now,
 * as mode says. Ranges must stay mapped until the process ends or forks
 * (the trace's segments do). A range that follows the one still waiting for
 * the helper joins it; any other replaces it (those pages then fault in as
 * they are written). */
void cmt_populate_request(enum cmt_populate_mode mode, uint8_t *addr, size_t len);

/* Whether the kernel refused MADV_POPULATE_WRITE: no more requests help. */
bool cmt_populate_refused(void);

/* Whether the helper thread is running in this process. */
bool cmt_populate_helper_running(void);

/* In a fork child: the helper did not come along, and none is started
 * there (nor in the child's own children): requests in thread mode are
 * served inline. A child may hold, locked for good, any lock a parent
 * thread held at the fork; a thread started there can wait on one. */
void cmt_populate_fork_child(void);

#endif
