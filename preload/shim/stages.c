/* SPDX-License-Identifier: MIT */
/* The shim's lifecycle owner: every part of the shim that has something to
 * do at load, when a trace starts, at exit, at unload or across a fork is a
 * row of one table, and each moment runs its column in the table's order.
 * The parts never call each other for it: the recorder only learns, at
 * load, whom to call when a trace starts and at exit (its stages).
 *
 * Why this order (top first):
 *   - recorder first: at unload its shutdown writes the END record before
 *     anything below reports; across a fork it takes its locks first and,
 *     in the child, gives its fresh state last, when every other part is
 *     fresh, so that the child's first hook can start a trace.
 *   - config, then clock: every later part reads the configuration, and the
 *     clock is read-only once set, before any hook can record.
 *   - sampler and page populate below the recorder: their locks are taken
 *     inside the recorder's, in the hooks as across the fork.
 *   - stacks, then the module map, before Python and PyTorch: a trace's
 *     start forgets the stack ids before the module map tells its listeners
 *     (Python, PyTorch) to forget theirs; the module map writes the loaded
 *     modules at the trace's head, after the recorder's own records (the
 *     configuration comes first in every trace); Python before PyTorch is
 *     the order the module map tells them in.
 *   - glibc's dlsym found at load, not inside the first dlsym another
 *     library's constructor makes (ours may run after theirs).
 *   - the unwind gate last: a thread still unwinding needs none of the
 *     locks above to finish, and none can start a new unwind until the fork
 *     is over. */
#include "stages.h"

#include <stdbool.h>

#include "clock.h"
#include "config.h"
#include "device_cache.h"
#include "driver_table.h"
#include "log.h"
#include "modules.h"
#include "nvtx_injection.h"
#include "page_populate.h"
#include "phase_record.h"
#include "python_frames.h"
#include "python_runtime.h"
#include "real_symbols.h"
#include "recorder.h"
#include "sampler.h"
#include "stack_cache.h"
#include "stacks.h"
#include "torch_blocks.h"
#include "unwind_gate.h"

static void trace_reset(void)
{
    cmt_stages_run(CMT_AT_TRACE_START);
}

static void trace_head_locked(void)
{
    cmt_stages_run(CMT_AT_TRACE_HEAD);
}

static void trace_started(void)
{
    cmt_stages_run(CMT_AT_TRACE_STARTED);
}

static void at_exit(void)
{
    cmt_stages_run(CMT_AT_EXIT);
}

static const struct cmt_recorder_stages recorder_stages = {
    .trace_reset = trace_reset,
    .trace_head_locked = trace_head_locked,
    .trace_started = trace_started,
    .at_exit = at_exit,
};

static void recorder_load(void)
{
    cmt_recorder_set_stages(&recorder_stages);
}

static void clock_load(void)
{
    cmt_clock_init((enum cmt_clock_mode)cmt_config.clock);
    cmt_clock_set_test_skew(cmt_config.clock_test_skew_ns);
}

static void stack_cache_report(void)
{
    if (cmt_config.stack_cache != CMT_STACK_CACHE_CHECK)
        return;
    struct cmt_stack_cache_stats s;
    cmt_stack_cache_stats(&s);
    cmt_log_info("stack cache check: %llu hits compared with a full unwind, %llu wrong; %llu stacks cached, "
                 "%llu origins uncacheable (a wrong hit is a bug: report it, and set CUMEMTRACE_STACK_CACHE=0 "
                 "meanwhile)",
                 (unsigned long long)s.checked, (unsigned long long)s.wrong, (unsigned long long)s.fills,
                 (unsigned long long)s.uncacheable);
}

static void python_load(void)
{
    cmt_python_frames_init();
    cmt_modules_listen(&cmt_python_module_listener);
}

static void torch_load(void)
{
    cmt_modules_listen(&cmt_torch_blocks_module_listener);
}

static void device_cache_report(void)
{
    if (cmt_config.device_cache != CMT_DEVICE_CACHE_CHECK)
        return;
    struct cmt_device_cache_stats d;
    cmt_device_cache_stats(&d);
    cmt_log_info("device cache check: %llu remembered devices compared, %llu wrong, %llu context switches "
                 "unseen (a wrong one is a bug: report it, and set CUMEMTRACE_DEVICE_CACHE=0 meanwhile)",
                 (unsigned long long)d.checked, (unsigned long long)d.wrong_device,
                 (unsigned long long)d.unseen_switch);
}

static void find_glibc_dlsym(void)
{
    cmt_glibc_dlsym();
}

#define AT(moment, fn) [CMT_AT_##moment] = fn

const struct cmt_stage cmt_stages[] = {
    {"recorder", {AT(LOAD, recorder_load), AT(UNLOAD, cmt_recorder_shutdown), AT(FORK_PREPARE, cmt_recorder_fork_prepare),
                  AT(FORK_PARENT, cmt_recorder_fork_parent), AT(FORK_CHILD, cmt_recorder_fork_child)}},
    {"config", {AT(LOAD, cmt_config_load)}},
    {"clock", {AT(LOAD, clock_load), AT(FORK_CHILD, cmt_clock_fork_child)}},
    {"page populate", {AT(FORK_CHILD, cmt_populate_fork_child)}},
    {"sampler", {AT(EXIT, cmt_sampler_exit), AT(FORK_PREPARE, cmt_sampler_fork_prepare),
                 AT(FORK_PARENT, cmt_sampler_fork_parent), AT(FORK_CHILD, cmt_sampler_fork_child)}},
    {"stacks", {AT(LOAD, cmt_stacks_init), AT(TRACE_START, cmt_stacks_reset), AT(UNLOAD, stack_cache_report)}},
    {"module map", {AT(TRACE_START, cmt_modules_reset), AT(TRACE_HEAD, cmt_modules_refresh_locked)}},
    {"python", {AT(LOAD, python_load)}},
    {"torch", {AT(LOAD, torch_load)}},
    {"device cache", {AT(UNLOAD, device_cache_report)}},
    {"phases", {AT(LOAD, cmt_phase_record_init), AT(TRACE_STARTED, cmt_nvtx_note_environment)}},
    {"driver hooks", {AT(FORK_CHILD, cmt_driver_hooks_fork_child)}},
    {"dlsym", {AT(LOAD, find_glibc_dlsym)}},
    {"unwind gate", {AT(FORK_PREPARE, cmt_unwind_gate_fork_prepare), AT(FORK_PARENT, cmt_unwind_gate_fork_parent),
                     AT(FORK_CHILD, cmt_unwind_gate_fork_child)}},
};
const size_t cmt_stage_count = sizeof cmt_stages / sizeof cmt_stages[0];

void cmt_stages_run(enum cmt_moment m)
{
    bool backwards = m == CMT_AT_FORK_PARENT || m == CMT_AT_FORK_CHILD;
    for (size_t i = 0; i < cmt_stage_count; i++) {
        const struct cmt_stage *s = &cmt_stages[backwards ? cmt_stage_count - 1 - i : i];
        if (s->at[m])
            s->at[m]();
    }
}
