/* SPDX-License-Identifier: MIT */
#ifndef SIMCUDA_WORK_H
#define SIMCUDA_WORK_H

/* Steps the simulator's own bookkeeping took: holes examined or moved by
 * the address allocator (sim_range.c), slots probed or shifted in the object
 * table (sim_table.c), pool segments tried (sim_pool.c). A test counts them
 * per call (simcuda_work_steps, simcuda.h) to show that a hot path stays
 * flat, which a time bound cannot show on a loaded machine. */
extern unsigned long long sim_work_steps;

static inline void sim_work(unsigned long long n)
{
    __atomic_fetch_add(&sim_work_steps, n, __ATOMIC_RELAXED);
}

#endif
