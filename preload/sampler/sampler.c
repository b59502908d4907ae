/* SPDX-License-Identifier: MIT */
#include "sampler.h"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <pthread.h>

#include "config.h"
#include "pool_registry.h"
#include "real_symbols.h"

uint64_t cmt_sampler_next_ns[CMT_SAMPLER_MAX_DEVICES];

/* ---- libcuda's query functions ---------------------------------------------- */

/* The exported names are the ABIs typed here in every libcuda since CUDA
 * 11.2 (cuMemGetInfo_v2 is the size_t one; plain cuMemGetInfo is 32-bit). */
struct driver_queries {
    PFN_cuCtxGetDevice_v2000 ctx_get_device;
    PFN_cuMemGetInfo_v3020 mem_get_info;
    PFN_cuDeviceGetDefaultMemPool_v11020 default_pool; /* NULL before CUDA 11.2: no pool samples */
    PFN_cuDeviceGetMemPool_v11020 current_pool;
    PFN_cuMemPoolGetAttribute_v11020 pool_attribute;
    PFN_cuMemGetAddressRange_v3020 address_range; /* the size of a mapping opened from another process */
    PFN_cuDeviceGetName_v2000 device_name;        /* the DEVICE record's */
    PFN_cuDeviceTotalMem_v3020 device_total;
    PFN_cuDeviceGetUuid_v11040 device_uuid;
};

enum { QUERIES_UNRESOLVED = 0, QUERIES_READY = 1, QUERIES_ABSENT = 2 };
#define QUERY_ATTEMPTS 16

static pthread_mutex_t queries_lock = PTHREAD_MUTEX_INITIALIZER;
static struct driver_queries queries;
static int queries_state; /* atomic */
static unsigned queries_attempts;

static const struct driver_queries *driver_queries(void)
{
    int state = __atomic_load_n(&queries_state, __ATOMIC_ACQUIRE);
    if (state == QUERIES_READY)
        return &queries;
    if (state == QUERIES_ABSENT)
        return NULL;
    pthread_mutex_lock(&queries_lock);
    if (queries_state == QUERIES_UNRESOLVED) {
        void *h = cmt_real_symbols_driver_handle();
        if (h) {
            queries.ctx_get_device = (PFN_cuCtxGetDevice_v2000)cmt_real_dlsym(h, "cuCtxGetDevice");
            queries.mem_get_info = (PFN_cuMemGetInfo_v3020)cmt_real_dlsym(h, "cuMemGetInfo_v2");
            queries.default_pool = (PFN_cuDeviceGetDefaultMemPool_v11020)cmt_real_dlsym(h, "cuDeviceGetDefaultMemPool");
            queries.current_pool = (PFN_cuDeviceGetMemPool_v11020)cmt_real_dlsym(h, "cuDeviceGetMemPool");
            queries.pool_attribute = (PFN_cuMemPoolGetAttribute_v11020)cmt_real_dlsym(h, "cuMemPoolGetAttribute");
            queries.address_range = (PFN_cuMemGetAddressRange_v3020)cmt_real_dlsym(h, "cuMemGetAddressRange_v2");
            queries.device_name = (PFN_cuDeviceGetName_v2000)cmt_real_dlsym(h, "cuDeviceGetName");
            queries.device_total = (PFN_cuDeviceTotalMem_v3020)cmt_real_dlsym(h, "cuDeviceTotalMem_v2");
            queries.device_uuid = (PFN_cuDeviceGetUuid_v11040)cmt_real_dlsym(h, "cuDeviceGetUuid_v2");
            if (!queries.device_uuid) /* a driver before 11.4: the same ABI under the old name */
                queries.device_uuid = (PFN_cuDeviceGetUuid_v11040)cmt_real_dlsym(h, "cuDeviceGetUuid");
        }
        if (queries.ctx_get_device && queries.mem_get_info)
            __atomic_store_n(&queries_state, QUERIES_READY, __ATOMIC_RELEASE);
        else if (++queries_attempts >= QUERY_ATTEMPTS) /* libcuda not loaded yet: try again later */
            __atomic_store_n(&queries_state, QUERIES_ABSENT, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&queries_lock);
    return __atomic_load_n(&queries_state, __ATOMIC_ACQUIRE) == QUERIES_READY ? &queries : NULL;
}

uint64_t cmt_sampler_range_size(uint64_t ptr)
{
    const struct driver_queries *q = driver_queries();
    CUdeviceptr base = 0;
    size_t size = 0;
    if (!q || !q->address_range || q->address_range(&base, &size, (CUdeviceptr)ptr) != CUDA_SUCCESS)
        return 0;
    return (uint64_t)size;
}

int32_t cmt_sampler_current_device(void)
{
    const struct driver_queries *q = driver_queries();
    CUdevice device;
    if (!q || q->ctx_get_device(&device) != CUDA_SUCCESS)
        return -1;
    return (int32_t)device;
}

/* ---- records ------------------------------------------------------------------ */

/* Appends one record on the thread's stream. The timestamp is taken after
 * room is reserved (format.h, W1): a sample's records carry the times they
 * were written, the figures were read just before. */
static bool append(struct cmt_thread *t, struct cmt_event *e)
{
    if (!cmt_trace_is_active(&cmt_recorder.tf) || !cmt_event_stream_reserve(&cmt_recorder.tf, &t->stream))
        return false;
    e->ts = cmt_event_ts(t);
    cmt_event_stream_append(&t->stream, e);
    return true;
}

struct pool_reading {
    uint64_t handle;
    int32_t device;
    uint64_t reserved, used, threshold;
    uint64_t flags; /* bit 0: the device's default pool; bit 1: its current pool */
};

static bool read_pool(const struct driver_queries *q, CUmemoryPool pool, struct pool_reading *out)
{
    cuuint64_t reserved = 0, used = 0, threshold = 0;
    if (!q->pool_attribute || q->pool_attribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved) != CUDA_SUCCESS ||
        q->pool_attribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used) != CUDA_SUCCESS ||
        q->pool_attribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold) != CUDA_SUCCESS)
        return false;
    out->handle = (uint64_t)(uintptr_t)pool;
    out->reserved = reserved;
    out->used = used;
    out->threshold = threshold;
    return true;
}

