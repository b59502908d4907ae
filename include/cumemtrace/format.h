/* SPDX-License-Identifier: MIT
 *
 * cumemtrace trace file format: the contract between the recorder (preload/)
 * and every reader (analyzer/, tests, third-party tools). docs/trace-format.md
 * is the prose version of this header; change both together.
 *
 * Layout
 *   [file header, CMT_FILE_HEADER_SIZE bytes]
 *   [chunk][chunk][chunk]...            contiguous, each CMT_CHUNK_ALIGN aligned
 *   [zero bytes up to the end of file]  preallocated, never claimed
 *
 * Every chunk belongs to one writer stream: either one thread's event stream
 * (CMT_CHUNK_MAGIC_EVENTS) or the process-wide metadata stream
 * (CMT_CHUNK_MAGIC_META). A chunk header is committed by storing its magic
 * last; a record is committed by storing its first byte (its type) last.
 * Zero means "not committed", which is what an untouched page of a grown file
 * holds, so a process killed at any instant leaves a file whose committed
 * prefix of every chunk is intact.
 *
 * Ordering guarantees the writer gives (readers rely on them to merge the
 * per-thread streams by time without reading the whole file first):
 *   W1  every record in an event chunk has ts >= the chunk's claim_ns;
 *   W2  claim_ns never decreases from one chunk to the next in file order;
 *   W3  records inside one event chunk have non-decreasing ts.
 * A free's timestamp is taken before the real free runs and an allocation's
 * after the real allocation returns, so a free of address A sorts before a
 * later allocation that reuses A, whichever threads made them:
 *   W4  every timestamp of a process (events, claims, END) comes from one
 *       clock that all its threads share, never decreasing in real time:
 *       an event taken after another, on any thread, has ts >= the
 *       other's, up to the hardware's error between CPUs only (none with
 *       CUMEMTRACE_CLOCK=monotonic; with the TSC event clock, the TSCs'
 *       synchronisation and an unfenced counter read running early by up
 *       to a cache miss, tens of ns: docs/performance.md), far below what
 *       a real release and a real allocation take between them.
 * Within one thread the order is exact whatever the error (W1, W3).
 *
 * Compiles as C99, C11 and C++ (tests/meson.build builds it all three ways).
 */
#ifndef CUMEMTRACE_FORMAT_H
#define CUMEMTRACE_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Versioning                                                               */
/* ------------------------------------------------------------------------ */

#define CMT_FILE_MAGIC "CUMEMTRC" /* 8 bytes, no terminator on disk */
#define CMT_FILE_MAGIC_SIZE 8
/* A reader refuses a file whose major version is newer than its own. Minor
 * versions only add things an older reader can skip: new record types in the
 * metadata stream (length-prefixed), new field bits in event records (every
 * field is one varint), new flag bits. */
#define CMT_VERSION_MAJOR 1
#define CMT_VERSION_MINOR 0

#define CMT_FILE_HEADER_SIZE 4096u
#define CMT_CHUNK_ALIGN 64u
#define CMT_CHUNK_HEADER_SIZE 32u
#define CMT_CHUNK_MAX_SIZE (4u << 20)
#define CMT_ENDIAN_CHECK 0x0102030405060708ull

/* File header flags, OR-ed in atomically while the process runs. */
enum cmt_file_flag {
    CMT_FILE_FLAG_CLEAN_EXIT = 1u << 0,  /* exit handler ran, file trimmed */
    CMT_FILE_FLAG_SIZE_LIMIT = 1u << 1,  /* CUMEMTRACE_MAX_SIZE reached, recording stopped */
    CMT_FILE_FLAG_WRITE_ERROR = 1u << 2, /* file could not grow (disk full...), recording stopped */
    CMT_FILE_FLAG_FORKED_CHILD = 1u << 3 /* this trace belongs to a child that forked from a traced parent */
};

