/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_SHAREABLE_HANDLE_H
#define CUMEMTRACE_PRELOAD_SHAREABLE_HANDLE_H

/* A shareable handle as an IPC record keeps it (docs/trace-format.md,
 * "IPC"), for the driver's hooks (cuMemExportToShareableHandle,
 * cuMemPool*ShareableHandle) and the runtime's (cudaMemPool*ShareableHandle)
 * alike: the runtime's handle types are the driver's, value for value
 * (hooks_runtime_pool_ipc.c checks). */

#include <cuda.h>
#include <stdint.h>
#include <string.h>

#include "cumemtrace/format.h"

/* The fingerprint of the handle's bytes sh: a fabric handle's 64 bytes name
 * the memory in every process; a file descriptor or a Win32 handle is a
 * number of this process only (0: not matched across traces). Read only
 * once the driver has accepted the call: a failed one may have been given
 * a pointer to nothing. */
static inline uint64_t cmt_shareable_fingerprint(const void *sh, unsigned type)
{
    if (!sh || type != CU_MEM_HANDLE_TYPE_FABRIC)
        return 0;
    return cmt_ipc_fingerprint(sh, sizeof(CUmemFabricHandle));
}

/* The file descriptor an export wrote into the handle's bytes sh; 0 for
 * another type. */
static inline uint64_t cmt_shareable_exported_fd(const void *sh, unsigned type)
{
    if (!sh || type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return 0;
    int fd;
    memcpy(&fd, sh, sizeof fd);
    return (uint64_t)(uint32_t)fd;
}

/* The file descriptor an import was given: for a POSIX file descriptor the
 * handle argument is the descriptor itself, cast to a pointer; 0 for
 * another type. */
static inline uint64_t cmt_shareable_imported_fd(const void *sh, unsigned type)
{
    return type == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR ? (uint64_t)(uint32_t)(uintptr_t)sh : 0;
}

#endif
