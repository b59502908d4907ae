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
 * Integrity (format 2): every header and record carries a CRC-32C check
 * (crc32c.h) bound to where it lies, and every chunk header a commit word
 * saying how far its records reach, so that damage (flipped, zeroed, moved,
 * cut or appended bytes) is told apart from the uncommitted tail a killed
 * process leaves. See "Integrity" below and docs/trace-format.md.
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
 * Compiles as C99, C11 and C++ (tests/headers/meson.build builds it all three ways).
 */
#ifndef CUMEMTRACE_FORMAT_H
#define CUMEMTRACE_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cumemtrace/crc32c.h"

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
#define CMT_VERSION_MAJOR 2
#define CMT_VERSION_MINOR 4 /* 2.1: the allocator block layer (BLOCK records, ALLOCATOR meta);
                             2.2: memory shared between processes (IPC records);
                             2.3: IPC records of stream-ordered pools (cuMemPool* sharing);
                             2.4: the allocator's settings in the ALLOCATOR record */

#define CMT_FILE_HEADER_SIZE 4096u
#define CMT_CHUNK_ALIGN 64u
#define CMT_CHUNK_HEADER_SIZE 48u
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
    uint32_t flags;             /* enum cmt_file_flag in bits 0-15, a check in 16-31 (cmt_checked_flags) */
    uint32_t pid;
    uint64_t start_monotonic_ns; /* CLOCK_MONOTONIC at trace creation */
    uint64_t start_realtime_ns;  /* CLOCK_REALTIME at the same instant */
    uint64_t claimed_end;        /* offset after the last claimed chunk (cmt_checked_word) */
    uint64_t events_dropped;     /* events not recorded after recording stopped (cmt_checked_word) */
    uint32_t pointer_size;       /* sizeof(void *) of the writer */
    uint32_t header_check;       /* cmt_file_header_check(): CRC-32C of the immutable fields */
    uint64_t reserved[8];        /* zero unless named below; [4..7] are covered by header_check */
};

/* Flag bits fixed when the file is created, covered by header_check. */
#define CMT_FILE_FLAGS_IMMUTABLE CMT_FILE_FLAG_FORKED_CHILD
#define CMT_FILE_FLAGS_KNOWN 0xfu

/* reserved[0..3] in use: allocation and release calls the writer could not
 * record, per cause, each a cmt_checked_word at its offset (zero from
 * writers that did not count them), updated while the process runs. */
#define CMT_HEADER_UNRECORDED_NESTED 0 /* made while another call of the same thread was inside the
                                          profiler: a signal handler interrupting a CUDA call, or the
                                          profiler's own exit or fork work */

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
    uint32_t header_check; /* cmt_chunk_header_check(offset, header): binds the chunk to its offset */
    uint32_t reserved;  /* zero */
    /* Commit word (cmt_commit_pack), stored after each record's type byte:
     * low 32 bits the offset in the chunk where the committed records end,
     * high 32 bits the record chain's state there. Starts at
     * (CMT_CHUNK_HEADER_SIZE, header_check). */
    uint64_t commit;
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
 *   u16     check       cmt_record_check16 of the record (see "Integrity")
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
    CMT_REC_MARK = 5,    /* phase, mark or step: api and aux below */
    CMT_REC_BLOCK = 6,   /* a framework allocator's block or segment event (format 2.1): api and aux below */
    CMT_REC_IPC = 7,     /* memory shared with or mapped from another process (format 2.2): api and aux below */
    CMT_REC_TYPE_COUNT
};

/* CMT_REC_MARK records (NVTX ranges and marks, the cumemtrace.h API), on
 * the thread that made the call, with ts; no stack, size or address:
 *   api MARK_PUSH         aux0 name string id, aux1 domain name string id
 *                         (0: the default domain). Opens a range on the
 *                         thread's stack (nvtxRangePush*, nvtxDomainRangePushEx,
 *                         cumemtrace_phase_push).
 *   api MARK_POP          aux1 domain string id. Closes the innermost open
 *                         range of that domain on the thread's stack.
 *   api MARK_INSTANT      aux0 name string id, aux1 domain string id.
 *   api MARK_RANGE_START  aux0 name, aux1 domain, aux2 range id: a
 *                         process-wide range (nvtxRangeStart*), not nested
 *                         per thread; any thread may end it.
 *   api MARK_RANGE_END    aux1 domain, aux2 the range id its start gave.
 *   api MARK_STEP         aux2 step number (cumemtrace_step): step n starts
 *                         here, process-wide, and the previous one ends.
 * A name id of 0 is an unnamed range. Ids are unique per process. */
