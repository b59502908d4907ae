/* SPDX-License-Identifier: MIT */
#ifndef SIMCUDA_VMM_H
#define SIMCUDA_VMM_H

#include <stdbool.h>
#include <stdint.h>

/* True when every byte of [addr, addr + length) is mapped with cuMemMap.
 * Caller holds the lock. */
bool sim_vmm_is_mapped(uint64_t addr, uint64_t length);

#endif
