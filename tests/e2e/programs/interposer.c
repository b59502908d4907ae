/* SPDX-License-Identifier: MIT */
/* A second LD_PRELOAD interposer, as another tool would be: it wraps
 * cudaMalloc, cuMemAlloc_v2, puts and malloc, finds each next definition with
 * dlsym(RTLD_NEXT, ...), counts the calls, and at exit reports, for each, the
 * module its next definition lives in. Preloaded before or after
 * libcumemtrace.so, it must find the definition after ITSELF: glibc's
 * answer, as if the shim wrapped no dlsym at all.
 *
 * Under AddressSanitizer malloc is not wrapped: the sanitizer's allocator
 * must serve the process, and its start-up calls malloc before an
 * instrumented wrapper could run. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char *module_of(const void *p)
{
    Dl_info info;
    if (!p || !dladdr(p, &info) || !info.dli_fname)
        return "none";
    const char *slash = strrchr(info.dli_fname, '/');
    return slash ? slash + 1 : info.dli_fname;
}

static cudaError_t (*next_cuda_malloc)(void **, size_t);
static CUresult (*next_cu_mem_alloc)(CUdeviceptr *, size_t);
static void *(*next_malloc)(size_t) __attribute__((unused));
static unsigned long cuda_malloc_calls, cu_mem_alloc_calls, malloc_calls __attribute__((unused));

__attribute__((visibility("default"))) cudaError_t cudaMalloc(void **p, size_t n)
{
    if (!next_cuda_malloc)
        next_cuda_malloc = (cudaError_t(*)(void **, size_t))dlsym(RTLD_NEXT, "cudaMalloc");
    __atomic_add_fetch(&cuda_malloc_calls, 1, __ATOMIC_RELAXED);
    return next_cuda_malloc(p, n);
}

__attribute__((visibility("default"))) CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n)
{
    if (!next_cu_mem_alloc)
        next_cu_mem_alloc = (CUresult(*)(CUdeviceptr *, size_t))dlsym(RTLD_NEXT, "cuMemAlloc_v2");
    __atomic_add_fetch(&cu_mem_alloc_calls, 1, __ATOMIC_RELAXED);
    return next_cu_mem_alloc(p, n);
}

static int (*next_puts)(const char *);
static unsigned long puts_calls;

__attribute__((visibility("default"))) int puts(const char *text)
{
    if (!next_puts)
        next_puts = (int (*)(const char *))dlsym(RTLD_NEXT, "puts");
    __atomic_add_fetch(&puts_calls, 1, __ATOMIC_RELAXED);
    return next_puts(text);
}

#if !defined(__SANITIZE_ADDRESS__)
/* dlsym may itself allocate before malloc is known: a small static pool
 * serves those calls (the usual bootstrap of a malloc interposer). */
static char bootstrap[4096];
static size_t bootstrap_used;
static int finding_malloc;

__attribute__((visibility("default"))) void *malloc(size_t n)
{
    if (!next_malloc) {
        if (finding_malloc) {
            size_t at = (bootstrap_used + 15) & ~(size_t)15;
            if (at + n > sizeof bootstrap)
                return NULL;
            bootstrap_used = at + n;
            return bootstrap + at;
        }
        finding_malloc = 1;
        next_malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
        finding_malloc = 0;
    }
    __atomic_add_fetch(&malloc_calls, 1, __ATOMIC_RELAXED);
    return next_malloc(n);
}

__attribute__((visibility("default"))) void free(void *p)
{
    static void (*next_free)(void *);
    if ((char *)p >= bootstrap && (char *)p < bootstrap + sizeof bootstrap)
        return;
    if (!next_free)
        next_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
    next_free(p);
}
#endif

static void report_one(const char *name, const void *next, unsigned long calls)
{
    char line[256];
    int n = snprintf(line, sizeof line, "interposer: %s next=%s calls=%lu\n", name, next ? module_of(next) : "unused",
                     calls);
    if (n > 0)
        (void)!write(2, line, (size_t)n);
}

/* Reports with write(2): stdio may already be torn down. */
__attribute__((destructor)) static void report(void)
{
    report_one("cudaMalloc", (const void *)next_cuda_malloc, cuda_malloc_calls);
    report_one("cuMemAlloc_v2", (const void *)next_cu_mem_alloc, cu_mem_alloc_calls);
    report_one("puts", (const void *)next_puts, puts_calls);
#if !defined(__SANITIZE_ADDRESS__)
    report_one("malloc", (const void *)next_malloc, malloc_calls ? 1 : 0);
#endif
}
