/* SPDX-License-Identifier: MIT */
/* The public headers compile on their own as strict C (and, renamed .cpp,
 * as C++): tests/headers/meson.build builds this with -std=c99 -pedantic
 * and -std=c11 -pedantic. Running it without the shim checks that the API
 * does nothing and returns. */
#include <cumemtrace/cumemtrace.h>
#include <cumemtrace/format.h>

int main(void)
{
    cumemtrace_step(1);
    cumemtrace_phase_push("phase");
    cumemtrace_mark("mark");
    cumemtrace_phase_pop();
    char path[64];
    if (cumemtrace_trace_path(path, sizeof path) != 0) /* no shim: no trace */
        return 1;
    return cmt_api_name(CMT_API_MARK_STEP)[0] == 's' ? 0 : 1;
}
