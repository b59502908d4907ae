/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_UNWIND_RULES_H
#define CUMEMTRACE_PRELOAD_UNWIND_RULES_H

#include <stdbool.h>
#include <stdint.h>

/* What the DWARF call frame information (.eh_frame) says about one
 * instruction of x86-64 code, reduced to the rules an ordinary call frame
 * uses: the canonical frame address (CFA) is rsp or rbp plus a constant, the
 * return address is stored at a constant offset from the CFA, rbp is either
 * unchanged or stored at a constant offset from the CFA, and the caller's rsp
 * is the CFA. Everything else (CFA expressions, registers saved in other
 * registers, signal frames, code without unwind information) is "unsupported":
 * the stack cache (stack_cache.c) never caches a stack through such a frame.
 *
 * With these rules, unwinding one frame reads exactly two words of memory,
 * both inside the frame itself (below its CFA): the return address, and the
 * saved rbp when the frame saved it. That is what makes a cached unwind
 * provably exact (stack_cache.c explains). */

enum cmt_frame_rule_kind {
    CMT_RULE_UNSUPPORTED = 0,
    CMT_RULE_STANDARD = 1, /* the rules above */
    CMT_RULE_OUTERMOST = 2 /* the return address is undefined: no caller (_start, clone) */
};

#define CMT_DWARF_RBP 6
#define CMT_DWARF_RSP 7

struct cmt_frame_rule {
    uint8_t kind;    /* enum cmt_frame_rule_kind */
    uint8_t cfa_reg; /* CMT_DWARF_RSP or CMT_DWARF_RBP */
    bool rbp_saved;  /* rbp of the caller is stored at CFA + rbp_offset */
    int32_t cfa_offset;
    int32_t ra_offset;  /* negative */
    int32_t rbp_offset; /* negative, when rbp_saved */
};

/* The rule in force at pc (for a return address, pass the address of the
 * call instruction: the return address minus one). Looks the FDE up through
 * the PT_GNU_EH_FRAME header of the object that contains pc. Never calls
 * malloc; takes the loader's lock (dl_iterate_phdr) when pc is in an object
 * not seen before. Callers serialise (cmt_recorder.meta.lock). */
struct cmt_frame_rule cmt_unwind_rule_at(uint64_t pc);

/* Forgets every object and rule (objects were unloaded). Callers serialise. */
void cmt_unwind_rules_forget(void);

#endif