/* CMT_REC_BLOCK records (format 2.1): what a framework's caching allocator
 * (PyTorch's CUDACachingAllocator) reports through its own trace callbacks,
 * recorded beside the driver calls it makes (docs/trace-format.md, "Block
 * layer"). On the thread of the allocator call, ts when the allocator
 * reported it; device = the allocator's device; stream = the block's stream.
 *   api TORCH_ALLOC           addr block address, size bytes requested by
 *                             the tensor (the allocator rounds it up inside
 *                             its segment), stack the tensor's.
 *   api TORCH_FREE_REQUESTED  addr, size requested: the tensor let go (the
 *                             allocator's "allocated" drops here).
 *   api TORCH_FREE_COMPLETED  addr, size requested: the block is free for
 *                             reuse (later than requested when the block was
 *                             used on other streams).
 *   api TORCH_SEGMENT_ALLOC   addr, size of a segment reserved (cudaMalloc).
 *   api TORCH_SEGMENT_FREE    addr, size of a segment released (cudaFree).
 *   api TORCH_SEGMENT_MAP     addr, size mapped into an expandable segment.
 *   api TORCH_SEGMENT_UNMAP   addr, size unmapped from one.
 *   api TORCH_OOM             size requested, aux2 the device's free bytes
 *                             as CUDA reported them; addr 0.
 * aux0 and aux1 are the block's memory pool id (PyTorch's MempoolId_t, 0/0
 * for the default pool). Kind CMT_KIND_TORCH_BLOCK for the first three and
 * OOM, CMT_KIND_TORCH_SEGMENT for the segment events. */
/* CMT_REC_IPC records (format 2.2): memory one process shares with another
 * (CUDA IPC, VMM shareable handles), on the calling thread, device = the
 * calling thread's current device, result = the call's, stack = the
 * caller's (the close's only with CUMEMTRACE_FREE_STACKS). The handle's
 * fingerprint (cmt_ipc_fingerprint of its bytes, never 0; 0 = none) is what
 * ties an exporter's record to an importer's in another trace.
 *   api CUDA_IPC_GET_MEM_HANDLE, CU_IPC_GET_MEM_HANDLE (exporter; kind
 *       DEVICE): addr the pointer exported, aux0 the fingerprint of the
 *       64-byte handle; ts after the call.
 *   api CUDA_IPC_OPEN_MEM_HANDLE, CU_IPC_OPEN_MEM_HANDLE (importer; kind
 *       IPC_MAPPING): addr the mapped pointer (0 when it failed), size the
 *       mapping's bytes (cuMemGetAddressRange; 0 unknown), aux0 the
 *       fingerprint, aux1 the flags; ts after the call.
 *   api CUDA_IPC_CLOSE_MEM_HANDLE, CU_IPC_CLOSE_MEM_HANDLE (kind
 *       IPC_MAPPING): addr the pointer; ts before the call.
 *   api CU_MEM_EXPORT_TO_SHAREABLE_HANDLE (kind VMM_PHYSICAL): addr the
 *       physical handle exported, aux0 the fingerprint of a fabric handle
 *       (0 for a file descriptor or Win32 handle: a number of one process
 *       only), aux1 the handle type, aux2 the descriptor's value for
 *       CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR.
 *   api CU_MEM_IMPORT_FROM_SHAREABLE_HANDLE (kind VMM_IMPORTED): addr the
 *       physical handle the import made (0 when it failed), aux0 the
 *       fingerprint as for an export, aux1 the handle type, aux2 the
 *       descriptor's value. Its mappings (cuMemMap) and release
 *       (cuMemRelease) are the ordinary records: an imported handle is no
 *       memory of this process.
 * Format 2.3, stream-ordered pools shared between processes:
 *   api CU_MEM_POOL_EXPORT_TO_SHAREABLE_HANDLE,
 *       CUDA_MEM_POOL_EXPORT_TO_SHAREABLE_HANDLE (kind ASYNC): addr
 *       the pool exported, aux0 the fingerprint of a fabric handle (0 for
 *       a file descriptor), aux1 the handle type, aux2 the descriptor's
 *       value for CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR; ts after.
 *   api CU_MEM_POOL_IMPORT_FROM_SHAREABLE_HANDLE,
 *       CUDA_MEM_POOL_IMPORT_FROM_SHAREABLE_HANDLE (kind ASYNC): addr
 *       the pool the import made (0 when it failed), aux as for an export.
 *   api CU_MEM_POOL_EXPORT_POINTER, CUDA_MEM_POOL_EXPORT_POINTER (exporter;
 *       kind ASYNC): addr the pointer exported, aux0 the fingerprint
 *       of the 64-byte CUmemPoolPtrExportData; ts after.
 *   api CU_MEM_POOL_IMPORT_POINTER, CUDA_MEM_POOL_IMPORT_POINTER (importer;
 *       kind IPC_MAPPING): addr the pointer imported (0 when it failed),
 *       size its bytes (cuMemGetAddressRange; 0 unknown), aux0 the
 *       fingerprint of the export data, aux1 the (imported) pool; ts after.
 *       Its release is the ordinary FREE record of the importing process
 *       (cuMemFree, cuMemFreeAsync, cudaFree, cudaFreeAsync of it): the
 *       replay closes the mapping there. */
