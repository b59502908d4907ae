/* SPDX-License-Identifier: MIT */
#include "modules.h"

#include <elf.h>
#include <link.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "arena.h"
#include "clock.h"
#include "meta_records.h"
#include "recorder.h"

#define CMT_MAX_MODULES 8192u
#define CMT_MAX_BUILD_ID 64u

struct module {
    uint64_t bias;
    uint64_t lo, hi;
    const char *name; /* arena copy, for identity */
};

static struct module *modules;
static uint32_t module_count;
static unsigned long long seen_adds, seen_subs;

static const struct cmt_module_listener *listeners[CMT_MAX_MODULE_LISTENERS];
static unsigned listener_count;

void cmt_modules_listen(const struct cmt_module_listener *listener)
{
    if (listener_count < CMT_MAX_MODULE_LISTENERS)
        listeners[listener_count++] = listener;
}

void cmt_modules_reset(void)
{
    /* In a forked child the parent's list is kept in memory but the new trace
     * has none of it: start over. */
    module_count = 0;
    seen_adds = seen_subs = 0;
    for (unsigned i = 0; i < listener_count; i++)
        if (listeners[i]->trace_reset)
            listeners[i]->trace_reset();
}

static size_t find_build_id(const struct dl_phdr_info *info, uint8_t *out)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
        const uint8_t *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
            size_t name_sz = (nh->n_namesz + 3) & ~3u;
            size_t desc_sz = (nh->n_descsz + 3) & ~3u;
            const uint8_t *name = p + sizeof *nh;
            const uint8_t *desc = name + name_sz;
            if (desc + desc_sz > end)
                break;
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(name, "GNU", 4) == 0) {
                size_t len = nh->n_descsz < CMT_MAX_BUILD_ID ? nh->n_descsz : CMT_MAX_BUILD_ID;
                memcpy(out, desc, len);
                return len;
            }
            p = desc + desc_sz;
        }
    }
    return 0;
}

static bool module_known(const char *name, uint64_t bias)
{
    for (uint32_t i = 0; i < module_count; i++)
        if (modules[i].bias == bias && strcmp(modules[i].name, name) == 0)
            return true;
    return false;
}

static void record_module(const struct dl_phdr_info *info)
{
    char exe[PATH_MAX];
    const char *name = info->dlpi_name;
    if (!name || !*name) {
        /* The main program is reported with an empty name. */
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        exe[n > 0 ? n : 0] = '\0';
        name = exe;
    }
    uint64_t bias = info->dlpi_addr;
    if (module_known(name, bias) || module_count == CMT_MAX_MODULES)
        return;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uint64_t a = bias + ph->p_vaddr, b = a + ph->p_memsz;
        if (a < lo)
            lo = a;
        if (b > hi)
            hi = b;
    }
    if (hi == 0)
        return;
    uint8_t build_id[CMT_MAX_BUILD_ID];
    size_t build_id_len = find_build_id(info, build_id);

    if (!modules) {
        modules = cmt_arena_alloc_pages(CMT_MAX_MODULES * sizeof *modules);
        if (!modules)
            return;
    }
    size_t name_len = strlen(name);
    char *copy = cmt_arena_alloc(name_len + 1);
    if (!copy)
        return;
    memcpy(copy, name, name_len + 1);
    uint32_t path_id = cmt_recorder_intern_string_locked(name, name_len);

    struct cmt_meta_module rec = {
        .id = cmt_recorder.next_module_id + 1,
        .path_id = path_id,
        .bias = bias,
        .lo = lo,
        .hi = hi,
        .build_id = build_id,
        .build_id_len = build_id_len,
        .ts = cmt_now_ns(),
    };
    if (!cmt_meta_write_module_locked(&cmt_recorder.tf, &cmt_recorder.meta, &rec))
        return;
    cmt_recorder.next_module_id++;
    modules[module_count++] = (struct module){bias, lo, hi, copy};
    /* The interpreter is found where it is loaded: at the trace's start for
     * the python executable, later for a libpython opened by a program. */
    for (unsigned i = 0; i < listener_count; i++)
        if (listeners[i]->module_locked)
            listeners[i]->module_locked(info, copy, lo, hi);
}

static int refresh_callback(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)data;
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
        seen_adds = info->dlpi_adds;
        seen_subs = info->dlpi_subs;
    }
    record_module(info);
    return 0;
}

void cmt_modules_refresh_locked(void)
{
    dl_iterate_phdr(refresh_callback, NULL);
    for (unsigned i = 0; i < listener_count; i++)
        if (listeners[i]->scan_done_locked)
            listeners[i]->scan_done_locked();
}

static int counters_callback(struct dl_phdr_info *info, size_t size, void *data)
{
    unsigned long long *c = data;
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
        c[0] = info->dlpi_adds;
        c[1] = info->dlpi_subs;
    }
    return 1; /* the counters are the same in every callback: stop at once */
}

uint32_t cmt_modules_sync_locked(void)
{
    /* The loader counts every load and unload; when the counts moved since
     * the last scan, rescan. This also catches a library unloaded and another
     * mapped at the same addresses. */
    unsigned long long c[2] = {0, 0};
    dl_iterate_phdr(counters_callback, c);
    if (c[0] != seen_adds || c[1] != seen_subs)
        cmt_modules_refresh_locked();
    return cmt_recorder.next_module_id;
}

static int self_callback(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    uint64_t *range = data;
    uint64_t target = range[2];
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uint64_t a = info->dlpi_addr + ph->p_vaddr, b = a + ph->p_memsz;
        if (target >= a && target < b) {
            range[0] = a;
            range[1] = b;
            return 1;
        }
    }
    return 0;
}

void cmt_modules_self_range(uint64_t *lo, uint64_t *hi)
{
    uint64_t range[3] = {0, 0, (uint64_t)(uintptr_t)&cmt_modules_self_range};
    dl_iterate_phdr(self_callback, range);
    *lo = range[0];
    *hi = range[1];
}
