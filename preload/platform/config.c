/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "size_parse.h"

struct cmt_config cmt_config;

static bool env_flag(const char *name, bool dflt)
{
    const char *v = secure_getenv(name);
    if (!v || !*v)
        return dflt;
    if (!strcmp(v, "1") || !strcasecmp(v, "yes") || !strcasecmp(v, "true") || !strcasecmp(v, "on"))
        return true;
    if (!strcmp(v, "0") || !strcasecmp(v, "no") || !strcasecmp(v, "false") || !strcasecmp(v, "off"))
        return false;
    cmt_log_warning("ignoring %s=%s: expected 1 or 0; using the default", name, v);
    return dflt;
}

static unsigned env_uint(const char *name, unsigned dflt, unsigned max)
{
    const char *v = secure_getenv(name);
    if (!v || !*v)
        return dflt;
    char *end;
    unsigned long n = strtoul(v, &end, 10);
    if (*end || v[0] == '-' || n > max) {
        cmt_log_warning("ignoring %s=%s: expected a number from 0 to %u; using the default", name, v, max);
        return dflt;
    }
    return (unsigned)n;
}

/* 1 (on, the default), 0 (off) or "check": the caches' diagnostic mode. */
static unsigned env_cache_mode(const char *name)
{
    const char *v = secure_getenv(name);
    if (v && !strcmp(v, "check"))
        return 2;
    if (v && *v && strcmp(v, "0") && strcmp(v, "1")) {
        cmt_log_warning("ignoring %s=%s: expected 1, 0 or check; using the default", name, v);
        return 1;
    }
    return v && !strcmp(v, "0") ? 0 : 1;
}

/* auto (the default), tsc or monotonic: the event clock (clock.h). */
static unsigned env_clock_mode(const char *name)
{
    const char *v = secure_getenv(name);
    if (!v || !*v || !strcasecmp(v, "auto"))
        return CMT_CLOCK_AUTO;
    if (!strcasecmp(v, "tsc"))
        return CMT_CLOCK_TSC;
    if (!strcasecmp(v, "monotonic"))
        return CMT_CLOCK_MONOTONIC;
    cmt_log_warning("ignoring %s=%s: expected auto, tsc or monotonic; using auto", name, v);
    return CMT_CLOCK_AUTO;
}

/* thread (the default), inline or off: who makes the trace's pages writable
 * ahead of use (page_populate.h). */
static unsigned env_populate_mode(const char *name)
{
    const char *v = secure_getenv(name);
    if (!v || !*v || !strcasecmp(v, "thread"))
        return CMT_POPULATE_THREAD;
    if (!strcasecmp(v, "inline"))
        return CMT_POPULATE_INLINE;
    if (!strcasecmp(v, "off"))
        return CMT_POPULATE_OFF;
    cmt_log_warning("ignoring %s=%s: expected thread, inline or off; using thread", name, v);
    return CMT_POPULATE_THREAD;
}

static uint64_t env_size(const char *name, uint64_t dflt)
{
    const char *v = secure_getenv(name);
    if (!v || !*v)
        return dflt;
    uint64_t n;
    if (cmt_parse_size(v, &n) != 0) {
        cmt_log_warning("ignoring %s=%s: expected a size such as 512MiB or 2GiB; using the default", name, v);
        return dflt;
    }
    return n;
}

static void env_string(const char *name, char *dst, size_t cap, const char *dflt)
{
    const char *v = secure_getenv(name);
    if (!v || !*v)
        v = dflt;
    if (strlen(v) >= cap) {
        cmt_log_warning("ignoring %s: longer than %zu bytes; using %s: give a shorter value", name, cap - 1,
                        *dflt ? dflt : "no value");
        v = dflt;
    }
    strncpy(dst, v, cap - 1);
    dst[cap - 1] = '\0';
}

void cmt_config_load(void)
{
    cmt_config.disabled = env_flag("CUMEMTRACE_DISABLE", false);
    cmt_config.quiet = env_flag("CUMEMTRACE_QUIET", false);
    cmt_config.free_stacks = env_flag("CUMEMTRACE_FREE_STACKS", false);
    cmt_config.follow_fork = env_flag("CUMEMTRACE_FOLLOW_FORK", true);
    cmt_config.python_frames = env_flag("CUMEMTRACE_PYTHON", true);
    cmt_config.blocks = env_flag("CUMEMTRACE_BLOCKS", true);
    env_string("CUMEMTRACE_TORCH_LAYOUT", cmt_config.torch_layout, sizeof cmt_config.torch_layout, "");
    cmt_config.stack_depth = env_uint("CUMEMTRACE_STACK_DEPTH", 64, 256);
    cmt_config.stack_cache = env_cache_mode("CUMEMTRACE_STACK_CACHE");
    cmt_config.device_cache = env_cache_mode("CUMEMTRACE_DEVICE_CACHE");
    cmt_config.max_size = env_size("CUMEMTRACE_MAX_SIZE", 0);
    cmt_config.sample_ms = env_uint("CUMEMTRACE_SAMPLE_MS", 100, 3600u * 1000u);
    cmt_config.clock = env_clock_mode("CUMEMTRACE_CLOCK");
    cmt_config.populate = env_populate_mode("CUMEMTRACE_POPULATE");
    cmt_config.clock_test_skew_ns = env_uint("CUMEMTRACE_CLOCK_TEST_SKEW_NS", 0, 1000000000u);
    env_string("CUMEMTRACE_OUTPUT", cmt_config.output_template, sizeof cmt_config.output_template,
               "cumemtrace.%p.bin");
    env_string("CUMEMTRACE_MANIFEST", cmt_config.manifest_path, sizeof cmt_config.manifest_path, "");
}
