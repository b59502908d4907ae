/* SPDX-License-Identifier: MIT */
#include "memory_budget.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* AddressSanitizer's own count, when its runtime is linked in (weak: NULL
 * otherwise). */
extern size_t __sanitizer_get_current_allocated_bytes(void) __attribute__((weak));

uint64_t cmt_memory_in_use(void)
{
    if (__sanitizer_get_current_allocated_bytes)
        return __sanitizer_get_current_allocated_bytes();
    FILE *f = fopen("/proc/self/statm", "re");
    unsigned long long size, resident, shared;
    int got = f ? fscanf(f, "%llu %llu %llu", &size, &resident, &shared) : 0;
    if (f)
        fclose(f);
    if (got != 3 || shared > resident)
        return 0;
    return (resident - shared) * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* The cgroup's memory limit (v2 memory.max, v1 memory.limit_in_bytes);
 * 0 when none or unknown. */
static uint64_t cgroup_limit(void)
{
    static const char *const files[] = {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        FILE *f = fopen(files[i], "re");
        if (!f)
            continue;
        unsigned long long v = 0;
        int got = fscanf(f, "%llu", &v);
        fclose(f);
        if (got == 1 && v)
            return v;
    }
    return 0;
}

uint64_t cmt_memory_of_machine(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    uint64_t phys = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
    uint64_t cg = cgroup_limit();
    return cg && (!phys || cg < phys) ? cg : phys;
}

uint64_t cmt_memory_default_budget(void)
{
    return cmt_memory_of_machine() / 2;
}

static bool budget_set;
static uint64_t budget;

void cmt_memory_budget_set(uint64_t bytes)
{
    budget = bytes;
    budget_set = true;
}

uint64_t cmt_memory_budget(void)
{
    if (!budget_set)
        cmt_memory_budget_set(cmt_memory_default_budget());
    return budget;
}

bool cmt_memory_over_budget(uint64_t *in_use)
{
    uint64_t b = cmt_memory_budget();
    uint64_t used = cmt_memory_in_use();
    if (in_use)
        *in_use = used;
    return b && used > b;
}