#define CMT_IPC_AUX_POOL 1 /* pointer import: the pool imported from */
#define CMT_IPC_AUX_FINGERPRINT 0
#define CMT_IPC_AUX_FLAGS 1      /* open: the flags */
#define CMT_IPC_AUX_HANDLE_TYPE 1 /* export, import: CUmemAllocationHandleType */
#define CMT_IPC_AUX_FD 2          /* export, import: the descriptor (POSIX fd handles) */

#define CMT_BLOCK_AUX_POOL0 0
#define CMT_BLOCK_AUX_POOL1 1
#define CMT_BLOCK_AUX_DEVICE_FREE 2

#define CMT_MARK_AUX_NAME 0
#define CMT_MARK_AUX_DOMAIN 1
#define CMT_MARK_AUX_ID 2

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
    CMT_KIND_COUNT,            /* the driver's memory classes end here: 8 */
    /* The block layer's classes (format 2.1): memory inside the driver's,
     * as a framework's allocator hands it out; only in BLOCK records. */
    CMT_KIND_TORCH_BLOCK = 8,  /* a caching allocator's block inside a segment */
    CMT_KIND_TORCH_SEGMENT = 9, /* a caching allocator's segment, as it reports it */
    /* Memory of another process (format 2.2), in IPC records only. */
    CMT_KIND_IPC_MAPPING = 10,  /* a mapping of another process's allocation (cudaIpcOpenMemHandle) */
    CMT_KIND_VMM_IMPORTED = 11, /* a physical handle imported from another process (cuMemImportFromShareableHandle) */
    CMT_KIND_ALL_COUNT
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
    X(CU_MEM_POOL_TRIM, 47, "cuMemPoolTrimTo", CMT_KIND_ASYNC)                               \
    X(MARK_RANGE_START, 48, "range:start", CMT_KIND_DEVICE)                                  \
    X(MARK_RANGE_END, 49, "range:end", CMT_KIND_DEVICE)                                      \
    X(MARK_STEP, 50, "step", CMT_KIND_DEVICE)                                                \
    X(TORCH_ALLOC, 51, "torch:alloc", CMT_KIND_TORCH_BLOCK)                                  \
    X(TORCH_FREE_REQUESTED, 52, "torch:free_requested", CMT_KIND_TORCH_BLOCK)                \
    X(TORCH_FREE_COMPLETED, 53, "torch:free_completed", CMT_KIND_TORCH_BLOCK)                \
    X(TORCH_SEGMENT_ALLOC, 54, "torch:segment_alloc", CMT_KIND_TORCH_SEGMENT)                \
    X(TORCH_SEGMENT_FREE, 55, "torch:segment_free", CMT_KIND_TORCH_SEGMENT)                  \
    X(TORCH_SEGMENT_MAP, 56, "torch:segment_map", CMT_KIND_TORCH_SEGMENT)                    \
    X(TORCH_SEGMENT_UNMAP, 57, "torch:segment_unmap", CMT_KIND_TORCH_SEGMENT)                \
    X(TORCH_OOM, 58, "torch:oom", CMT_KIND_TORCH_BLOCK)                                      \
    X(CUDA_IPC_GET_MEM_HANDLE, 64, "cudaIpcGetMemHandle", CMT_KIND_DEVICE)                   \
    X(CUDA_IPC_OPEN_MEM_HANDLE, 65, "cudaIpcOpenMemHandle", CMT_KIND_IPC_MAPPING)            \
    X(CUDA_IPC_CLOSE_MEM_HANDLE, 66, "cudaIpcCloseMemHandle", CMT_KIND_IPC_MAPPING)          \
    X(CU_IPC_GET_MEM_HANDLE, 67, "cuIpcGetMemHandle", CMT_KIND_DEVICE)                       \
    X(CU_IPC_OPEN_MEM_HANDLE, 68, "cuIpcOpenMemHandle", CMT_KIND_IPC_MAPPING)                \
    X(CU_IPC_CLOSE_MEM_HANDLE, 69, "cuIpcCloseMemHandle", CMT_KIND_IPC_MAPPING)              \
    X(CU_MEM_EXPORT_TO_SHAREABLE_HANDLE, 70, "cuMemExportToShareableHandle", CMT_KIND_VMM_PHYSICAL) \
    X(CU_MEM_IMPORT_FROM_SHAREABLE_HANDLE, 71, "cuMemImportFromShareableHandle", CMT_KIND_VMM_IMPORTED) \
    X(CU_MEM_POOL_EXPORT_TO_SHAREABLE_HANDLE, 72, "cuMemPoolExportToShareableHandle", CMT_KIND_ASYNC) \
    X(CU_MEM_POOL_IMPORT_FROM_SHAREABLE_HANDLE, 73, "cuMemPoolImportFromShareableHandle", CMT_KIND_ASYNC) \
    X(CU_MEM_POOL_EXPORT_POINTER, 74, "cuMemPoolExportPointer", CMT_KIND_ASYNC)        \
    X(CU_MEM_POOL_IMPORT_POINTER, 75, "cuMemPoolImportPointer", CMT_KIND_IPC_MAPPING)       \
    X(CUDA_MEM_POOL_EXPORT_TO_SHAREABLE_HANDLE, 76, "cudaMemPoolExportToShareableHandle", CMT_KIND_ASYNC) \
    X(CUDA_MEM_POOL_IMPORT_FROM_SHAREABLE_HANDLE, 77, "cudaMemPoolImportFromShareableHandle", CMT_KIND_ASYNC) \
    X(CUDA_MEM_POOL_EXPORT_POINTER, 78, "cudaMemPoolExportPointer", CMT_KIND_ASYNC)    \
    X(CUDA_MEM_POOL_IMPORT_POINTER, 79, "cudaMemPoolImportPointer", CMT_KIND_IPC_MAPPING)
