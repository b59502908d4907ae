/* SPDX-License-Identifier: MIT */
/* The implementation behind include/cumemtrace/cumemtrace.h. The header's
 * inline wrappers find these through dlsym(RTLD_DEFAULT) when the shim is
 * loaded and do nothing otherwise; Python reaches them through
 * ctypes.CDLL(None). The header is not included: its wrappers have these
 * very names, with internal linkage, in every program that includes it. */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cumemtrace/format.h"
#include "phase_record.h"
#include "real_symbols.h"
#include "recorder.h"

CMT_EXPORT void cumemtrace_phase_push(const char *name);
CMT_EXPORT void cumemtrace_phase_pop(void);
CMT_EXPORT void cumemtrace_mark(const char *name);
CMT_EXPORT void cumemtrace_step(uint64_t n);
CMT_EXPORT size_t cumemtrace_trace_path(char *buf, size_t len);

CMT_EXPORT void cumemtrace_phase_push(const char *name)
{
    cmt_phase_record(CMT_API_MARK_PUSH, name, name ? strlen(name) : 0, NULL, NULL, 0);
}

CMT_EXPORT void cumemtrace_phase_pop(void)
{
    cmt_phase_record(CMT_API_MARK_POP, NULL, 0, NULL, NULL, 0);
}

CMT_EXPORT void cumemtrace_mark(const char *name)
{
    cmt_phase_record(CMT_API_MARK_INSTANT, name, name ? strlen(name) : 0, NULL, NULL, 0);
}

CMT_EXPORT void cumemtrace_step(uint64_t n)
{
    cmt_phase_record(CMT_API_MARK_STEP, NULL, 0, NULL, NULL, n);
}

/* The path of the trace this process writes (NUL-terminated in buf when it
 * fits), its length; 0 before the first CUDA call or mark created it, or
 * when recording is off. Not a hook: nothing is recorded. The start lock
 * orders it after the creation (a forked child's new trace included). */
CMT_EXPORT size_t cumemtrace_trace_path(char *buf, size_t len)
{
    if (__atomic_load_n(&cmt_recorder.state, __ATOMIC_ACQUIRE) != CMT_RECORDER_ACTIVE)
        return 0;
    pthread_mutex_lock(&cmt_recorder.start_lock);
    size_t n = cmt_trace_is_active(&cmt_recorder.tf) ? strlen(cmt_recorder.tf.path) : 0;
    if (n && buf && len > n)
        memcpy(buf, cmt_recorder.tf.path, n + 1);
    pthread_mutex_unlock(&cmt_recorder.start_lock);
    return n;
}
