/* SPDX-License-Identifier: MIT */
/* Load-time set-up of libcumemtrace.so. Kept minimal: the constructor runs in
 * every process the shim is preloaded into, CUDA or not, possibly before the
 * program's own initialisation. Nothing heavy happens until a hooked call. */
#include <pthread.h>

#include "clock.h"
#include "config.h"
#include "device_cache.h"
#include "log.h"
#include "phase_record.h"
#include "python_frames.h"
#include "real_symbols.h"
#include "recorder.h"
#include "shim.h"
#include "stack_cache.h"
#include "stacks.h"

static pthread_once_t load_once = PTHREAD_ONCE_INIT;

static void load(void)
{
    cmt_config_load();
    /* Before any hook can record: the clock is read-only from here on. */
    cmt_clock_init((enum cmt_clock_mode)cmt_config.clock);
    cmt_clock_set_test_skew(cmt_config.clock_test_skew_ns);
    cmt_stacks_init();
    cmt_python_frames_init();
    cmt_phase_record_init();
    /* Found now rather than inside the first dlsym some other library's
     * constructor makes (ours may run after theirs). */
    cmt_glibc_dlsym();
    pthread_atfork(cmt_recorder_fork_prepare, cmt_recorder_fork_parent, cmt_recorder_fork_child);
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
    cmt_recorder_shutdown();
    if (cmt_config.stack_cache == CMT_STACK_CACHE_CHECK) {
        struct cmt_stack_cache_stats s;
        cmt_stack_cache_stats(&s);
        cmt_log_info("stack cache check: %llu hits compared with a full unwind, %llu wrong; %llu stacks cached, "
                     "%llu origins uncacheable (a wrong hit is a bug: report it, and set CUMEMTRACE_STACK_CACHE=0 "
                     "meanwhile)",
                     (unsigned long long)s.checked, (unsigned long long)s.wrong, (unsigned long long)s.fills,
                     (unsigned long long)s.uncacheable);
    }
    if (cmt_config.device_cache == CMT_DEVICE_CACHE_CHECK) {
        struct cmt_device_cache_stats d;
        cmt_device_cache_stats(&d);
        cmt_log_info("device cache check: %llu remembered devices compared, %llu wrong, %llu context switches "
                     "unseen (a wrong one is a bug: report it, and set CUMEMTRACE_DEVICE_CACHE=0 meanwhile)",
                     (unsigned long long)d.checked, (unsigned long long)d.wrong_device,
                     (unsigned long long)d.unseen_switch);
    }
}
