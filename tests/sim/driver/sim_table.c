/* SPDX-License-Identifier: MIT */
#include "sim_table.h"
#include "sim_work.h"

#include <stdlib.h>
#include <string.h>

/* splitmix64's finaliser: keys are 512-byte aligned addresses or heap
 * pointers whose low bits carry no information. */
static size_t slot_of(const struct sim_table *table, uint64_t key)
{
    key ^= key >> 30;
    key *= 0xbf58476d1ce4e5b9ull;
    key ^= key >> 27;
    key *= 0x94d049bb133111ebull;
    key ^= key >> 31;
    return (size_t)key & (table->capacity - 1);
}

static void place(struct sim_table *table, const struct sim_object *object)
{
    size_t i = slot_of(table, object->key);
    sim_work(1);
    while (table->slots[i].kind != SIM_OBJ_EMPTY) {
        sim_work(1);
        i = (i + 1) & (table->capacity - 1);
    }
    table->slots[i] = *object;
}

static bool grow(struct sim_table *table)
{
    size_t old_capacity = table->capacity;
    struct sim_object *old_slots = table->slots;
    size_t capacity = old_capacity ? old_capacity * 2 : 64;
    struct sim_object *slots = calloc(capacity, sizeof *slots);
    if (!slots)
        return false;
    table->slots = slots;
    table->capacity = capacity;
    for (size_t i = 0; i < old_capacity; i++)
        if (old_slots[i].kind != SIM_OBJ_EMPTY)
            place(table, &old_slots[i]);
    free(old_slots);
    return true;
}

void sim_table_destroy(struct sim_table *table)
{
    free(table->slots);
    memset(table, 0, sizeof *table);
}

bool sim_table_insert(struct sim_table *table, const struct sim_object *object)
{
    /* Keep the load at most one half so probe sequences stay short. */
    if ((table->count + 1) * 2 > table->capacity && !grow(table))
        return false;
    place(table, object);
    table->count++;
    return true;
}

struct sim_object *sim_table_find(const struct sim_table *table, uint64_t key, enum sim_object_kind kind)
{
    if (table->capacity == 0)
        return NULL;
    for (size_t i = slot_of(table, key);; i = (i + 1) & (table->capacity - 1)) {
        struct sim_object *slot = &table->slots[i];
        sim_work(1);
        if (slot->kind == SIM_OBJ_EMPTY)
            return NULL;
        if (slot->key == key)
            return slot->kind == kind ? slot : NULL;
    }
}

void sim_table_remove(struct sim_table *table, struct sim_object *object)
{
    size_t mask = table->capacity - 1;
    size_t hole = (size_t)(object - table->slots);
    /* Shift later members of the probe run back so no lookup stops early. */
    for (size_t i = (hole + 1) & mask; table->slots[i].kind != SIM_OBJ_EMPTY; i = (i + 1) & mask) {
        sim_work(1);
        size_t home = slot_of(table, table->slots[i].key);
        /* Movable when its home is not in the cyclic interval (hole, i]. */
        bool home_after_hole = hole <= i ? (home > hole && home <= i) : (home > hole || home <= i);
        if (!home_after_hole) {
            table->slots[hole] = table->slots[i];
            hole = i;
        }
    }
    memset(&table->slots[hole], 0, sizeof table->slots[hole]);
    table->count--;
}

uint64_t *sim_table_collect_keys(const struct sim_table *table, enum sim_object_kind kind, int device, size_t *count)
{
    *count = 0;
    size_t matches = 0;
    for (size_t i = 0; i < table->capacity; i++)
        if (table->slots[i].kind == kind && (device < 0 || table->slots[i].device == device))
            matches++;
    if (matches == 0)
        return NULL;
    uint64_t *keys = malloc(matches * sizeof *keys);
    if (!keys)
        return NULL;
    for (size_t i = 0; i < table->capacity; i++)
        if (table->slots[i].kind == kind && (device < 0 || table->slots[i].device == device))
            keys[(*count)++] = table->slots[i].key;
    return keys;
}
