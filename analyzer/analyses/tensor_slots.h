/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_TENSOR_SLOTS_H
#define CUMEMTRACE_ANALYZER_TENSOR_SLOTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The recorded run's tensors by (device, address), each given a small
 * number, its slot, for as long as it lives (to its FREE_COMPLETED): the
 * what-if models name tensors by slot, since addresses are the recorded
 * run's. Open addressing with a random odd multiplier (hash_seed.h) and
 * backward-shift deletion; freed slots are reused, so slots stay below the
 * most tensors ever live at once. */

struct cmt_tensor_slot_entry {
    uint64_t key;
    int32_t device;
    uint32_t slot;
    bool used;
};

struct cmt_tensor_slots {
    struct cmt_tensor_slot_entry *t;
    size_t cap, n;
    uint64_t mult;
    unsigned shift;
    uint32_t *free_slots;
    size_t n_free, cap_free;
    uint32_t next_slot;
};

void cmt_tensor_slots_init(struct cmt_tensor_slots *s);
void cmt_tensor_slots_free(struct cmt_tensor_slots *s);
/* A new slot for (device, key), which must not be live. Returns 0, or -1
 * when out of memory. */
int cmt_tensor_slots_add(struct cmt_tensor_slots *s, int32_t device, uint64_t key, uint32_t *slot);
/* The slot of (device, key); false when it has none. */
bool cmt_tensor_slots_find(const struct cmt_tensor_slots *s, int32_t device, uint64_t key, uint32_t *slot);
/* Forgets (device, key); its slot may be handed out again. Returns 0, or
 * -1 when out of memory. */
int cmt_tensor_slots_remove(struct cmt_tensor_slots *s, int32_t device, uint64_t key);
/* A slot no key names, for a request that is let go at once. */
int cmt_tensor_slots_spare(struct cmt_tensor_slots *s, uint32_t *slot);

#endif
