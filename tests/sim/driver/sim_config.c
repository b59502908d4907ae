/* SPDX-License-Identifier: MIT */
#include "sim_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "size_parse.h"

#define DEFAULT_CAPACITY (16ull << 30)
#define DEFAULT_POOL_GRANULARITY (2ull << 20)
#define MIN_CAPACITY (1ull << 20)
/* Device d's memory is reserved at a fixed base d TiB apart (see sim_state.h). */
#define MAX_CAPACITY (1ull << 40)

static bool complain(const char *name, const char *value, const char *why)
{
    fprintf(stderr, "simcuda: %s=\"%s\": %s\n", name, value, why);
    return false;
}

/* "16GiB" or a per-device list "16GiB,8GiB": devices past the end of the
 * list repeat its last entry. */
static bool read_size_list(const char *name, uint64_t out[SIM_MAX_DEVICES], uint64_t fallback)
{
    const char *value = getenv(name);
    for (int d = 0; d < SIM_MAX_DEVICES; d++)
        out[d] = fallback;
    if (!value || !*value)
        return true;
    char item[64];
    const char *p = value;
    int d = 0;
    while (d < SIM_MAX_DEVICES) {
        size_t len = strcspn(p, ",");
        if (len == 0 || len >= sizeof item)
            return complain(name, value, "expected a size such as 64MiB, or a comma-separated list of sizes");
        memcpy(item, p, len);
        item[len] = '\0';
        if (cmt_parse_size(item, &out[d]) != 0)
            return complain(name, value, "expected a size such as 64MiB, or a comma-separated list of sizes");
        d++;
        if (p[len] == '\0')
            break;
        p += len + 1;
    }
    for (int rest = d; rest < SIM_MAX_DEVICES; rest++)
        out[rest] = out[d - 1];
    return true;
}

static bool read_size(const char *name, uint64_t *out, uint64_t fallback)
{
    const char *value = getenv(name);
    *out = fallback;
    if (!value || !*value)
        return true;
    if (cmt_parse_size(value, out) != 0)
        return complain(name, value, "expected a size such as 2MiB");
    return true;
}

bool sim_config_read(struct sim_config *config)
{
    memset(config, 0, sizeof *config);
    config->device_count = 1;
    const char *devices = getenv("SIMCUDA_DEVICES");
    if (devices && *devices) {
        char *end;
        long count = strtol(devices, &end, 10);
        if (*end != '\0' || count < 0 || count > SIM_MAX_DEVICES)
            return complain("SIMCUDA_DEVICES", devices, "expected a device count from 0 to 8");
        config->device_count = (int)count;
    }
    if (!read_size_list("SIMCUDA_CAPACITY", config->capacity, DEFAULT_CAPACITY))
        return false;
    for (int d = 0; d < SIM_MAX_DEVICES; d++) {
        if (config->capacity[d] < MIN_CAPACITY || config->capacity[d] > MAX_CAPACITY)
            return complain("SIMCUDA_CAPACITY", getenv("SIMCUDA_CAPACITY"), "each capacity must be between 1 MiB and 1 TiB");
        /* Allocations are 512-byte granular; a ragged tail could never be used. */
        config->capacity[d] &= ~511ull;
    }
    if (!read_size_list("SIMCUDA_EXTERNAL_USED", config->external_used, 0))
        return false;
    if (!read_size("SIMCUDA_CONTEXT_BYTES", &config->context_bytes, 0))
        return false;
    if (!read_size("SIMCUDA_POOL_GRANULARITY", &config->pool_granularity, DEFAULT_POOL_GRANULARITY))
        return false;
    if (config->pool_granularity == 0 || config->pool_granularity % 512 != 0)
        return complain("SIMCUDA_POOL_GRANULARITY", getenv("SIMCUDA_POOL_GRANULARITY"), "must be a nonzero multiple of 512 bytes");
    const char *trace = getenv("SIMCUDA_TRACE_PROC_ADDRESS");
    config->trace_proc_address = trace && *trace && strcmp(trace, "0") != 0;
    return true;
}
