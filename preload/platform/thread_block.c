/* SPDX-License-Identifier: MIT */
#include "thread_block.h"

#include <sys/mman.h>

/* In front of every block: what its release needs. 16 bytes keep the
 * table's alignment. */
struct block_header {
    void **slot;
    size_t mapped;
};

static void release(void *value)
{
    struct block_header *h = value;
    /* The pointer goes first: a hook that runs later in this thread's exit
     * (another key's destructor) maps a new block instead of reading this
     * one. */
    *h->slot = NULL;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    munmap(h, h->mapped);
}

void cmt_thread_block_init(struct cmt_thread_block *b, size_t size)
{
    b->size = size;
    b->ok = pthread_key_create(&b->key, release) == 0;
}

void *cmt_thread_block_get(struct cmt_thread_block *b, void **slot)
{
    if (*slot)
        return *slot;
    if (!b->ok)
        return NULL;
    size_t mapped = sizeof(struct block_header) + b->size;
    void *p = mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    struct block_header *h = p;
    h->slot = slot;
    h->mapped = mapped;
    if (pthread_setspecific(b->key, h) != 0) {
        munmap(p, mapped);
        return NULL;
    }
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    *slot = h + 1;
    return *slot;
}