/* Values 59..63 are reserved for the block layer; 64..71 are IPC records'
 * (format 2.2), 72..79 the pools' IPC records (format 2.3). */
#define CMT_API_IPC_FIRST 64
#define CMT_API_IPC_LAST 79

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
 *   u16     check       cmt_record_check16 of the record (see "Integrity")
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
    /* payload: varint ordinal, varint name string id (0 unknown), varint
     *          total bytes (0 unknown), bytes uuid (16 bytes, cuDeviceGetUuid;
     *          0 bytes unknown). The shim writes one per device at its
     *          first successful allocation (since 2.2). */
    CMT_META_DEVICE = 8,
    /* payload: varint ts, varint reason (enum cmt_end_reason),
     *          varint events_dropped, varint flags (the header's final
     *          flags), varint claimed_end (the header's final value),
     *          varint chunks (chunks claimed, padding excluded),
     *          varint exit status + 1 (0 unknown; a trailing field a
     *          reader may find absent: traces of older shims). The last
     *          record of a trace whose process exited; the header's
     *          clean-exit flag is set just before it is written. */
    CMT_META_END = 9,
    /* payload: varint ts, varint source (enum cmt_note_source),
     *          varint text string id. Something the writer could not do and
     *          wants the report to say once (an interpreter version it does
     *          not know, NVTX ranges it cannot record...). */
    CMT_META_NOTE = 10,
    /* payload: varint ts, varint source (enum cmt_job_source: whose
     *          variables gave the rank), svarint rank, svarint local rank,
     *          svarint world size, svarint local world size (each -1
     *          unknown), varint job id string id (0: none),
     *          varint nvars, nvars x (varint name string id, varint value
     *          string id): the launcher and device variables the process
     *          found set (CUDA_VISIBLE_DEVICES among them), as they read.
     *          Who this process is in a job of several (torchrun, mpirun,
     *          srun); written once, after the PROCESS record. */
    CMT_META_JOB = 11,
    /* payload: varint ts, varint framework (enum cmt_framework),
     *          varint version string id (the framework's version as found,
     *          0 unknown), varint state (enum cmt_blocks_state),
     *          varint backend string id (the allocator's name, 0 unknown).
     *          Written when the shim decides whether the block layer of
     *          this allocator is recorded (format 2.1); a process has at
     *          most one per framework. BLOCK records exist only after an
     *          ALLOCATOR record with state ON. */
    CMT_META_ALLOCATOR = 12,
    CMT_META_TYPE_COUNT
};

