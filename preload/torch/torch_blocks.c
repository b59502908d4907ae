/* SPDX-License-Identifier: MIT */
#include "torch_blocks.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "log.h"
#include "real_symbols.h"
#include "recorder.h"
#include "stacks.h"
#include "bridge_abi.h"

enum blocks_state {
    BLOCKS_UNSEEN = 0,    /* libc10_cuda.so not loaded (yet) */
    BLOCKS_SEEN = 1,      /* loaded; waiting for its allocator's first segment */
    BLOCKS_ATTACHING = 2, /* one thread is attaching; the others never wait for it */
    BLOCKS_ON = 3,
    BLOCKS_OFF = 4
};

int cmt_torch_blocks_state;
static char c10_path[PATH_MAX];
static uint64_t c10_lo, c10_hi;
static cmt_torch_bridge_attach_fn bridge_attach; /* set before BLOCKS_SEEN is published */
static char bridge_error[140];
static bool load_pending; /* libc10_cuda.so found by the scan in progress */

static void load_bridge(void);

static void module_locked(const struct dl_phdr_info *info, const char *path, uint64_t lo, uint64_t hi)
{
    (void)info;
    if (__atomic_load_n(&cmt_torch_blocks_state, __ATOMIC_ACQUIRE) != BLOCKS_UNSEEN || !cmt_config.blocks)
        return;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (strcmp(base, "libc10_cuda.so") != 0 || strlen(path) >= sizeof c10_path)
        return;
    memcpy(c10_path, path, strlen(path) + 1);
    c10_lo = lo;
    c10_hi = hi;
    load_pending = true;
}

static void scan_done_locked(void)
{
    if (!load_pending)
        return;
    load_pending = false;
    /* The bridge is opened here, once the scan's dl_iterate_phdr returned,
     * under the metadata lock as the scan itself takes the loader's: the
     * same lock order. Opening it later, inside the allocator's cudaMalloc,
     * would take the loader's lock while the allocator's is held, against a
     * thread whose library constructor allocates through PyTorch. */
    load_bridge();
    __atomic_store_n(&cmt_torch_blocks_state, BLOCKS_SEEN, __ATOMIC_RELEASE);
}

/* The bridge's callback: one allocator event, under the allocator's lock.
 * Recorded as a hook of its own layer on the allocating thread; frees carry
 * no stack unless CUMEMTRACE_FREE_STACKS asks for them, segments none (the
 * driver call that made the segment has it). */
static void record_block(const struct cmt_torch_block_event *b)
{
    if (__atomic_load_n(&cmt_torch_blocks_state, __ATOMIC_ACQUIRE) != BLOCKS_ON)
        return;
    struct cmt_hook h;
    if (cmt_hook_enter(&h, CMT_LAYER_BLOCK)) {
        struct cmt_event e = {
            .type = CMT_REC_BLOCK,
            .api = b->api,
            .kind = cmt_api_default_kind(b->api),
            .has_device = true,
            .device = b->device,
            .ts = cmt_event_ts(h.thread),
            .addr = b->addr,
            .size = b->size,
            .stream = b->stream,
            .aux = {b->pool[0], b->pool[1], b->device_free, 0},
        };
        bool with_stack = b->api == CMT_API_TORCH_ALLOC || b->api == CMT_API_TORCH_OOM ||
                          (cmt_config.free_stacks && (b->api == CMT_API_TORCH_FREE_REQUESTED));
        if (with_stack && cmt_config.stack_depth)
            e.stack = cmt_stack_capture();
        cmt_hook_commit(&h, &e);
    }
    cmt_hook_leave(&h);
}

static const struct cmt_torch_bridge_host host = {
    .abi = CMT_TORCH_BRIDGE_ABI,
    .record = record_block,
};

