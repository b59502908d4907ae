/* SPDX-License-Identifier: MIT */
/* The shim's lifecycle (preload/shim/stages.c): at each moment, which parts
 * run and in which order. stages.c is compiled in alone; every function it
 * calls is a stub here that writes its name down, so the test reads the
 * order the table gives, nothing else. */
#include <stdarg.h>

#include "config.h"
#include "clock.h"
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
#include "stages.h"
#include "test_util.h"
#include "torch_blocks.h"
#include "unwind_gate.h"

static char calls[4096];

static void called(const char *name)
{
    if (calls[0])
        strcat(calls, " ");
    strcat(calls, name);
}

#define STUB(fn) \
    void fn(void) { called(#fn); }

struct cmt_config cmt_config;
const struct cmt_module_listener cmt_python_module_listener, cmt_torch_blocks_module_listener;
static const struct cmt_recorder_stages *recorder_stages;

void cmt_recorder_set_stages(const struct cmt_recorder_stages *s)
{
    called("cmt_recorder_set_stages");
    recorder_stages = s;
}
void cmt_modules_listen(const struct cmt_module_listener *l)
{
    called(l == &cmt_python_module_listener ? "listen(python)" : l == &cmt_torch_blocks_module_listener ? "listen(torch)" : "listen(?)");
}
void cmt_clock_init(enum cmt_clock_mode mode)
{
    (void)mode;
    called("cmt_clock_init");
}
void cmt_clock_set_test_skew(uint64_t skew_ns)
{
    (void)skew_ns;
    called("cmt_clock_set_test_skew");
}
CMT_EARLY void *cmt_glibc_dlsym(void)
{
    called("cmt_glibc_dlsym");
    return NULL;
}
void cmt_stack_cache_stats(struct cmt_stack_cache_stats *out)
{
    memset(out, 0, sizeof *out);
    called("cmt_stack_cache_stats");
}
void cmt_device_cache_stats(struct cmt_device_cache_stats *out)
{
    memset(out, 0, sizeof *out);
    called("cmt_device_cache_stats");
}
void cmt_log_info(const char *fmt, ...)
{
    (void)fmt;
    called("cmt_log_info");
}
STUB(cmt_config_load)
STUB(cmt_clock_fork_child)
STUB(cmt_recorder_shutdown)
STUB(cmt_recorder_fork_prepare)
STUB(cmt_recorder_fork_parent)
STUB(cmt_recorder_fork_child)
STUB(cmt_populate_fork_child)
STUB(cmt_sampler_exit)
STUB(cmt_sampler_fork_prepare)
STUB(cmt_sampler_fork_parent)
STUB(cmt_sampler_fork_child)
STUB(cmt_stacks_init)
STUB(cmt_stacks_reset)
STUB(cmt_modules_reset)
STUB(cmt_modules_refresh_locked)
STUB(cmt_python_frames_init)
STUB(cmt_phase_record_init)
STUB(cmt_nvtx_note_environment)
STUB(cmt_driver_hooks_fork_child)
STUB(cmt_unwind_gate_fork_prepare)
STUB(cmt_unwind_gate_fork_parent)
STUB(cmt_unwind_gate_fork_child)

static void expect(enum cmt_moment m, const char *want)
{
    calls[0] = '\0';
    cmt_stages_run(m);
    CHECK_STR(calls, want);
}

int main(void)
{
    /* Load: the recorder learns its stages first; the configuration before
     * the clock and everything that reads it; the stacks before Python and
     * PyTorch, Python's listener before PyTorch's; glibc's dlsym at load. */
    expect(CMT_AT_LOAD, "cmt_recorder_set_stages cmt_config_load cmt_clock_init cmt_clock_set_test_skew "
                        "cmt_stacks_init cmt_python_frames_init listen(python) listen(torch) "
                        "cmt_phase_record_init cmt_glibc_dlsym");
    /* The recorder's own stages run the table's columns. */
    CHECK(recorder_stages && recorder_stages->trace_reset && recorder_stages->trace_head_locked &&
          recorder_stages->trace_started && recorder_stages->at_exit);
    /* A trace's start: the stack ids are forgotten before the module map
     * tells its listeners to forget theirs; the loaded modules are the
     * trace's head, after the recorder's own records. */
    calls[0] = '\0';
    recorder_stages->trace_reset();
    CHECK_STR(calls, "cmt_stacks_reset cmt_modules_reset");
    calls[0] = '\0';
    recorder_stages->trace_head_locked();
    CHECK_STR(calls, "cmt_modules_refresh_locked");
    calls[0] = '\0';
    recorder_stages->trace_started();
    CHECK_STR(calls, "cmt_nvtx_note_environment");
    calls[0] = '\0';
    recorder_stages->at_exit();
    CHECK_STR(calls, "cmt_sampler_exit");
    /* Unload: the trace ends before the checks report (neither check on). */
    expect(CMT_AT_UNLOAD, "cmt_recorder_shutdown");
    cmt_config.stack_cache = CMT_STACK_CACHE_CHECK;
    cmt_config.device_cache = CMT_DEVICE_CACHE_CHECK;
    expect(CMT_AT_UNLOAD, "cmt_recorder_shutdown cmt_stack_cache_stats cmt_log_info cmt_device_cache_stats cmt_log_info");
    /* Fork: the recorder's locks first, the unwind gate's last; the parent
     * and the child let go in the reverse order, the recorder's fresh state
     * last of all in the child. */
    expect(CMT_AT_FORK_PREPARE, "cmt_recorder_fork_prepare cmt_sampler_fork_prepare cmt_unwind_gate_fork_prepare");
    expect(CMT_AT_FORK_PARENT, "cmt_unwind_gate_fork_parent cmt_sampler_fork_parent cmt_recorder_fork_parent");
    expect(CMT_AT_FORK_CHILD, "cmt_unwind_gate_fork_child cmt_driver_hooks_fork_child cmt_sampler_fork_child "
                              "cmt_populate_fork_child cmt_clock_fork_child cmt_recorder_fork_child");
    /* Every stage has a name and something to do. */
    for (size_t i = 0; i < cmt_stage_count; i++) {
        CHECK(cmt_stages[i].name && cmt_stages[i].name[0]);
        bool any = false;
        for (int m = 0; m < CMT_MOMENTS; m++)
            any |= cmt_stages[i].at[m] != NULL;
        CHECK(any);
    }
    return 0;
}
