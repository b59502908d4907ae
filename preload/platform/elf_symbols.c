/* SPDX-License-Identifier: MIT */
#include "elf_symbols.h"

#include <elf.h>
#include <string.h>

struct dynamic_tables {
    uint64_t bias;
    const ElfW(Sym) *symtab;
    const char *strtab;
    uint64_t strsz;
    const uint32_t *gnu_hash;
    const uint32_t *sysv_hash;
};

/* The loader relocates the pointers of the dynamic section in place, except
 * where that section is read-only (the vDSO): an address below the load bias
 * is still a file address. */
static const void *dyn_pointer(const struct dynamic_tables *t, uint64_t v)
{
    return (const void *)(uintptr_t)(v < t->bias ? v + t->bias : v);
}

static bool read_dynamic(const struct dl_phdr_info *info, struct dynamic_tables *t)
{
    memset(t, 0, sizeof *t);
    t->bias = info->dlpi_addr;
    const ElfW(Dyn) *dyn = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(uintptr_t)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    if (!dyn)
        return false;
    for (unsigned i = 0; dyn[i].d_tag != DT_NULL && i < 4096; i++) {
        uint64_t v = dyn[i].d_un.d_ptr;
        switch (dyn[i].d_tag) {
        case DT_SYMTAB: t->symtab = dyn_pointer(t, v); break;
        case DT_STRTAB: t->strtab = dyn_pointer(t, v); break;
        case DT_STRSZ: t->strsz = dyn[i].d_un.d_val; break;
        case DT_GNU_HASH: t->gnu_hash = dyn_pointer(t, v); break;
        case DT_HASH: t->sysv_hash = dyn_pointer(t, v); break;
        default: break;
        }
    }
    return t->symtab && t->strtab && (t->gnu_hash || t->sysv_hash);
}

static bool symbol_matches(const struct dynamic_tables *t, const ElfW(Sym) *s, const char *name)
{
    if (s->st_name >= t->strsz || s->st_shndx == SHN_UNDEF || s->st_value == 0)
        return false;
    unsigned type = ELF64_ST_TYPE(s->st_info);
    if (type != STT_FUNC && type != STT_OBJECT)
        return false;
    size_t left = t->strsz - s->st_name;
    size_t len = strlen(name);
    return len < left && memcmp(t->strtab + s->st_name, name, len + 1) == 0;
}

static const ElfW(Sym) *find_gnu(const struct dynamic_tables *t, const char *name)
{
    uint32_t h = 5381;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        h = h * 33 + *p;
    const uint32_t *ht = t->gnu_hash;
    uint32_t nbuckets = ht[0], symoffset = ht[1], bloom_size = ht[2], bloom_shift = ht[3];
    if (nbuckets == 0)
        return NULL;
    const ElfW(Addr) *bloom = (const ElfW(Addr) *)(const void *)(ht + 4);
    const uint32_t *buckets = (const uint32_t *)(const void *)(bloom + bloom_size);
    const uint32_t *chain = buckets + nbuckets;
    const unsigned bits = sizeof(ElfW(Addr)) * 8;
    ElfW(Addr) word = bloom[(h / bits) % bloom_size];
    ElfW(Addr) mask = ((ElfW(Addr))1 << (h % bits)) | ((ElfW(Addr))1 << ((h >> bloom_shift) % bits));
    if ((word & mask) != mask)
        return NULL;
    uint32_t i = buckets[h % nbuckets];
    if (i < symoffset)
        return NULL;
    for (unsigned guard = 0; guard < (1u << 24); guard++, i++) {
        uint32_t h2 = chain[i - symoffset];
        if ((h | 1) == (h2 | 1) && symbol_matches(t, &t->symtab[i], name))
            return &t->symtab[i];
        if (h2 & 1)
            break;
    }
    return NULL;
}

static const ElfW(Sym) *find_sysv(const struct dynamic_tables *t, const char *name)
{
    uint32_t h = 0;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        h = (h << 4) + *p;
        uint32_t g = h & 0xf0000000u;
        if (g)
            h ^= g >> 24;
        h &= ~g;
    }
    uint32_t nbucket = t->sysv_hash[0], nchain = t->sysv_hash[1];
    if (nbucket == 0)
        return NULL;
    const uint32_t *bucket = t->sysv_hash + 2, *chain = bucket + nbucket;
    for (uint32_t i = bucket[h % nbucket], guard = 0; i != STN_UNDEF && i < nchain && guard < nchain;
         i = chain[i], guard++)
        if (symbol_matches(t, &t->symtab[i], name))
            return &t->symtab[i];
    return NULL;
}

bool cmt_elf_find_symbol(const struct dl_phdr_info *info, const char *name, struct cmt_elf_symbol *out)
{
    struct dynamic_tables t;
    if (!read_dynamic(info, &t))
        return false;
    const ElfW(Sym) *s = t.gnu_hash ? find_gnu(&t, name) : find_sysv(&t, name);
    if (!s)
        return false;
    out->address = info->dlpi_addr + s->st_value;
    out->size = s->st_size;
    return true;
}