static void append_pool_state(struct cmt_thread *t, const struct pool_reading *p)
{
    struct cmt_event e = {
        .type = CMT_REC_POOL,
        .api = CMT_API_POOL_STATE,
        .kind = CMT_KIND_ASYNC,
        .has_device = true,
        .device = p->device,
        .addr = p->handle,
        .aux = {p->reserved, p->used, p->threshold, p->flags},
    };
    append(t, &e);
}

/* The pools of device: its default pool, its current pool when different,
 * and the known pools located on it. */
static size_t read_device_pools(const struct driver_queries *q, CUdevice device, struct pool_reading *out, size_t max)
{
    size_t n = 0;
    CUmemoryPool dflt = NULL, current = NULL;
    if (q->default_pool && q->default_pool(&dflt, device) == CUDA_SUCCESS && dflt && read_pool(q, dflt, &out[n])) {
        out[n].flags = 1;
        n++;
    }
    if (q->current_pool && q->current_pool(&current, device) == CUDA_SUCCESS && current) {
        if (current == dflt)
            out[0].flags |= 2;
        else if (read_pool(q, current, &out[n]))
            out[n++].flags = 2;
    }
    struct cmt_known_pool known[CMT_SAMPLER_MAX_POOLS];
    size_t k = cmt_pool_registry_list(known, CMT_SAMPLER_MAX_POOLS);
    for (size_t i = 0; i < k && n < max; i++) {
        CUmemoryPool pool = (CUmemoryPool)(uintptr_t)known[i].handle;
        if (known[i].device != (int32_t)device || pool == dflt || pool == current)
            continue;
        if (read_pool(q, pool, &out[n]))
            out[n++].flags = 0;
    }
    for (size_t i = 0; i < n; i++)
        out[i].device = (int32_t)device;
    return n;
}

/* A SAMPLE record for the current context's device, then one POOL_STATE
 * record per pool of that device. request: the bytes a failed allocation
 * asked for (failure samples), else 0. */
/* The DEVICE record of a device, once, at its start sample: its UUID is
 * what the job view matches GPUs by across processes (one names a GPU by
 * index, another by UUID in CUDA_VISIBLE_DEVICES). */
