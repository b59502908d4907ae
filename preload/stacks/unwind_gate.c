/* SPDX-License-Identifier: MIT */
#include "unwind_gate.h"

#include <sched.h>
#include <stdint.h>
#include <string.h>

#define CMT_UNWIND_SLOTS 64u

struct gate_slot {
    uint32_t active;
    char pad[64 - sizeof(uint32_t)];
} __attribute__((aligned(64)));

static struct gate_slot slots[CMT_UNWIND_SLOTS];
static uint32_t closed;
static uint32_t next_slot;
static __thread uint32_t my_slot __attribute__((tls_model("initial-exec")));

static inline struct gate_slot *slot(void)
{
    if (!my_slot) /* 0 = not assigned yet; slots are numbered from 1 */
        my_slot = __atomic_add_fetch(&next_slot, 1, __ATOMIC_RELAXED) % CMT_UNWIND_SLOTS + 1;
    return &slots[my_slot - 1];
}

void cmt_unwind_gate_enter(void)
{
    struct gate_slot *s = slot();
    for (;;) {
        /* Dekker-style: announce, then look. The locked add is a full
         * barrier, so fork either sees us or we see it closing. */
        __atomic_fetch_add(&s->active, 1, __ATOMIC_SEQ_CST);
        if (!__atomic_load_n(&closed, __ATOMIC_SEQ_CST))
            return;
        __atomic_fetch_sub(&s->active, 1, __ATOMIC_SEQ_CST);
        while (__atomic_load_n(&closed, __ATOMIC_ACQUIRE))
            sched_yield();
    }
}

void cmt_unwind_gate_leave(void)
{
    __atomic_fetch_sub(&slot()->active, 1, __ATOMIC_RELEASE);
}

void cmt_unwind_gate_fork_prepare(void)
{
    __atomic_store_n(&closed, 1, __ATOMIC_SEQ_CST);
    for (unsigned i = 0; i < CMT_UNWIND_SLOTS; i++)
        while (__atomic_load_n(&slots[i].active, __ATOMIC_SEQ_CST))
            sched_yield();
}

void cmt_unwind_gate_fork_parent(void)
{
    __atomic_store_n(&closed, 0, __ATOMIC_RELEASE);
}

void cmt_unwind_gate_fork_child(void)
{
    /* Only the forking thread lives on, and it was not unwinding. */
    memset(slots, 0, sizeof slots);
    __atomic_store_n(&closed, 0, __ATOMIC_RELEASE);
}
