/* SPDX-License-Identifier: MIT */
#include "pool_registry.h"

#include <pthread.h>

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cmt_known_pool pools[CMT_POOL_REGISTRY_MAX];
static size_t n_pools;

bool cmt_pool_registry_add(uint64_t handle, int32_t device)
{
    bool ok = true;
    pthread_mutex_lock(&registry_lock);
    size_t i = 0;
    while (i < n_pools && pools[i].handle != handle)
        i++;
    if (i < n_pools)
        pools[i].device = device; /* a handle the driver reused after a destroy we missed */
    else if (n_pools < CMT_POOL_REGISTRY_MAX)
        pools[n_pools++] = (struct cmt_known_pool){handle, device};
    else
        ok = false;
    pthread_mutex_unlock(&registry_lock);
    return ok;
}

void cmt_pool_registry_remove(uint64_t handle)
{
    pthread_mutex_lock(&registry_lock);
    for (size_t i = 0; i < n_pools; i++)
        if (pools[i].handle == handle) {
            pools[i] = pools[--n_pools];
            break;
        }
    pthread_mutex_unlock(&registry_lock);
}

int32_t cmt_pool_registry_device(uint64_t handle)
{
    int32_t device = -1;
    pthread_mutex_lock(&registry_lock);
    for (size_t i = 0; i < n_pools; i++)
        if (pools[i].handle == handle)
            device = pools[i].device;
    pthread_mutex_unlock(&registry_lock);
    return device;
}

size_t cmt_pool_registry_list(struct cmt_known_pool *out, size_t max)
{
    pthread_mutex_lock(&registry_lock);
    size_t n = n_pools < max ? n_pools : max;
    for (size_t i = 0; i < n; i++)
        out[i] = pools[i];
    pthread_mutex_unlock(&registry_lock);
    return n;
}

void cmt_pool_registry_fork_prepare(void)
{
    pthread_mutex_lock(&registry_lock);
}

void cmt_pool_registry_fork_parent(void)
{
    pthread_mutex_unlock(&registry_lock);
}

void cmt_pool_registry_fork_child(void)
{
    pthread_mutex_init(&registry_lock, NULL);
}
