/* SPDX-License-Identifier: MIT
 *
 * cumemtrace's public API: name the phases and steps of a program so that
 * `cumemtrace report` can say in which one the peak, each failed allocation
 * and each leak happened (docs/report.md, "Phases and steps").
 *
 *   cumemtrace_phase_push("forward");  ...  cumemtrace_phase_pop();
 *   cumemtrace_step(41);      step 41 starts here (the previous one ends)
 *   cumemtrace_mark("checkpoint saved");
 *   cumemtrace_trace_path(buf, sizeof buf);   where the trace is written
 *
 * No link dependency: each function is a static inline wrapper that looks
 * the shim's implementation up once, with dlsym(RTLD_DEFAULT), and calls it
 * when the program runs under the shim (LD_PRELOAD, `cumemtrace run`). Without
 * the shim a call costs a load and a branch and does nothing. Link with -ldl
 * on a glibc older than 2.34. Phases are per thread, like NVTX push/pop
 * ranges, and mix with them (the shim records NVTX ranges too). Safe from any
 * thread; names are copied.
 *
 * Python (ctypes.CDLL(None) sees the preloaded shim's exports):
 *   lib = ctypes.CDLL(None)
 *   if hasattr(lib, "cumemtrace_phase_push"): lib.cumemtrace_phase_push(b"forward")
 *
 * Compiles as strict C99, C11 and C++ (tests/headers builds it each way).
 */
#ifndef CUMEMTRACE_CUMEMTRACE_H
#define CUMEMTRACE_CUMEMTRACE_H

#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* glibc defines RTLD_DEFAULT only with _GNU_SOURCE; it is the null handle. */
#ifdef RTLD_DEFAULT
#define CUMEMTRACE_RTLD_DEFAULT_ RTLD_DEFAULT
#else
#define CUMEMTRACE_RTLD_DEFAULT_ ((void *)0)
#endif

/* The shim's function named name, or NULL; *cache holds the answer after the
 * first call ((void *)1: looked up, absent). Races between threads are
 * benign: every thread finds the same answer. */
static inline void *cumemtrace_resolve_(void **cache, const char *name)
{
#if defined(__GNUC__)
    void *f = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
#else
    void *f = *cache;
#endif
    if (f == (void *)1)
        return (void *)0;
    if (f)
        return f;
    f = dlsym(CUMEMTRACE_RTLD_DEFAULT_, name);
#if defined(__GNUC__)
    __atomic_store_n(cache, f ? f : (void *)1, __ATOMIC_RELEASE);
#else
    *cache = f ? f : (void *)1;
#endif
    return f;
}

/* Opens a phase on the calling thread: the allocations it makes until the
 * matching pop count in it (and in the phases around it). */
static inline void cumemtrace_phase_push(const char *name)
{
    static void *cache;
    void *p = cumemtrace_resolve_(&cache, "cumemtrace_phase_push");
    void (*fn)(const char *);
    if (!p)
        return;
    memcpy(&fn, &p, sizeof fn); /* object to function pointer, the POSIX way */
    fn(name);
}

/* Closes the calling thread's innermost open phase. */
static inline void cumemtrace_phase_pop(void)
{
    static void *cache;
    void *p = cumemtrace_resolve_(&cache, "cumemtrace_phase_pop");
    void (*fn)(void);
    if (!p)
        return;
    memcpy(&fn, &p, sizeof fn);
    fn();
}

/* An instant with a name (shown where it happened). */
static inline void cumemtrace_mark(const char *name)
{
    static void *cache;
    void *p = cumemtrace_resolve_(&cache, "cumemtrace_mark");
    void (*fn)(const char *);
    if (!p)
        return;
    memcpy(&fn, &p, sizeof fn);
    fn(name);
}

/* Step n starts now, for the whole process; the previous step ends here.
 * Call it at the top of each training iteration. */
static inline void cumemtrace_step(uint64_t n)
{
    static void *cache;
    void *p = cumemtrace_resolve_(&cache, "cumemtrace_step");
    void (*fn)(uint64_t);
    if (!p)
        return;
    memcpy(&fn, &p, sizeof fn);
    fn(n);
}

/* The path of the trace this process writes, copied into buf (with its NUL)
 * when it fits; returns its length, 0 without the shim, before the first
 * CUDA call or phase created the trace, or when recording is off. */
static inline size_t cumemtrace_trace_path(char *buf, size_t len)
{
    static void *cache;
    void *p = cumemtrace_resolve_(&cache, "cumemtrace_trace_path");
    size_t (*fn)(char *, size_t);
    if (!p)
        return 0;
    memcpy(&fn, &p, sizeof fn);
    return fn(buf, len);
}

#ifdef __cplusplus
}
#endif

#endif /* CUMEMTRACE_CUMEMTRACE_H */