/* The ALLOCATOR record (format.h) and the note, outside any lock. */
static void write_decision(const struct cmt_torch_bridge_result *r)
{
    bool on = r->status == CMT_TORCH_BRIDGE_ATTACHED;
    /* The settings the allocator parsed from the environment when it was
     * made (its first use, before this attach): PyTorch 2.9 and later read
     * PYTORCH_ALLOC_CONF and, for the CUDA allocator, still
     * PYTORCH_CUDA_ALLOC_CONF. What torch.cuda.memory._set_allocator_settings
     * changes at run time is not seen. */
    cmt_recorder_write_allocator(CMT_FRAMEWORK_PYTORCH, r->version, on ? CMT_BLOCKS_ON : CMT_BLOCKS_OFF,
                                 r->backend, getenv("PYTORCH_ALLOC_CONF"), getenv("PYTORCH_CUDA_ALLOC_CONF"));
    char text[320];
    if (on)
        snprintf(text, sizeof text, "PyTorch %s caching allocator: block layer on (tensors inside segments)",
                 r->version);
    else
        snprintf(text, sizeof text, "PyTorch block layer off: %s", r->why);
    cmt_recorder_note(CMT_NOTE_BLOCKS, text);
}

static void bridge_path(char *out, size_t cap)
{
    Dl_info info;
    out[0] = '\0';
    if (!dladdr((const void *)&cmt_torch_blocks_state, &info) || !info.dli_fname)
        return;
    const char *slash = strrchr(info.dli_fname, '/');
    int dir = slash ? (int)(slash - info.dli_fname) : 1;
    snprintf(out, cap, "%.*s/libcumemtrace_torch.so", dir, slash ? info.dli_fname : ".");
}

static void load_bridge(void)
{
    char path[PATH_MAX];
    bridge_path(path, sizeof path);
    void *lib = path[0] ? dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE) : NULL;
    bridge_attach = lib ? (cmt_torch_bridge_attach_fn)cmt_real_dlsym(lib, CMT_TORCH_BRIDGE_ENTRY) : NULL;
    if (!bridge_attach) {
        const char *err = dlerror();
        /* Cut to the note's room on purpose (dlerror can be long). */
        snprintf(bridge_error, sizeof bridge_error, "%.*s", (int)sizeof bridge_error - 1, err ? err : path);
    }
}

static void attach(void)
{
    struct cmt_torch_bridge_result r;
    memset(&r, 0, sizeof r);
    cmt_torch_bridge_attach_fn fn = bridge_attach;
    if (!fn) {
        r.status = CMT_TORCH_BRIDGE_FAILED;
        snprintf(r.why, sizeof r.why, "the shim's PyTorch bridge could not be loaded: %s", bridge_error);
    } else {
        struct cmt_torch_bridge_host h = host;
        h.layout_override = cmt_config.torch_layout[0] ? cmt_config.torch_layout : NULL;
        /* ON before the call: the allocator may report an event on another
         * thread as soon as the tracker is in its list. */
        __atomic_store_n(&cmt_torch_blocks_state, BLOCKS_ON, __ATOMIC_RELEASE);
        static struct cmt_torch_bridge_host kept;
        kept = h;
        fn(&kept, c10_path, &r);
    }
    if (r.status != CMT_TORCH_BRIDGE_ATTACHED)
        __atomic_store_n(&cmt_torch_blocks_state, BLOCKS_OFF, __ATOMIC_RELEASE);
    write_decision(&r);
}

void cmt_torch_blocks_after_segment_call_slow(const void *caller)
{
    uint64_t ip = (uint64_t)(uintptr_t)caller;
    if (ip < c10_lo || ip >= c10_hi)
        return; /* not the caching allocator's own segment */
    int expected = BLOCKS_SEEN;
    if (!__atomic_compare_exchange_n(&cmt_torch_blocks_state, &expected, BLOCKS_ATTACHING, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        return;
    attach();
}

const struct cmt_module_listener cmt_torch_blocks_module_listener = {
    .module_locked = module_locked,
    .scan_done_locked = scan_done_locked,
};
