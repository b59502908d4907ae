/* SPDX-License-Identifier: MIT */
#ifndef SIMCUDA_RELEASE_H
#define SIMCUDA_RELEASE_H

#include "sim_state.h"

/* Destroying a context destroys what was created in it (cuCtxDestroy's
 * documented contract): each of these frees one registered object and removes
 * it from the registry. The caller holds the lock. Pool allocations and VMM
 * memory belong to no context and survive. */
void sim_memory_release(struct sim_object *object);
void sim_array_release(struct sim_object *object);
void sim_stream_release(struct sim_object *object);
void sim_event_release(struct sim_object *object);
void sim_module_release(struct sim_object *object);

#endif