struct cmt_file_header {
    char magic[CMT_FILE_MAGIC_SIZE]; /* CMT_FILE_MAGIC */
    uint16_t version_major;
    uint16_t version_minor;
    uint32_t header_size;       /* CMT_FILE_HEADER_SIZE: first chunk starts here */
    uint64_t endian_check;      /* CMT_ENDIAN_CHECK in the writer's byte order */
    uint32_t flags;             /* enum cmt_file_flag, updated atomically */
    uint32_t pid;
    uint64_t start_monotonic_ns; /* CLOCK_MONOTONIC at trace creation */
    uint64_t start_realtime_ns;  /* CLOCK_REALTIME at the same instant */
    uint64_t claimed_end;        /* offset after the last claimed chunk (hint; updated atomically) */
    uint64_t events_dropped;     /* events not recorded after recording stopped */
    uint32_t pointer_size;       /* sizeof(void *) of the writer */
    uint32_t reserved0;
    uint64_t reserved[8];
};

/* ------------------------------------------------------------------------ */
/* Chunks                                                                   */
/* ------------------------------------------------------------------------ */

#define CMT_CHUNK_MAGIC_EVENTS 0x45544d43u /* "CMTE" little-endian */
#define CMT_CHUNK_MAGIC_META 0x4d544d43u   /* "CMTM" little-endian */
#define CMT_CHUNK_MAGIC_PAD 0x50544d43u    /* "CMTP": filler up to the end of a mapped segment */

struct cmt_chunk_header {
    uint32_t magic;     /* written last: zero means the chunk was never committed */
    uint32_t size;      /* bytes including this header, multiple of CMT_CHUNK_ALIGN */
    uint64_t claim_ns;  /* CLOCK_MONOTONIC when claimed (W1, W2) */
    uint32_t tid;       /* writer thread (kernel tid); 0 for the metadata stream */
    uint32_t thread_seq; /* index of this chunk among its thread's chunks */
    uint64_t base_addr; /* initial value of the address delta state */
};

/* ------------------------------------------------------------------------ */
/* Event stream records                                                     */
/* ------------------------------------------------------------------------ */
/* Every event record has the same shape, so a reader can skip types it does
 * not know:
 *
 *   u8      type        enum cmt_record_type, nonzero, stored last (commit)
 *   u8      api         enum cmt_api
 *   varint  mask        which fields follow (enum cmt_field), in bit order
 *   varint  field...    one unsigned LEB128 varint per set bit
 *
 * Delta state per chunk (reset at each chunk start):
 *   prev_ts     = chunk claim_ns;  TS field = zigzag(ts - prev_ts)
 *   prev_addr   = chunk base_addr; ADDR field = zigzag(addr - prev_addr)
 *   prev_device = 0;               DEVICE field present only when it changes
 * Fields absent from the mask take their defaults: ts/addr/device unchanged,
 * size 0, stream 0, result 0 (success), stack 0 (no stack), kind = the api's
 * default kind (cmt_api_default_kind), aux 0. */

enum cmt_record_type {
    CMT_REC_NONE = 0,    /* uncommitted */
    CMT_REC_ALLOC = 1,   /* an allocation call; failed ones have result != 0 */
    CMT_REC_FREE = 2,    /* a release call */
    CMT_REC_SAMPLE = 3,  /* device context sample: aux0 free, aux1 total */
    CMT_REC_POOL = 4,    /* pool lifecycle/state: addr = pool handle, api says which */
    CMT_REC_MARK = 5,    /* user mark/phase: aux0 = string id, api says begin/end/instant */
    CMT_REC_TYPE_COUNT
};

enum cmt_field {
    CMT_F_TS = 1u << 0,     /* zigzag delta ns */
    CMT_F_DEVICE = 1u << 1, /* zigzag device ordinal; -1 = host */
    CMT_F_ADDR = 1u << 2,   /* zigzag delta of the address (or handle) */
    CMT_F_SIZE = 1u << 3,   /* requested bytes */
    CMT_F_STREAM = 1u << 4, /* stream handle (opaque) */
    CMT_F_RESULT = 1u << 5, /* CUDA error code returned to the caller */
    CMT_F_STACK = 1u << 6,  /* interned stack id */
    CMT_F_KIND = 1u << 7,   /* enum cmt_kind when not the api's default */
    CMT_F_AUX0 = 1u << 8,   /* meaning depends on type/api, see docs */
    CMT_F_AUX1 = 1u << 9,
    CMT_F_AUX2 = 1u << 10,
    CMT_F_AUX3 = 1u << 11
};
#define CMT_F_KNOWN_MASK 0xfffu
#define CMT_AUX_COUNT 4