/* Whose environment named a process's rank in a JOB record. Values are part
 * of the format: append only. */
enum cmt_job_source {
    CMT_JOB_NONE = 0,    /* no launcher variable: a process of its own */
    CMT_JOB_TORCH = 1,   /* torchrun / torch.distributed: RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE */
    CMT_JOB_OPENMPI = 2, /* Open MPI: OMPI_COMM_WORLD_RANK, _LOCAL_RANK, _SIZE, _LOCAL_SIZE */
    CMT_JOB_PMI = 3,     /* MPICH, Intel MPI (PMI): PMI_RANK, MPI_LOCALRANKID, PMI_SIZE, MPI_LOCALNRANKS */
    CMT_JOB_SLURM = 4    /* Slurm: SLURM_PROCID, SLURM_LOCALID, SLURM_NTASKS */
};
#define CMT_JOB_MAX_VARS 32u

/* Who wrote a NOTE record. Values are part of the format: append only. */
enum cmt_note_source {
    CMT_NOTE_OTHER = 0,
    CMT_NOTE_PYTHON = 1, /* Python frame capture */
    CMT_NOTE_NVTX = 2,   /* NVTX injection */
    CMT_NOTE_BLOCKS = 3  /* the allocator block layer (format 2.1) */
};

/* Values are part of the format: append only. */
enum cmt_framework {
    CMT_FRAMEWORK_PYTORCH = 1 /* PyTorch's CUDACachingAllocator (libc10_cuda.so) */
};

