/* SPDX-License-Identifier: MIT */
/* The implementation behind include/cumemtrace/cumemtrace.h. The header's
 * inline wrappers find these through dlsym(RTLD_DEFAULT) when the shim is
 * loaded and do nothing otherwise; Python reaches them through
 * ctypes.CDLL(None). The header is not included: its wrappers have these
 * very names, with internal linkage, in every program that includes it. */
#include <stdint.h>
#include <string.h>

#include "cumemtrace/format.h"
#include "phase_record.h"
#include "real_symbols.h"

CMT_EXPORT void cumemtrace_phase_push(const char *name);
CMT_EXPORT void cumemtrace_phase_pop(void);
CMT_EXPORT void cumemtrace_mark(const char *name);
CMT_EXPORT void cumemtrace_step(uint64_t n);

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