/* Memory classes. Each class lives in its own address namespace in the
 * replay: a VMM handle and a device pointer never collide. */
enum cmt_kind {
    CMT_KIND_DEVICE = 0,       /* cudaMalloc/cuMemAlloc and pitched/3D variants */
    CMT_KIND_MANAGED = 1,      /* cudaMallocManaged/cuMemAllocManaged */
    CMT_KIND_HOST_PINNED = 2,  /* cudaMallocHost/cudaHostAlloc/cuMemHostAlloc */
    CMT_KIND_ASYNC = 3,        /* stream-ordered pool allocations */
    CMT_KIND_VMM_PHYSICAL = 4, /* cuMemCreate handles (physical memory) */
    CMT_KIND_VMM_RESERVE = 5,  /* cuMemAddressReserve ranges (virtual only) */
    CMT_KIND_VMM_MAP = 6,      /* cuMemMap mappings (virtual -> physical) */
    CMT_KIND_ARRAY = 7,        /* CUDA arrays (opaque handles, size from descriptor) */
    CMT_KIND_COUNT
};

/* APIs. Values are part of the format: append only, never renumber. */
#define CMT_API_LIST(X)                                                                      \
    X(UNKNOWN, 0, "unknown", CMT_KIND_DEVICE)                                                \
    X(CUDA_MALLOC, 1, "cudaMalloc", CMT_KIND_DEVICE)                                         \
    X(CUDA_FREE, 2, "cudaFree", CMT_KIND_DEVICE)                                             \
    X(CUDA_MALLOC_ASYNC, 3, "cudaMallocAsync", CMT_KIND_ASYNC)                               \
    X(CUDA_FREE_ASYNC, 4, "cudaFreeAsync", CMT_KIND_ASYNC)                                   \
    X(CUDA_MALLOC_FROM_POOL_ASYNC, 5, "cudaMallocFromPoolAsync", CMT_KIND_ASYNC)             \
    X(CUDA_MALLOC_MANAGED, 6, "cudaMallocManaged", CMT_KIND_MANAGED)                         \
    X(CUDA_MALLOC_HOST, 7, "cudaMallocHost", CMT_KIND_HOST_PINNED)                           \
    X(CUDA_HOST_ALLOC, 8, "cudaHostAlloc", CMT_KIND_HOST_PINNED)                             \
    X(CUDA_FREE_HOST, 9, "cudaFreeHost", CMT_KIND_HOST_PINNED)                               \
    X(CUDA_MALLOC_PITCH, 10, "cudaMallocPitch", CMT_KIND_DEVICE)                             \
    X(CUDA_MALLOC_3D, 11, "cudaMalloc3D", CMT_KIND_DEVICE)                                   \
    X(CUDA_MALLOC_ARRAY, 12, "cudaMallocArray", CMT_KIND_ARRAY)                              \
    X(CUDA_MALLOC_3D_ARRAY, 13, "cudaMalloc3DArray", CMT_KIND_ARRAY)                         \
    X(CUDA_FREE_ARRAY, 14, "cudaFreeArray", CMT_KIND_ARRAY)                                  \
    X(CU_MEM_ALLOC, 15, "cuMemAlloc", CMT_KIND_DEVICE)                                       \
    X(CU_MEM_FREE, 16, "cuMemFree", CMT_KIND_DEVICE)                                         \
    X(CU_MEM_ALLOC_PITCH, 17, "cuMemAllocPitch", CMT_KIND_DEVICE)                            \
    X(CU_MEM_ALLOC_MANAGED, 18, "cuMemAllocManaged", CMT_KIND_MANAGED)                       \
    X(CU_MEM_ALLOC_HOST, 19, "cuMemAllocHost", CMT_KIND_HOST_PINNED)                         \
    X(CU_MEM_HOST_ALLOC, 20, "cuMemHostAlloc", CMT_KIND_HOST_PINNED)                         \
    X(CU_MEM_FREE_HOST, 21, "cuMemFreeHost", CMT_KIND_HOST_PINNED)                           \
    X(CU_MEM_ALLOC_ASYNC, 22, "cuMemAllocAsync", CMT_KIND_ASYNC)                             \
    X(CU_MEM_FREE_ASYNC, 23, "cuMemFreeAsync", CMT_KIND_ASYNC)                               \
    X(CU_MEM_ALLOC_FROM_POOL_ASYNC, 24, "cuMemAllocFromPoolAsync", CMT_KIND_ASYNC)           \
    X(CU_MEM_CREATE, 25, "cuMemCreate", CMT_KIND_VMM_PHYSICAL)                               \
    X(CU_MEM_RELEASE, 26, "cuMemRelease", CMT_KIND_VMM_PHYSICAL)                             \
    X(CU_MEM_MAP, 27, "cuMemMap", CMT_KIND_VMM_MAP)                                          \
    X(CU_MEM_UNMAP, 28, "cuMemUnmap", CMT_KIND_VMM_MAP)                                      \
    X(CU_MEM_ADDRESS_RESERVE, 29, "cuMemAddressReserve", CMT_KIND_VMM_RESERVE)               \
    X(CU_MEM_ADDRESS_FREE, 30, "cuMemAddressFree", CMT_KIND_VMM_RESERVE)                     \
    X(CU_ARRAY_CREATE, 31, "cuArrayCreate", CMT_KIND_ARRAY)                                  \
    X(CU_ARRAY_3D_CREATE, 32, "cuArray3DCreate", CMT_KIND_ARRAY)                             \
    X(CU_ARRAY_DESTROY, 33, "cuArrayDestroy", CMT_KIND_ARRAY)                                \
    X(SAMPLE_START, 34, "sample:start", CMT_KIND_DEVICE)                                     \
    X(SAMPLE_PERIODIC, 35, "sample:periodic", CMT_KIND_DEVICE)                               \
    X(SAMPLE_FAILURE, 36, "sample:failure", CMT_KIND_DEVICE)                                 \
    X(SAMPLE_EXIT, 37, "sample:exit", CMT_KIND_DEVICE)                                       \
    X(POOL_CREATE, 38, "cudaMemPoolCreate", CMT_KIND_ASYNC)                                  \
    X(POOL_DESTROY, 39, "cudaMemPoolDestroy", CMT_KIND_ASYNC)                                \
    X(POOL_TRIM, 40, "cudaMemPoolTrimTo", CMT_KIND_ASYNC)                                    \
    X(POOL_STATE, 41, "pool:state", CMT_KIND_ASYNC)                                          \
    X(MARK_INSTANT, 42, "mark", CMT_KIND_DEVICE)                                             \
    X(MARK_PUSH, 43, "phase:push", CMT_KIND_DEVICE)                                          \
    X(MARK_POP, 44, "phase:pop", CMT_KIND_DEVICE)                                            \
    X(CU_MEM_POOL_CREATE, 45, "cuMemPoolCreate", CMT_KIND_ASYNC)                             \
    X(CU_MEM_POOL_DESTROY, 46, "cuMemPoolDestroy", CMT_KIND_ASYNC)                           \
    X(CU_MEM_POOL_TRIM, 47, "cuMemPoolTrimTo", CMT_KIND_ASYNC)

