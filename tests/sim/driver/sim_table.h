/* SPDX-License-Identifier: MIT */
#ifndef SIMCUDA_TABLE_H
#define SIMCUDA_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Everything the simulated driver hands out and must recognise later, keyed by
 * the value the program holds: memory by its address, streams, events, pools
 * and arrays by their handle pointer, VMM allocations by their handle value.
 * The key spaces cannot collide: memory lives in the simulator's reserved
 * arenas, handle structs on the malloc heap (never inside those arenas) and
 * VMM handle values are non-canonical addresses. A lookup therefore both
 * validates a handle and finds its bookkeeping. */

enum sim_object_kind {
    SIM_OBJ_EMPTY = 0,          /* an unused slot */
    SIM_OBJ_DEVICE_MEMORY,      /* cuMemAlloc, cuMemAllocPitch */
    SIM_OBJ_POOL_MEMORY,        /* cuMemAllocAsync, cuMemAllocFromPoolAsync; data: the pool segment */
    SIM_OBJ_MANAGED_MEMORY,     /* cuMemAllocManaged */
    SIM_OBJ_HOST_MEMORY,        /* cuMemAllocHost, cuMemHostAlloc */
    SIM_OBJ_ARRAY,              /* data: struct CUarray_st */
    SIM_OBJ_STREAM,             /* data: struct CUstream_st */
    SIM_OBJ_EVENT,              /* data: struct CUevent_st */
    SIM_OBJ_POOL,               /* data: struct CUmemPoolHandle_st */
    SIM_OBJ_VMM_ALLOCATION,     /* cuMemCreate; data: struct sim_vmm_allocation */
    SIM_OBJ_MODULE,             /* data: struct CUmod_st */
};

struct sim_object {
    uint64_t key;
    uint64_t size;              /* bytes charged, for memory */
    void *data;
    uint16_t kind;              /* enum sim_object_kind */
    int16_t device;             /* owning device, or -1 */
};

/* Open addressing with linear probing and backward-shift deletion: no
 * tombstones, so lookups stay short however many objects come and go. */
struct sim_table {
    struct sim_object *slots;
    size_t capacity;            /* a power of two */
    size_t count;
};

void sim_table_destroy(struct sim_table *table);

/* The key must not be present. Returns false when the table cannot grow. */
bool sim_table_insert(struct sim_table *table, const struct sim_object *object);

/* The object with this key and kind, or NULL. The pointer stays valid only
 * until the next insert or remove. */
struct sim_object *sim_table_find(const struct sim_table *table, uint64_t key, enum sim_object_kind kind);

/* Removes an object found with sim_table_find. */
void sim_table_remove(struct sim_table *table, struct sim_object *object);

/* Copies the keys of every object of `kind` owned by `device` (any device when
 * device < 0) into a malloc'd array the caller frees; NULL with *count = 0
 * when there are none or memory is short. Lets callers remove while walking. */
uint64_t *sim_table_collect_keys(const struct sim_table *table, enum sim_object_kind kind, int device, size_t *count);

#endif
