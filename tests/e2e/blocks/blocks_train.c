/* SPDX-License-Identifier: MIT */
/* Drives the allocator double (c10_cuda_allocator_double.cpp) through the
 * blocks test_blocks.py checks, in this order (sizes in bytes):
 *   a = 1000      small pool: a 2 MiB segment, block 1024
 *   b = 3000      same segment, block 3072
 *   c = 5 MiB     a 20 MiB large segment, block 5 MiB (15 MiB left: split)
 *   d = 14.5 MiB  same segment: 0.5 MiB would be left, not split: block 15 MiB
 *   f = 12 MiB    a 12 MiB segment, block 12 MiB
 *   peak: allocated 1024 + 3072 + 5 MiB + 15 MiB + 12 MiB = 33558528,
 *         reserved 2 + 20 + 12 MiB = 35651584
 *   free b, e = 2000 (block 2048 where b was), free c, free f,
 *   empty_cache: the 12 MiB segment released
 *   a, d, e are never freed: three tensor leaks, 1024 + 15 MiB + 2048 bytes.
 * Prints the double's own figures: allocated reserved peak_allocated
 * peak_reserved trackers.
 *
 *   blocks_train PATH_OF_THE_DOUBLE (lib/libc10_cuda.so or old/lib/...)
 *   blocks_train PATH_OF_THE_DOUBLE workspace
 *
 * With "workspace", only one operation instead (the double's
 * at::_ops::addmm::call, from one line here): its output tensor of 4 MiB and
 * the cuBLAS workspace of 32 MiB it allocates under
 * at::cuda::getCurrentCUDABlasHandle, both kept to exit.
 *
 * The double is opened by path, as Python opens PyTorch's libraries. */
#include <dlfcn.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

static void *(*c10_double_alloc)(size_t n, void *stream);
static void (*c10_double_free)(void *p);
static void (*c10_double_empty_cache)(void);
static void (*c10_double_stats)(size_t out[5]);
static void *(*c10_double_addmm)(size_t out_bytes);

#define MiB (1024u * 1024u)

int main(int argc, char **argv)
{
    bool workspace = argc == 3 && strcmp(argv[2], "workspace") == 0;
    void *lib = argc == 2 || workspace ? dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL) : NULL;
    if (!lib) {
        fprintf(stderr, "blocks_train: cannot open the double: %s\n", argc >= 2 ? dlerror() : "no path given");
        return 2;
    }
    *(void **)&c10_double_alloc = dlsym(lib, "c10_double_alloc");
    *(void **)&c10_double_free = dlsym(lib, "c10_double_free");
    *(void **)&c10_double_empty_cache = dlsym(lib, "c10_double_empty_cache");
    *(void **)&c10_double_stats = dlsym(lib, "c10_double_stats");
    *(void **)&c10_double_addmm = dlsym(lib, "c10_double_addmm");
    if (!c10_double_alloc || !c10_double_free || !c10_double_empty_cache || !c10_double_stats || !c10_double_addmm)
        return 2;
    size_t s[5];
    if (workspace) {
        void *out = c10_double_addmm(4 * MiB); /* the output and the workspace, never freed */
        c10_double_stats(s);
        printf("%zu %zu %zu %zu %zu\n", s[0], s[1], s[2], s[3], s[4]);
        return !out;
    }
    void *a = c10_double_alloc(1000, NULL);
    void *b = c10_double_alloc(3000, NULL);
    void *c = c10_double_alloc(5 * MiB, NULL);
    void *d = c10_double_alloc(14 * MiB + MiB / 2, NULL);
    void *f = c10_double_alloc(12 * MiB, NULL);
    c10_double_free(b);
    void *e = c10_double_alloc(2000, NULL);
    c10_double_free(c);
    c10_double_free(f);
    c10_double_empty_cache();
    c10_double_stats(s);
    printf("%zu %zu %zu %zu %zu\n", s[0], s[1], s[2], s[3], s[4]);
    return !(a && d && e && e == b);
}
