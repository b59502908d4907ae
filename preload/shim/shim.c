/* SPDX-License-Identifier: MIT */
/* Load-time set-up of libcumemtrace.so. Kept minimal: the constructor runs in
 * every process the shim is preloaded into, CUDA or not, possibly before the
 * program's own initialisation. Nothing heavy happens until a hooked call.
 * What runs at each moment, and in which order, is stages.c's table. */
#include <pthread.h>

#include "recorder.h"
#include "shim.h"
#include "stages.h"

static void fork_prepare(void)
{
    cmt_internal_enter();
    cmt_stages_run(CMT_AT_FORK_PREPARE);
}

static void fork_parent(void)
{
    cmt_stages_run(CMT_AT_FORK_PARENT);
    cmt_internal_leave();
}

static void fork_child(void)
{
    cmt_stages_run(CMT_AT_FORK_CHILD);
    cmt_internal_leave();
}

static pthread_once_t load_once = PTHREAD_ONCE_INIT;

static void load(void)
{
    cmt_stages_run(CMT_AT_LOAD);
    /* Last: the fork handlers read what loading set. */
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}

void cmt_shim_ensure_loaded(void)
{
    pthread_once(&load_once, load);
}

__attribute__((constructor)) static void cmt_shim_load(void)
{
    cmt_shim_ensure_loaded();
}

/* Runs after the program's own exit handlers and destructors registered
 * later than ours (the shim is initialised first), so frees made during the
 * program's teardown are still recorded. */
__attribute__((destructor)) static void cmt_shim_unload(void)
{
    cmt_stages_run(CMT_AT_UNLOAD);
}