static void describe_device(const struct driver_queries *q, CUdevice device)
{
    char name[256] = "";
    size_t total = 0;
    CUuuid uuid;
    if (!q->device_name || q->device_name(name, (int)sizeof name, device) != CUDA_SUCCESS)
        name[0] = 0;
    name[sizeof name - 1] = 0;
    if (!q->device_total || q->device_total(&total, device) != CUDA_SUCCESS)
        total = 0;
    bool has_uuid = q->device_uuid && q->device_uuid(&uuid, device) == CUDA_SUCCESS;
    cmt_recorder_write_device((int32_t)device, name, total, has_uuid ? (const uint8_t *)uuid.bytes : NULL);
}

static void take_sample(struct cmt_thread *t, uint8_t api, uint64_t request)
{
    const struct driver_queries *q = driver_queries();
    CUdevice device;
    size_t free_bytes = 0, total_bytes = 0;
    if (!q || q->ctx_get_device(&device) != CUDA_SUCCESS || q->mem_get_info(&free_bytes, &total_bytes) != CUDA_SUCCESS)
        return;
    struct pool_reading pools[CMT_SAMPLER_MAX_POOLS];
    size_t n = read_device_pools(q, device, pools, CMT_SAMPLER_MAX_POOLS);
    uint64_t reserved = 0, used = 0;
    for (size_t i = 0; i < n; i++) {
        reserved += pools[i].reserved;
        used += pools[i].used;
    }
    struct cmt_event e = {
        .type = CMT_REC_SAMPLE,
        .api = api,
        .kind = CMT_KIND_DEVICE,
        .has_device = true,
        .device = (int32_t)device,
        .size = request,
        .aux = {free_bytes, total_bytes, reserved, used},
    };
    if (api == CMT_API_SAMPLE_START)
        describe_device(q, device);
    if (!append(t, &e))
        return;
    for (size_t i = 0; i < n; i++)
        append_pool_state(t, &pools[i]);
}

void cmt_sampler_take_failure(struct cmt_hook *h, const struct cmt_event *failed)
{
    take_sample(h->thread, CMT_API_SAMPLE_FAILURE, failed->size);
}

void cmt_sampler_take_due(struct cmt_hook *h, int32_t device, uint64_t now)
{
    uint64_t *slot = &cmt_sampler_next_ns[device];
    uint64_t due = __atomic_load_n(slot, __ATOMIC_RELAXED);
    if (now < due)
        return;
    uint64_t period = (uint64_t)cmt_config.sample_ms * 1000000u;
    uint64_t next = period ? now + period : UINT64_MAX;
    /* One thread takes a due sample; the others go on. */
    if (!__atomic_compare_exchange_n(slot, &due, next, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        return;
    take_sample(h->thread, due == 0 ? CMT_API_SAMPLE_START : CMT_API_SAMPLE_PERIODIC, 0);
}

void cmt_sampler_pool_state(struct cmt_hook *h, uint64_t pool, int32_t device)
{
    const struct driver_queries *q = driver_queries();
    struct pool_reading p = {.device = device};
    if (!q || !read_pool(q, (CUmemoryPool)(uintptr_t)pool, &p))
        return;
    if (p.device < 0)
        p.device = cmt_sampler_current_device();
    append_pool_state(h->thread, &p);
}

void cmt_sampler_exit(void)
{
    struct cmt_thread *t = &cmt_thread_state;
    if (t->generation != cmt_recorder.generation && !cmt_recorder_thread_setup(t))
        return;
    /* libcuda may be gone or torn down by now (the runtime's exit handlers
     * ran before us): the queries then fail and there is no exit sample. */
    if (__atomic_load_n(&queries_state, __ATOMIC_ACQUIRE) != QUERIES_READY)
        return;
    take_sample(t, CMT_API_SAMPLE_EXIT, 0);
}

void cmt_sampler_fork_prepare(void)
{
    pthread_mutex_lock(&queries_lock);
    cmt_pool_registry_fork_prepare();
}

void cmt_sampler_fork_parent(void)
{
    cmt_pool_registry_fork_parent();
    pthread_mutex_unlock(&queries_lock);
}

void cmt_sampler_fork_child(void)
{
    cmt_pool_registry_fork_child();
    pthread_mutex_init(&queries_lock, NULL);
    for (size_t d = 0; d < CMT_SAMPLER_MAX_DEVICES; d++)
        __atomic_store_n(&cmt_sampler_next_ns[d], 0, __ATOMIC_RELAXED);
}
