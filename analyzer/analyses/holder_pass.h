/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_HOLDER_PASS_H
#define CUMEMTRACE_ANALYZER_HOLDER_PASS_H

#include <stdbool.h>
#include <stdint.h>

#include "memory_holder.h"
#include "replay.h"
#include "trace_reader.h"

/* A holder's own peak on one device (memory_holder.h): the most its
 * device-resident allocations had live at once. */
struct cmt_holder_peak {
    uint64_t bytes, count, ts; /* ts absolute; 0 bytes: nothing ever */
};

/* Which holder made the allocations of a stack: the caller's rule. */
typedef enum cmt_holder (*cmt_holder_fn)(void *ctx, uint64_t stack);

/* Stacks per page of the table of holders. */
#define CMT_HOLDER_PAGE_SHIFT 12
#define CMT_HOLDER_PAGE (1u << CMT_HOLDER_PAGE_SHIFT)

/* Each holder's live bytes per device, followed in two halves:
 *
 * - on the reading side (cmt_holder_pass_read, each event as read, where
 *   the model the classes come from is this thread's), the holder of each
 *   stack an allocation names, asked once per stack, into a table by stack
 *   id;
 * - on the replay's side, an observer of the replay (observer, replay.h)
 *   that adds each device-resident allocation that comes and goes to its
 *   stack's holder: no table of allocations of its own, the replay's live
 *   set says what a release releases (a second table of live allocations
 *   on the reading side was about 130 instructions per event, callgrind).
 *
 * The reading side classifies a stack before the event that names it is
 * handed to the replay (feed.h's on_read), and the hand-over orders the
 * two; the table's pages never move (a directory of pages made as stack ids
 * are met), so the replay reads it while the reader adds to it. Its bytes
 * are read and written with relaxed atomics (a release reads the class of
 * an allocation classified earlier, never one being written), its pages
 * published with release and read with acquire. */
struct cmt_holder_pass {
    cmt_holder_fn holder_of;
    void *holder_ctx;
    uint32_t stack_id_limit; /* the replay's: larger ids read as 0 there */
    /* [stack >> CMT_HOLDER_PAGE_SHIFT]: holder_of's answer + 1 by stack
     * id; pages not written yet are cmt_holder_no_page (zeros), so a
     * lookup takes two loads and no test */
    const uint8_t **pages;
    size_t n_pages;
    /* Some stack has a holder (set on the reading side before the event
     * that names it is handed over): until then the replay's side has
     * nothing to count and looks nothing up (a program without one, most
     * traces of C programs: 18 instructions per event, callgrind). */
    bool any_holder;
    bool out_of_memory;
    uint64_t live[CMT_MAX_DEVICES][CMT_HOLDER_COUNT];
    uint64_t live_count[CMT_MAX_DEVICES][CMT_HOLDER_COUNT];
    struct cmt_holder_peak peak[CMT_MAX_DEVICES][CMT_HOLDER_COUNT];
    struct cmt_replay_observer observer; /* attach to the replay the events go to */
};

/* Sets up the pass for a replay whose stack_id_limit is given. Returns 0,
 * or -1 when out of memory. */
int cmt_holder_pass_init(struct cmt_holder_pass *p, cmt_holder_fn holder_of, void *ctx, uint32_t stack_id_limit);
void cmt_holder_pass_free(struct cmt_holder_pass *p);

extern const uint8_t cmt_holder_no_page[CMT_HOLDER_PAGE];

/* holder_of's answer + 1 for stack (below stack_id_limit, as the replay's
 * stacks are) as the reading side noted it; 0 when not asked (yet). */
static inline uint8_t cmt_holder_pass_known_below(const struct cmt_holder_pass *p, uint32_t stack)
{
    /* acquire: a page just made is read with its zeros (a plain load on x86) */
    const uint8_t *page = __atomic_load_n(&p->pages[stack >> CMT_HOLDER_PAGE_SHIFT], __ATOMIC_ACQUIRE);
    return __atomic_load_n(&page[stack & (CMT_HOLDER_PAGE - 1)], __ATOMIC_RELAXED);
}

/* The same for any stack id (the reader's: larger ones are never noted). */
static inline uint8_t cmt_holder_pass_known(const struct cmt_holder_pass *p, uint64_t stack)
{
    return stack < p->stack_id_limit ? cmt_holder_pass_known_below(p, (uint32_t)stack) : 0;
}

/* A change of a device-resident allocation (the caller tested
 * cmt_kind_holds_memory, the device and the class): the replay's side,
 * inline for a caller that follows several views in one call
 * (alloc_views.h). */
static inline __attribute__((always_inline)) void cmt_holder_pass_device_change(struct cmt_holder_pass *p,
                                                                                const struct cmt_replay *r,
                                                                                const struct cmt_live *l, bool live)
{
    if (!__atomic_load_n(&p->any_holder, __ATOMIC_RELAXED))
        return;
    uint8_t known = cmt_holder_pass_known_below(p, l->stack);
    if (known <= CMT_HOLDER_OTHER + 1)
        return;
    unsigned h = known - 1u;
    uint64_t *v = &p->live[l->device][h], *c = &p->live_count[l->device][h];
    if (!live) {
        *v -= *v < l->size ? *v : l->size;
        *c -= *c ? 1 : 0;
        return;
    }
    *v += l->size;
    *c += 1;
    struct cmt_holder_peak *pk = &p->peak[l->device][h];
    if (*v > pk->bytes)
        *pk = (struct cmt_holder_peak){*v, *c, r->event ? r->event->ts : l->ts};
}

/* The observer's on_change: any change. */
static inline void cmt_holder_pass_change(struct cmt_holder_pass *p, const struct cmt_replay *r,
                                          const struct cmt_live *l, bool live)
{
    if (!cmt_kind_holds_memory(l->kind) || l->device < 0 || l->device >= CMT_MAX_DEVICES ||
        cmt_class_of_kind(l->kind) != CMT_CLASS_DEVICE)
        return;
    cmt_holder_pass_device_change(p, r, l, live);
}

/* Asks holder_of about stack and notes the answer (out of line: once per
 * stack). */
void cmt_holder_pass_classify(struct cmt_holder_pass *p, uint64_t stack);

/* One event as read, before it is handed to the replay: the allocations
 * the replay may count in a holder (cmt_holder_pass_change's test), each
 * stack asked once, in the order the events name them. */
static inline void cmt_holder_pass_read(struct cmt_holder_pass *p, const struct cmt_event_in *e)
{
    /* a stack met before first: most allocations name one */
    if (e->type != CMT_REC_ALLOC || __builtin_expect(cmt_holder_pass_known(p, e->stack) != 0, 1))
        return;
    if (e->result != 0 || e->addr == 0 || !cmt_kind_holds_memory(e->kind) || e->device < 0 ||
        e->device >= CMT_MAX_DEVICES || cmt_class_of_allocation(e->kind, e->device) != CMT_CLASS_DEVICE)
        return;
    cmt_holder_pass_classify(p, e->stack);
}

#endif
