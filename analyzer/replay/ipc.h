/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_IPC_H
#define CUMEMTRACE_ANALYZER_IPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cumemtrace/format.h"

/* Memory shared between processes (IPC records, format 2.2): what this
 * process exported (which allocation, under which handle fingerprint) and
 * what it mapped from another process (cudaIpcOpenMemHandle, or a cuMemMap
 * of a physical handle imported with cuMemImportFromShareableHandle). None
 * of it counts in the process's own accounts: a mapping of another
 * process's memory is that process's memory. The replay keeps it here,
 * beside the accounts (docs/report.md, "Memory mapped from another
 * process"). Memory follows the exports and imports a trace holds. */

struct cmt_ipc_export {
    uint64_t ts;          /* absolute */
    uint64_t fingerprint; /* 0: none (a failed call, a file descriptor) */
    uint64_t addr;        /* the pointer, or the physical handle, exported */
    uint64_t handle_type; /* cuMemExportToShareableHandle's; 0 for CUDA IPC */
    uint64_t alloc_size;  /* the allocation holding addr when the export was made (0: not found) */
    uint64_t alloc_offset; /* addr's offset into it (CUDA IPC maps the whole allocation) */
    uint32_t alloc_stack; /* its stack (0: none, or not found) */
    uint32_t stack;       /* the export call's */
    int32_t device, result;
    uint8_t api;
    bool alloc_found;
};

struct cmt_ipc_import {
    uint64_t open_ts, close_ts; /* absolute; close_ts 0: never closed */
    uint64_t addr;              /* where the mapping lies in this process */
    uint64_t size;              /* its bytes (0: the trace does not say) */
    uint64_t fingerprint;       /* of the handle opened (0: none known) */
    uint32_t stack;             /* the open's (or the cuMemMap's) */
    uint32_t opens;             /* opens of the same handle at the same address, not yet closed */
    int32_t device;
    uint8_t api;                /* CUDA_IPC_OPEN_MEM_HANDLE, CU_IPC_OPEN_MEM_HANDLE, a pool's IMPORT_POINTER, or CU_MEM_MAP (VMM) */
    bool closed;
};

/* u64 -> index + 1, open addressing with backward-shift deletion and a
 * random multiplier (hash_seed.h). */
struct cmt_ipc_map {
    uint64_t *keys;
    uint32_t *vals; /* 0: empty */
    size_t cap, count;
    uint64_t mult;
    unsigned shift;
};

struct cmt_ipc_state {
    struct cmt_ipc_export *exports;
    size_t n_exports, exports_cap;
    struct cmt_ipc_import *imports;
    size_t n_imports, imports_cap;
    struct cmt_ipc_map open;    /* open mappings by address -> imports */
    struct cmt_ipc_map handles; /* imported VMM handles not yet released -> handle_fp */
    uint64_t *handle_fp;        /* fingerprint of each imported handle, by handles' value - 1 */
    uint32_t *handle_refs;      /* its imports not yet released (the driver counts a handle imported twice), likewise */
    size_t n_handle_fp, handle_fp_cap;
    uint64_t vmm_imported, vmm_released; /* cuMemImportFromShareableHandle handles, and those released */
    uint64_t failed_exports, failed_opens, failed_closes, unmatched_closes, failed_imports;
    uint64_t live_bytes, live_count, peak_bytes, peak_ts;
    uint64_t records; /* IPC records seen */
    uint64_t open_changes; /* mappings opened or closed (not an open again): the analyses' sign to look again */
    uint64_t by_api[CMT_API_IPC_LAST - CMT_API_IPC_FIRST + 1]; /* IPC records seen, by api */
};

struct cmt_replay;
struct cmt_replay_record;

void cmt_ipc_free(struct cmt_ipc_state *s);
/* An IPC record, in its place among the events. Returns 0, or -1 when out of memory. */
int cmt_ipc_record(struct cmt_replay *r, const struct cmt_replay_record *rec);
/* Handle was imported and not yet released: it is no memory of this process. */
bool cmt_ipc_is_imported_handle(const struct cmt_ipc_state *s, uint64_t handle);
/* cuMemRelease of an imported handle: true when it was one. */
bool cmt_ipc_release_handle(struct cmt_ipc_state *s, uint64_t handle);
/* A successful cuMemMap of an imported handle at addr. Returns 0 or -1 (memory). */
int cmt_ipc_mapped(struct cmt_ipc_state *s, uint64_t handle, uint64_t addr, uint64_t size, uint64_t ts, uint32_t stack,
                   int32_t device);
/* A successful free (cudaFree, cudaFreeAsync, cuMemFree, cuMemFreeAsync)
 * of addr that freed nothing of this process: true when addr was a pointer
 * imported from another process's pool (cuMemPoolImportPointer), now
 * closed. */
bool cmt_ipc_freed(struct cmt_ipc_state *s, uint64_t addr, uint64_t ts);
/* A mapping at addr went (cuMemUnmap): closes it when it was an import. */
void cmt_ipc_unmapped(struct cmt_ipc_state *s, uint64_t addr, uint64_t ts);

#endif