enum cmt_blocks_state {
    CMT_BLOCKS_ON = 0,  /* block events recorded from here on */
    CMT_BLOCKS_OFF = 1  /* not recorded; a NOTE says why */
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
 * of at most 10 bytes each, the check. */
#define CMT_MAX_EVENT_RECORD (2u + 2u + 12u * 10u + CMT_RECORD_CHECK_SIZE)

/* ------------------------------------------------------------------------ */
/* Integrity                                                                */
/* ------------------------------------------------------------------------ */
/* Check values are CRC-32C register updates (crc32c.h), little-endian.
 *
 * File header: header_check = cmt_file_header_check(h), the CRC of the
 *   header struct with the fields that change while the process runs
 *   (flags but CMT_FILE_FLAGS_IMMUTABLE, claimed_end, events_dropped,
 *   reserved[0..3]) and header_check itself taken as zero. The bytes from
 *   the end of the struct to header_size are zero.
 * Chunk header: header_check = CRC of the chunk's file offset (u64) and its
 *   first 32 bytes (magic included), seeded with 0: a header copied or
 *   shifted elsewhere does not verify.
 * Records: each chunk's records form a chain. The state starts at the
 *   chunk's header_check; a record of type t whose bytes after the type
 *   byte, up to its check, are b advances it to
 *   cmt_record_chain(state, t, b) = CRC of b seeded with state XOR t; the
 *   record's u16 check is
 *   cmt_record_check16(new state). A record shifted, zeroed, duplicated or
 *   moved to another chunk does not verify.
 * Commit word: after a record's type byte, the writer stores
 *   cmt_commit_pack(end of the record in the chunk, new state) into its
 *   chunk header. A reader verifies every record up to that end and the
 *   chain state there (a full 32-bit check of everything committed). Past
 *   it a killed writer can leave at most one committed record (killed
 *   between its type byte and the commit word) and then one partly written
 *   record (type byte still zero), at most CMT_MAX_EVENT_RECORD (events) or
 *   CMT_MAX_META_RECORD + CMT_META_RECORD_OVERHEAD + 2 (metadata) bytes;
 *   everything after that up to the chunk's end is zero.
 * File: every chunk below the header's claimed_end has a nonzero magic; past
 *   it a killed writer can leave one padding chunk and one claimed chunk;
 *   after the last chunk the file is zero. The END record repeats the final
 *   flags, claimed_end and number of chunks. */
#define CMT_RECORD_CHECK_SIZE 2u
/* Room the metadata stream keeps in its chunk for the END record, which is
 * written when no new chunk can be claimed. */
#define CMT_META_END_RESERVE 96u

static inline uint16_t cmt_record_check16(uint32_t state)
{
    return (uint16_t)(state ^ (state >> 16));
}

static inline uint32_t cmt_file_header_check(const struct cmt_file_header *h)
{
    struct cmt_file_header c;
    memcpy(&c, h, sizeof c);
    c.flags &= CMT_FILE_FLAGS_IMMUTABLE;
    c.claimed_end = 0;
    c.events_dropped = 0;
    c.header_check = 0;
    c.reserved[0] = c.reserved[1] = c.reserved[2] = c.reserved[3] = 0;
    return cmt_crc32c_update(0, &c, sizeof c);
}

/* The header's words that change while the process runs carry their own
 * check, so that each is stored whole with one atomic write and a damaged
 * one is told from one the writer stored (a process may be killed between
 * any two updates): flags keeps its bits in the low 16 bits of its u32,
 * claimed_end and events_dropped their value in the low 48 bits of their
 * u64; the high 16 bits are cmt_record_check16 of the CRC of the value (u64)
 * seeded with the field's offset in the header. */
#define CMT_CHECKED_VALUE_MASK ((1ull << 48) - 1)
#define CMT_CHECKED_FLAGS_MASK 0xffffu

static inline uint16_t cmt_checked_bits(uint64_t value, uint32_t field_offset)
{
    return cmt_record_check16(cmt_crc32c_update(field_offset, &value, sizeof value));
}

static inline uint64_t cmt_checked_word(uint64_t value, uint32_t field_offset)
{
    value &= CMT_CHECKED_VALUE_MASK;
    return value | (uint64_t)cmt_checked_bits(value, field_offset) << 48;
}

static inline uint32_t cmt_checked_flags(uint32_t flags)
{
    flags &= CMT_CHECKED_FLAGS_MASK;
    return flags | (uint32_t)cmt_checked_bits(flags, (uint32_t)offsetof(struct cmt_file_header, flags)) << 16;
}

#define CMT_HEADER_CLAIMED_END_OFFSET ((uint32_t)offsetof(struct cmt_file_header, claimed_end))
#define CMT_HEADER_EVENTS_DROPPED_OFFSET ((uint32_t)offsetof(struct cmt_file_header, events_dropped))
#define CMT_HEADER_RESERVED_OFFSET(i) ((uint32_t)(offsetof(struct cmt_file_header, reserved) + 8u * (i)))

static inline uint32_t cmt_chunk_header_check(uint64_t offset, const struct cmt_chunk_header *h)
{
    uint8_t b[8 + 32];
    memcpy(b, &offset, 8);
    memcpy(b + 8, h, 32);
    return cmt_crc32c_update(0, b, sizeof b);
}

static inline uint32_t cmt_record_chain(uint32_t state, uint8_t type, const uint8_t *after_type, size_t len)
{
    return cmt_crc32c_update(state ^ type, after_type, len);
}

static inline uint64_t cmt_commit_pack(uint32_t end, uint32_t state)
{
    return (uint64_t)end | (uint64_t)state << 32;
}

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
    static const char *const names[CMT_KIND_ALL_COUNT] = {
        "device", "managed", "pinned-host", "async-pool", "vmm-physical", "vmm-reserve", "vmm-map", "array",
        "torch-block", "torch-segment", "ipc-mapping", "vmm-imported"};
    return kind < CMT_KIND_ALL_COUNT ? names[kind] : "unknown";
}

/* The fingerprint of an IPC handle's bytes (cudaIpcMemHandle_t,
 * CUipcMemHandle, CUmemFabricHandle): 64-bit FNV-1a, 1 where that is 0 (0
 * means none), the same in every process that holds the same handle. */
static inline uint64_t cmt_ipc_fingerprint(const void *bytes, size_t n)
{
    const unsigned char *b = (const unsigned char *)bytes;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h ? h : 1;
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
