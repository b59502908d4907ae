/* SPDX-License-Identifier: MIT */
/* A reader of x86-64 call frame information, reduced to what the stack cache
 * needs (unwind_rules.h). It follows the DWARF 4 "Call Frame Information"
 * chapter and the LSB's .eh_frame / .eh_frame_hdr description, like libgcc's
 * unwind-dw2-fde.c and libunwind's dwarf/Gparser.c do; anything it does not
 * fully understand is reported unsupported, which only costs speed (the
 * stack is then unwound by libunwind every time). */
#include "unwind_rules.h"

#include <link.h>
#include <stddef.h>
#include <string.h>

#include "arena.h"

#if defined(__x86_64__)

#define DW_EH_PE_omit 0xff
#define DW_EH_PE_absptr 0x00
#define DW_EH_PE_uleb128 0x01
#define DW_EH_PE_udata2 0x02
#define DW_EH_PE_udata4 0x03
#define DW_EH_PE_udata8 0x04
#define DW_EH_PE_sleb128 0x09
#define DW_EH_PE_sdata2 0x0a
#define DW_EH_PE_sdata4 0x0b
#define DW_EH_PE_sdata8 0x0c
#define DW_EH_PE_pcrel 0x10
#define DW_EH_PE_datarel 0x30
#define DW_EH_PE_indirect 0x80

#define DWARF_RA 16 /* x86-64: the return address column */

/* A bounded reader: every read checks the end, so damaged unwind information
 * makes a lookup fail, never read out of bounds. */
struct cursor {
    const uint8_t *p, *end;
    bool bad;
};

static uint8_t read_u8(struct cursor *c)
{
    if (c->p >= c->end) {
        c->bad = true;
        return 0;
    }
    return *c->p++;
}

static uint64_t read_fixed(struct cursor *c, size_t n)
{
    if ((size_t)(c->end - c->p) < n) {
        c->bad = true;
        c->p = c->end;
        return 0;
    }
    uint64_t v = 0;
    memcpy(&v, c->p, n); /* little-endian: the low n bytes */
    c->p += n;
    return v;
}

static uint64_t read_uleb(struct cursor *c)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        uint8_t b = read_u8(c);
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
    c->bad = true;
    return 0;
}

static int64_t read_sleb(struct cursor *c)
{
    uint64_t v = 0;
    unsigned shift = 0;
    uint8_t b;
    do {
        if (shift >= 64) {
            c->bad = true;
            return 0;
        }
        b = read_u8(c);
        v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
    } while (b & 0x80);
    if (shift < 64 && (b & 0x40))
        v |= ~(uint64_t)0 << shift;
    return (int64_t)v;
}

/* An encoded pointer (DW_EH_PE_*). Only the applications our lookups meet
 * are accepted: absolute, pc-relative, and (for the header's table)
 * data-relative; indirect pointers are refused. */
static uint64_t read_encoded(struct cursor *c, uint8_t enc, uint64_t datarel_base)
{
    if (enc == DW_EH_PE_omit || (enc & DW_EH_PE_indirect)) {
        c->bad = true;
        return 0;
    }
    uint64_t field = (uint64_t)(uintptr_t)c->p;
    uint64_t v;
    switch (enc & 0x0f) {
    case DW_EH_PE_absptr: v = read_fixed(c, 8); break;
    case DW_EH_PE_uleb128: v = read_uleb(c); break;
    case DW_EH_PE_udata2: v = read_fixed(c, 2); break;
    case DW_EH_PE_udata4: v = read_fixed(c, 4); break;
    case DW_EH_PE_udata8: v = read_fixed(c, 8); break;
    case DW_EH_PE_sleb128: v = (uint64_t)read_sleb(c); break;
    case DW_EH_PE_sdata2: v = (uint64_t)(int64_t)(int16_t)read_fixed(c, 2); break;
    case DW_EH_PE_sdata4: v = (uint64_t)(int64_t)(int32_t)read_fixed(c, 4); break;
    case DW_EH_PE_sdata8: v = read_fixed(c, 8); break;
    default: c->bad = true; return 0;
    }
    switch (enc & 0x70) {
    case 0: return v;
    case DW_EH_PE_pcrel: return v + field;
    case DW_EH_PE_datarel: return v + datarel_base;
    default: c->bad = true; return 0;
    }
}