enum cmt_api {
#define CMT_API_ENUM(name, value, text, kind) CMT_API_##name = value,
    CMT_API_LIST(CMT_API_ENUM)
#undef CMT_API_ENUM
    CMT_API_COUNT
};

/* ------------------------------------------------------------------------ */
/* Metadata stream records                                                  */
/* ------------------------------------------------------------------------ */
/* Metadata records are written under one process-wide lock, in order:
 *
 *   u8      type        enum cmt_meta_type, nonzero, stored last (commit)
 *   varint  length      bytes of payload that follow
 *   payload             type-specific, described below; a reader skips any
 *                       trailing payload bytes it does not understand and
 *                       any record type it does not know.
 *
 * Strings are interned: a STRING record defines an id once, other records
 * refer to it. Ids of strings, stacks and modules start at 1 and are dense.
 * "varint" is unsigned LEB128, "svarint" zigzag-encoded signed LEB128,
 * "bytes" a varint length followed by that many bytes. */

enum cmt_meta_type {
    CMT_META_NONE = 0,
    /* payload: varint id, bytes text (UTF-8, no terminator) */
    CMT_META_STRING = 1,
    /* payload: varint pid, varint ppid, varint exe string id, varint argc,
     *          argc x varint arg string id, varint hostname string id,
     *          svarint rank (-1 unknown), varint cwd string id */
    CMT_META_PROCESS = 2,
    /* payload: varint id, varint path string id, varint load bias (l_addr),
     *          varint lowest mapped vaddr, varint highest mapped vaddr (exclusive,
     *          both absolute), bytes build-id, varint ts */
    CMT_META_MODULE = 3,
    /* payload: varint id, varint modules_known (modules with id <= this were
     *          loaded when the stack was taken), varint nframes,
     *          nframes x svarint delta of the frame value from the previous one
     *          (first from 0). A frame value is a return address, except when
     *          bit 63 is set: then the low 32 bits are a FRAME record id (a
     *          synthetic frame such as a Python function). Innermost first. */
    CMT_META_STACK = 4,
    /* payload: varint tid, varint name string id */
    CMT_META_THREAD = 5,
    /* payload: varint id, varint function string id, varint file string id,
     *          varint line, varint language (1 = Python) */
    CMT_META_FRAME = 6,
    /* payload: varint stack_depth, varint free_stacks (0/1), varint sample_ms,
     *          varint max_size, varint shim version string id */
    CMT_META_CONFIG = 7,
    /* payload: varint ordinal, varint name string id, varint total bytes,
     *          bytes uuid (16) */
    CMT_META_DEVICE = 8,
    /* payload: varint ts, varint reason (enum cmt_end_reason),
     *          varint events_dropped */
    CMT_META_END = 9,
    CMT_META_TYPE_COUNT
};

