/* SPDX-License-Identifier: MIT */
#ifndef SIMCUDA_POOL_H
#define SIMCUDA_POOL_H

#include "sim_state.h"

/* Stream-ordered memory pools. Callers hold the lock. */

/* Creates device `device`'s default pool (at setup). */
CUresult sim_pool_create_default(int device);

/* What every synchronisation does: each pool gives wholly free segments back
 * to its device while it reserves more than its release threshold. */
void sim_pools_release_above_threshold(void);

/* Returns a pool allocation (a SIM_OBJ_POOL_MEMORY object) to its pool and
 * removes it from the registry. */
void sim_pool_free(struct sim_object *object);

#endif