/* ---- finding the FDE ------------------------------------------------------ */

struct object_lookup {
    uint64_t pc;
    const uint8_t *eh_frame_hdr; /* NULL: no object, or one without a header */
    uint64_t text_end;           /* end of the PT_LOAD segment holding pc */
};

static int find_object(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct object_lookup *l = data;
    const ElfW(Phdr) *hdr = NULL;
    bool contains = false;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD) {
            uint64_t a = info->dlpi_addr + ph->p_vaddr;
            if (l->pc >= a && l->pc < a + ph->p_memsz) {
                contains = true;
                l->text_end = a + ph->p_memsz;
            }
        } else if (ph->p_type == PT_GNU_EH_FRAME) {
            hdr = ph;
        }
    }
    if (!contains)
        return 0;
    l->eh_frame_hdr = hdr ? (const uint8_t *)(uintptr_t)(info->dlpi_addr + hdr->p_vaddr) : NULL;
    return 1;
}

/* The FDE covering pc, from the header's binary search table. The table's
 * entries are (initial location, FDE address) pairs, sorted, both relative
 * to the header: the only table format linkers write (DW_EH_PE_datarel |
 * DW_EH_PE_sdata4). */
static const uint8_t *find_fde(const uint8_t *hdr, uint64_t pc)
{
    /* Four bytes of encodings, then two encoded values of at most 8 bytes
     * each; the table's size comes from its count. */
    struct cursor c = {hdr, hdr + 20, false};
    uint8_t version = read_u8(&c), frame_enc = read_u8(&c), count_enc = read_u8(&c), table_enc = read_u8(&c);
    if (version != 1 || table_enc != (DW_EH_PE_datarel | DW_EH_PE_sdata4) || count_enc == DW_EH_PE_omit)
        return NULL;
    uint64_t base = (uint64_t)(uintptr_t)hdr;
    read_encoded(&c, frame_enc, base);
    uint64_t count = read_encoded(&c, count_enc, base);
    if (c.bad || count == 0 || count > (1u << 26))
        return NULL;
    const int32_t *table = (const int32_t *)(const void *)c.p;
    uint64_t lo = 0, hi = count; /* first entry with initial location > pc */
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (base + (uint64_t)(int64_t)table[2 * mid] <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return NULL;
    return (const uint8_t *)(uintptr_t)(base + (uint64_t)(int64_t)table[2 * (lo - 1) + 1]);
}

/* A CIE or FDE: its contents after the length field. */
static bool entry_span(const uint8_t *entry, struct cursor *out)
{
    struct cursor c = {entry, entry + 12, false};
    uint64_t len = read_fixed(&c, 4);
    if (len == 0xffffffffu)
        len = read_fixed(&c, 8);
    if (c.bad || len == 0 || len > (1u << 24))
        return false;
    out->p = c.p;
    out->end = c.p + len;
    out->bad = false;
    return true;
}

/* ---- the CFA program ------------------------------------------------------ */

enum reg_rule { RULE_SAME = 0, RULE_UNDEFINED, RULE_OFFSET, RULE_OTHER };

struct reg_state {
    uint8_t rule; /* enum reg_rule */
    int64_t offset;
};

struct row {
    uint64_t cfa_reg;
    int64_t cfa_offset;
    bool cfa_expression;
    struct reg_state ra, rbp, rsp;
};

struct cie_info {
    uint64_t code_align;
    int64_t data_align;
    uint8_t fde_enc;
    bool has_augmentation_length;
    bool signal_frame;
    struct cursor initial; /* initial instructions */
};

static bool parse_cie(const uint8_t *cie, struct cie_info *out)
{
    struct cursor c;
    if (!entry_span(cie, &c))
        return false;
    if (read_fixed(&c, 4) != 0) /* a CIE's id is 0 in .eh_frame */
        return false;
    uint8_t version = read_u8(&c);
    if (version != 1 && version != 3)
        return false;
    const char *aug = (const char *)c.p;
    size_t aug_len = strnlen(aug, (size_t)(c.end - c.p));
    if (aug_len == (size_t)(c.end - c.p))
        return false;
    c.p += aug_len + 1;
    if (aug[0] && aug[0] != 'z') /* "eh" and other pre-'z' forms: not met in practice */
        return false;
    out->code_align = read_uleb(&c);
    out->data_align = read_sleb(&c);
    uint64_t ra = version == 1 ? read_u8(&c) : read_uleb(&c);
    if (ra != DWARF_RA)
        return false;
    out->fde_enc = DW_EH_PE_absptr;
    out->signal_frame = false;
    out->has_augmentation_length = aug[0] == 'z';
    if (out->has_augmentation_length) {
        uint64_t len = read_uleb(&c);
        if (c.bad || len > (uint64_t)(c.end - c.p))
            return false;
        struct cursor a = {c.p, c.p + len, false};
        for (const char *s = aug + 1; *s; s++) {
            if (*s == 'R') {
                out->fde_enc = read_u8(&a);
            } else if (*s == 'L') {
                read_u8(&a);
            } else if (*s == 'P') {
                uint8_t enc = read_u8(&a);
                /* Only its size matters here: skip it as a plain value. */
                read_encoded(&a, enc & 0x0f, 0);
            } else if (*s == 'S') {
                out->signal_frame = true;
            } else {
                break; /* unknown letters: the length lets us skip their data */
            }
        }
        if (a.bad)
            return false;
        c.p += len;
    }
    out->initial = c;
    return !c.bad && out->code_align != 0;
}

static struct reg_state *tracked(struct row *r, uint64_t reg)
{
    switch (reg) {
    case DWARF_RA: return &r->ra;
    case CMT_DWARF_RBP: return &r->rbp;
    case CMT_DWARF_RSP: return &r->rsp;
    default: return NULL;
    }
}

static void set_rule(struct row *r, uint64_t reg, uint8_t rule, int64_t offset)
{
    struct reg_state *s = tracked(r, reg);
    if (s)
        *s = (struct reg_state){rule, offset};
}

#define STATE_STACK_MAX 16

/* Runs a CFA program, stopping before the first row that starts after pc.
 * initial: the row after the CIE's instructions (DW_CFA_restore). Returns
 * false on anything not understood. */
static bool run_program(struct cursor *c, const struct cie_info *cie, uint64_t loc, uint64_t pc, struct row *row,
                        const struct row *initial)
{
    struct row stack[STATE_STACK_MAX];
    unsigned depth = 0;
    while (c->p < c->end && !c->bad) {
        uint8_t op = read_u8(c);
        uint8_t low = op & 0x3f;
        uint64_t reg;
        switch (op & 0xc0) {
        case 0x40: /* DW_CFA_advance_loc */
            loc += low * cie->code_align;
            if (loc > pc)
                return true;
            continue;
        case 0x80: /* DW_CFA_offset */
            set_rule(row, low, RULE_OFFSET, (int64_t)read_uleb(c) * cie->data_align);
            continue;
        case 0xc0: /* DW_CFA_restore */
            if (!initial)
                return false;
            if (tracked(row, low))
                *tracked(row, low) = *tracked((struct row *)initial, low);
            continue;
        }
        switch (op) {
        case 0x00: /* nop */
            break;
        case 0x01: /* set_loc */
            loc = read_encoded(c, cie->fde_enc, 0);
            if (loc > pc)
                return !c->bad;
            break;
        case 0x02: loc += read_fixed(c, 1) * cie->code_align; if (loc > pc) return !c->bad; break;
        case 0x03: loc += read_fixed(c, 2) * cie->code_align; if (loc > pc) return !c->bad; break;
        case 0x04: loc += read_fixed(c, 4) * cie->code_align; if (loc > pc) return !c->bad; break;
        case 0x05: /* offset_extended */
            reg = read_uleb(c);
            set_rule(row, reg, RULE_OFFSET, (int64_t)read_uleb(c) * cie->data_align);
            break;
        case 0x06: /* restore_extended */
            reg = read_uleb(c);
            if (!initial)
                return false;
            if (tracked(row, reg))
                *tracked(row, reg) = *tracked((struct row *)initial, reg);
            break;
        case 0x07: set_rule(row, read_uleb(c), RULE_UNDEFINED, 0); break;
        case 0x08: set_rule(row, read_uleb(c), RULE_SAME, 0); break;
        case 0x09: /* register */
            reg = read_uleb(c);
            read_uleb(c);
            set_rule(row, reg, RULE_OTHER, 0);
            break;
        case 0x0a: /* remember_state */
            if (depth == STATE_STACK_MAX)
                return false;
            stack[depth++] = *row;
            break;
        case 0x0b: /* restore_state: the CFA rule comes back too, as GCC's epilogues expect (libgcc and
                    * libunwind save it with the registers) */
            if (depth == 0)
                return false;
            *row = stack[--depth];
            break;
        case 0x0c: /* def_cfa */
            row->cfa_reg = read_uleb(c);
            row->cfa_offset = (int64_t)read_uleb(c);
            row->cfa_expression = false;
            break;
        case 0x0d: /* def_cfa_register */
            row->cfa_reg = read_uleb(c);
            if (row->cfa_expression)
                return false;
            break;
        case 0x0e: /* def_cfa_offset */
            row->cfa_offset = (int64_t)read_uleb(c);
            if (row->cfa_expression)
                return false;
            break;
        case 0x0f: { /* def_cfa_expression */
            uint64_t len = read_uleb(c);
            if (len > (uint64_t)(c->end - c->p))
                return false;
            c->p += len;
            row->cfa_expression = true;
            break;
        }
        case 0x10:   /* expression */
        case 0x16: { /* val_expression */
            reg = read_uleb(c);
            uint64_t len = read_uleb(c);
            if (len > (uint64_t)(c->end - c->p))
                return false;
            c->p += len;
            set_rule(row, reg, RULE_OTHER, 0);
            break;
        }
        case 0x11: /* offset_extended_sf */
            reg = read_uleb(c);
            set_rule(row, reg, RULE_OFFSET, read_sleb(c) * cie->data_align);
            break;
        case 0x12: /* def_cfa_sf */
            row->cfa_reg = read_uleb(c);
            row->cfa_offset = read_sleb(c) * cie->data_align;
            row->cfa_expression = false;
            break;
        case 0x13: /* def_cfa_offset_sf */
            row->cfa_offset = read_sleb(c) * cie->data_align;
            if (row->cfa_expression)
                return false;
            break;
        case 0x14: /* val_offset */
            reg = read_uleb(c);
            read_uleb(c);
            set_rule(row, reg, RULE_OTHER, 0);
            break;
        case 0x15: /* val_offset_sf */
            reg = read_uleb(c);
            read_sleb(c);
            set_rule(row, reg, RULE_OTHER, 0);
            break;
        case 0x2e: /* GNU_args_size */
            read_uleb(c);
            break;
        case 0x2f: /* GNU_negative_offset_extended */
            reg = read_uleb(c);
            set_rule(row, reg, RULE_OFFSET, -(int64_t)read_uleb(c) * cie->data_align);
            break;
        default:
            return false;
        }
    }
    return !c->bad;
}

static struct cmt_frame_rule classify(const struct row *r)
{
    struct cmt_frame_rule out = {.kind = CMT_RULE_UNSUPPORTED};
    if (r->cfa_expression || (r->cfa_reg != CMT_DWARF_RSP && r->cfa_reg != CMT_DWARF_RBP))
        return out;
    if (r->cfa_offset < -(1 << 30) || r->cfa_offset > (1 << 30))
        return out;
    if (r->rsp.rule != RULE_SAME) /* the caller's rsp is the CFA; any other rule is not ours to follow */
        return out;
    if (r->ra.rule == RULE_UNDEFINED) {
        out.kind = CMT_RULE_OUTERMOST;
        return out;
    }
    if (r->ra.rule != RULE_OFFSET || r->ra.offset >= 0 || r->ra.offset < -(1 << 20))
        return out;
    if (r->rbp.rule == RULE_OFFSET) {
        if (r->rbp.offset >= 0 || r->rbp.offset < -(1 << 20))
            return out;
        out.rbp_saved = true;
        out.rbp_offset = (int32_t)r->rbp.offset;
    } else if (r->rbp.rule != RULE_SAME) {
        return out;
    }
    /* An rsp-based CFA below the frame's own return address slot is not a
     * frame: the slot would lie below the stack pointer. */
    if (r->cfa_reg == CMT_DWARF_RSP && r->cfa_offset + r->ra.offset < 0)
        return out;
    out.kind = CMT_RULE_STANDARD;
    out.cfa_reg = (uint8_t)r->cfa_reg;
    out.cfa_offset = (int32_t)r->cfa_offset;
    out.ra_offset = (int32_t)r->ra.offset;
    return out;
}

static struct cmt_frame_rule rule_from_unwind_info(uint64_t pc)
{
    const struct cmt_frame_rule unsupported = {.kind = CMT_RULE_UNSUPPORTED};
    struct object_lookup l = {.pc = pc};
    if (!dl_iterate_phdr(find_object, &l) || !l.eh_frame_hdr)
        return unsupported;
    const uint8_t *fde = find_fde(l.eh_frame_hdr, pc);
    struct cursor c;
    if (!fde || !entry_span(fde, &c))
        return unsupported;
    const uint8_t *id_field = c.p;
    uint32_t cie_offset = (uint32_t)read_fixed(&c, 4);
    if (cie_offset == 0) /* a CIE, not an FDE */
        return unsupported;
    struct cie_info cie;
    if (!parse_cie(id_field - cie_offset, &cie) || cie.signal_frame)
        return unsupported;
    uint64_t start = read_encoded(&c, cie.fde_enc, 0);
    uint64_t range = read_encoded(&c, cie.fde_enc & 0x0f, 0);
    if (c.bad || pc < start || pc - start >= range)
        return unsupported;
    if (cie.has_augmentation_length) {
        uint64_t len = read_uleb(&c);
        if (c.bad || len > (uint64_t)(c.end - c.p))
            return unsupported;
        c.p += len;
    }
    struct row row = {.cfa_reg = CMT_DWARF_RSP};
    struct cursor init = cie.initial;
    if (!run_program(&init, &cie, start, UINT64_MAX, &row, NULL))
        return unsupported;
    struct row initial = row;
    if (!run_program(&c, &cie, start, pc, &row, &initial))
        return unsupported;
    return classify(&row);
}

/* ---- the rule table --------------------------------------------------------- */

struct rule_entry {
    uint64_t pc; /* 0 = empty */
    struct cmt_frame_rule rule;
};

static struct rule_entry *rule_table;
static uint32_t rule_cap, rule_count;

static bool rule_table_grow(void)
{
    uint32_t cap = rule_cap ? rule_cap * 2 : 1024;
    struct rule_entry *t = cmt_arena_alloc_pages((size_t)cap * sizeof *t);
    if (!t)
        return false;
    for (uint32_t i = 0; i < rule_cap; i++) {
        if (!rule_table[i].pc)
            continue;
        uint32_t j = (uint32_t)(rule_table[i].pc * 0x9e3779b97f4a7c15ull >> 32) & (cap - 1);
        while (t[j].pc)
            j = (j + 1) & (cap - 1);
        t[j] = rule_table[i];
    }
    rule_table = t; /* arena memory is never reused: the old block is abandoned */
    rule_cap = cap;
    return true;
}

struct cmt_frame_rule cmt_unwind_rule_at(uint64_t pc)
{
    if (pc == 0)
        return (struct cmt_frame_rule){.kind = CMT_RULE_UNSUPPORTED};
    if ((rule_count + 1) * 10 > rule_cap * 6 && !rule_table_grow())
        return rule_from_unwind_info(pc);
    uint32_t j = (uint32_t)(pc * 0x9e3779b97f4a7c15ull >> 32) & (rule_cap - 1);
    for (; rule_table[j].pc; j = (j + 1) & (rule_cap - 1))
        if (rule_table[j].pc == pc)
            return rule_table[j].rule;
    struct cmt_frame_rule r = rule_from_unwind_info(pc);
    rule_table[j] = (struct rule_entry){pc, r};
    rule_count++;
    return r;
}

void cmt_unwind_rules_forget(void)
{
    rule_table = NULL;
    rule_cap = rule_count = 0;
}

#else /* not x86-64: no rules, every frame unsupported */

struct cmt_frame_rule cmt_unwind_rule_at(uint64_t pc)
{
    (void)pc;
    return (struct cmt_frame_rule){.kind = CMT_RULE_UNSUPPORTED};
}

void cmt_unwind_rules_forget(void)
{
}

#endif