enum cmt_end_reason {
    CMT_END_EXIT = 0,       /* normal process exit */
    CMT_END_SIZE_LIMIT = 1, /* CUMEMTRACE_MAX_SIZE reached */
    CMT_END_WRITE_ERROR = 2 /* the file could not grow */
};

#define CMT_FRAME_SYNTHETIC_BIT (1ull << 63)
#define CMT_MAX_STACK_DEPTH 256u
#define CMT_MAX_META_RECORD 16384u
/* Upper bound of one encoded event record: type, api, 2-byte mask, 12 fields
 * of at most 10 bytes each. */
#define CMT_MAX_EVENT_RECORD (2u + 2u + 12u * 10u)

/* ------------------------------------------------------------------------ */
/* Shared helpers (static inline so both sides use the same code)           */
/* ------------------------------------------------------------------------ */

static inline const char *cmt_api_name(unsigned api)
{
    switch (api) {
#define CMT_API_NAME(name, value, text, kind) \
    case value:                               \
        return text;
        CMT_API_LIST(CMT_API_NAME)
#undef CMT_API_NAME
    default:
        return "unknown";
    }
}

static inline enum cmt_kind cmt_api_default_kind(unsigned api)
{
    switch (api) {
#define CMT_API_KIND(name, value, text, kind) \
    case value:                               \
        return kind;
        CMT_API_LIST(CMT_API_KIND)
#undef CMT_API_KIND
    default:
        return CMT_KIND_DEVICE;
    }
}

static inline const char *cmt_kind_name(unsigned kind)
{
    static const char *const names[CMT_KIND_COUNT] = {
        "device", "managed", "pinned-host", "async-pool", "vmm-physical", "vmm-reserve", "vmm-map", "array"};
    return kind < CMT_KIND_COUNT ? names[kind] : "unknown";
}

static inline uint64_t cmt_zigzag_encode(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t cmt_zigzag_decode(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* Writes v as unsigned LEB128 at p (at most 10 bytes); returns the end. */
static inline uint8_t *cmt_varint_put(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/* Reads one varint from [*p, end). Returns 0 on success, -1 when the input
 * ends first or the varint is longer than 10 bytes. */
static inline int cmt_varint_get(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
    const uint8_t *q = *p;
    uint64_t v = 0;
    unsigned shift = 0;
    while (q < end) {
        uint8_t b = *q++;
        if (shift == 63 && b > 1)
            return -1;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *p = q;
            *out = v;
            return 0;
        }
        shift += 7;
        if (shift > 63)
            return -1;
    }
    return -1;
}

#ifdef __cplusplus
}
#endif

#endif /* CUMEMTRACE_FORMAT_H */
