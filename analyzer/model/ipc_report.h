/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_IPC_REPORT_H
#define CUMEMTRACE_ANALYZER_IPC_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Memory shared with other processes, as the report shows it (the replay's
 * IPC state, replay/ipc.h): what this process mapped from another one, by
 * the call site that opened it, and which of its own allocations it
 * exported. Mapped memory is the other process's: never in this process's
 * peaks or leaks of its own memory; a mapping never closed is a leak of a
 * mapping (docs/report.md, "Memory mapped from another process"). */

struct cmt_ipc_site {
    uint64_t stack;       /* canonical stack of the open (or the cuMemMap of an imported handle) */
    uint8_t api;          /* of the first import here */
    int32_t device;
    uint64_t bytes, count;           /* mappings opened here in the run */
    uint64_t open_bytes, open_count; /* of those, never closed */
    uint64_t unsized_count;          /* of those, mappings whose size CUDA did not give (bytes count none) */
    uint64_t fingerprint;            /* the first mapping's handle */
    uint64_t first_ts;               /* absolute */
};

struct cmt_ipc_export_row {
    uint64_t alloc_stack;  /* canonical stack of the allocation exported (0: not found) */
    uint64_t stack;        /* canonical stack of the export call */
    uint64_t bytes;        /* the allocation's (0: not found) */
    uint64_t offset;       /* the pointer's offset into it (0: its start) */
    uint64_t fingerprint;  /* 0: none (a file descriptor) */
    uint64_t ts;           /* absolute */
    uint64_t handle_type;
    int32_t device;
    uint8_t api;
    bool found;
};

/* One import as the job view matches it (imports of one site keep their
 * own fingerprints). */
struct cmt_ipc_import_row {
    uint64_t stack; /* canonical */
    uint64_t bytes;
    uint64_t fingerprint;
    uint64_t open_ts;
    bool closed;
};

struct cmt_ipc_report {
    bool any; /* the trace holds IPC records */
    uint64_t peak_bytes, peak_ts;        /* mapped from other processes at once; ts absolute */
    uint64_t opened_bytes, opened_count; /* mappings opened in the run */
    uint64_t open_bytes, open_count;     /* never closed: leaks of mappings */
    /* Mappings of unknown size: cuMemGetAddressRange does not answer for a
     * pool pointer imported with cuMemPoolImportPointer (H200, driver 580);
     * the exporting process's trace has the size. */
    uint64_t unsized_count;
    struct cmt_ipc_site *sites;          /* largest first */
    size_t n_sites;
    struct cmt_ipc_import_row *imports;  /* in the order opened */
    size_t n_imports;
    struct cmt_ipc_export_row *exports;  /* successful exports, in order */
    size_t n_exports;
    uint64_t *exported_stacks;           /* canonical allocation stacks exported, sorted, unique */
    size_t n_exported_stacks;
    uint64_t failed_exports, failed_opens, failed_closes, unmatched_closes, failed_imports;
    uint64_t vmm_imported, vmm_released; /* cuMemImportFromShareableHandle handles, those released */
};

/* True when an allocation of this (canonical) call site was exported to
 * another process: its rows are marked. */
bool cmt_ipc_exported(const struct cmt_ipc_report *ipc, uint64_t stack);

#endif
