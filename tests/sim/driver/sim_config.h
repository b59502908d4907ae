/* SPDX-License-Identifier: MIT */
#ifndef SIMCUDA_CONFIG_H
#define SIMCUDA_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#define SIM_MAX_DEVICES 8

/* The simulated machine, as the SIMCUDA_* environment variables describe it
 * (README.md lists them). Read once, when the driver state is first needed. */
struct sim_config {
    int device_count;
    uint64_t capacity[SIM_MAX_DEVICES];
    uint64_t external_used[SIM_MAX_DEVICES];
    uint64_t context_bytes;
    uint64_t pool_granularity;
    bool trace_proc_address;
};

/* Fills *config from the environment. On a malformed value it names the
 * variable on stderr and returns false: a test double that silently ignored a
 * typo would make tests pass for the wrong reason. */
bool sim_config_read(struct sim_config *config);

#endif
