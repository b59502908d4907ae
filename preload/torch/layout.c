/* SPDX-License-Identifier: MIT */
#include "layout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One entry per PyTorch release whose header was read with
 * samples/gpu/torch_layout_probe.cpp on the release's own wheel; never a
 * guess. A release missing here gets no block layer (a note says so) unless
 * CUMEMTRACE_TORCH_LAYOUT gives the probe's line by hand. */
static const struct cmt_torch_layout known[] = {
    /* torch 2.11.0+cu130, the H200's wheel, read by the probe on
     * 2026-12-02 (samples/gpu/run_blocks_validation.sh): vtable slots 44 and
     * 49 of CUDAAllocator (the two destructor slots first), TraceEntry of
     * 136 bytes (action_, device_ int8, addr_, context_, stream_, size_,
     * mempool_, time_, compile_context_, user_metadata_), C++11 ABI. */
    {"2.11.", 44, 49, 0, 4, 8, 32, 40, 48, {0, 1, 2, 3, 4, 5, 6, 7, 8}},
};

const struct cmt_torch_layout *cmt_torch_layout_for(const char *version)
{
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        size_t n = strlen(known[i].version);
        if (strncmp(version, known[i].version, n) == 0)
            return &known[i];
    }
    return NULL;
}

const char *cmt_torch_layout_known(void)
{
    return "2.11";
}

static int parse_unsigned(const char *s, const char **end, unsigned *out)
{
    char *e;
    if (*s < '0' || *s > '9')
        return -1;
    unsigned long v = strtoul(s, &e, 10);
    if (v > 4096)
        return -1;
    *out = (unsigned)v;
    *end = e;
    return 0;
}

int cmt_torch_layout_parse(const char *text, struct cmt_torch_layout *out)
{
    static const char *const keys[] = {"attach", "name", "action", "device", "addr", "stream", "size", "mempool"};
    unsigned *fields[] = {&out->slot_attach, &out->slot_name,  &out->off_action, &out->off_device,
                          &out->off_addr,    &out->off_stream, &out->off_size,   &out->off_mempool};
    unsigned seen = 0;
    memset(out, 0, sizeof *out);
    snprintf(out->version, sizeof out->version, "override");
    const char *p = text;
    while (*p) {
        const char *eq = strchr(p, '=');
        if (!eq)
            return -1;
        size_t klen = (size_t)(eq - p);
        const char *v = eq + 1, *end = v;
        int k = -1;
        for (int i = 0; i < 8; i++)
            if (strlen(keys[i]) == klen && strncmp(p, keys[i], klen) == 0)
                k = i;
        if (k >= 0) {
            if (parse_unsigned(v, &end, fields[k]) != 0)
                return -1;
            seen |= 1u << k;
        } else if (klen == 7 && strncmp(p, "actions", 7) == 0) {
            for (int a = 0; a < CMT_TORCH_ACT_COUNT; a++) {
                unsigned value;
                if (parse_unsigned(v, &end, &value) != 0)
                    return -1;
                out->action[a] = (int)value;
                if (a + 1 < CMT_TORCH_ACT_COUNT) {
                    if (*end != ':')
                        return -1;
                    v = end + 1;
                }
            }
            seen |= 1u << 8;
        } else {
            return -1;
        }
        if (*end == ',')
            end++;
        else if (*end != '\0')
            return -1;
        p = end;
    }
    return seen == 0x1ffu ? 0 : -1;
}
