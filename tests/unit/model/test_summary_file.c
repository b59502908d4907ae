/* SPDX-License-Identifier: MIT */
/* The summary file (analyzer/model/summary_file.h): what is written reads
 * back field by field; every cut and every changed byte is refused with a
 * message that says where (the minor version aside: a newer minor reads),
 * never read as a summary with other figures, never a crash (the unit suite
 * runs under valgrind and ASan too). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "summary_file.h"
#include "test_util.h"

static void fill(struct cmt_trace_summary *s)
{
    memset(s, 0, sizeof *s);
    snprintf(s->made_by, sizeof s->made_by, "0.1.0");
    snprintf(s->settings, sizeof s->settings, "--include-cached --at 2s");
    s->order_rank = 5;
    snprintf(s->damage, sizeof s->damage, "trace is truncated: the file ends at offset 4096");
    struct cmt_process_summary *p = &s->process;
    snprintf(p->trace, sizeof p->trace, "/nodes/n1/trace.5.bin");
    p->analysed = true;
    p->rank = 5;
    p->pid = 4242;
    snprintf(p->hostname, sizeof p->hostname, "node0001");
    snprintf(p->program, sizeof p->program, "python3.12");
    p->n_devices = 2;
    p->devices[0].ordinal = 0;
    p->devices[0].peak = 1ull << 33;
    p->devices[0].peak_ns = 123456789;
    p->devices[0].live = 4096;
    p->devices[1].ordinal = 3;
    p->devices[1].peak = 2 << 20;
    p->peak = 1ull << 33;
    p->leak_bytes = 3 << 20;
    p->leak_count = 3;
    p->growth_candidates = 2;
    p->failed = 1;
    p->events = 987654;
    struct cmt_job_member *m = &s->member;
    snprintf(m->trace, sizeof m->trace, "%s", p->trace);
    m->analysed = true;
    m->has_job = true;
    m->source = 4;
    m->rank = 5;
    m->local_rank = 1;
    m->world_size = 1024;
    m->local_world_size = 8;
    snprintf(m->job_id, sizeof m->job_id, "slurm:9000.0");
    snprintf(m->host, sizeof m->host, "node0001");
    m->pid = 4242;
    m->cvd_set = true;
    snprintf(m->cvd, sizeof m->cvd, "1");
    m->start_wall_ns = 1767225600000000000ull;
    m->end_wall_ns = m->start_wall_ns + 5000000000ull;
    m->n_devices = 2;
    for (size_t d = 0; d < 2; d++) {
        struct cmt_job_device *dv = &m->devices[d];
        dv->ordinal = d ? 3 : 0;
        snprintf(dv->gpu, sizeof dv->gpu, "%zu", d ? (size_t)7 : (size_t)1);
        if (!d)
            snprintf(dv->uuid, sizeof dv->uuid, "GPU-01234567-89ab-cdef-0123-456789abcdef");
        dv->peak = (d + 1) << 30;
        dv->peak_wall_ns = m->start_wall_ns + d * 1000;
        dv->live_end = d * 77;
        for (int h = 0; h < CMT_HOLDER_COUNT; h++)
            dv->peak_by_holder[h] = (uint64_t)(h + 1) * 1000 + d;
        dv->has_own_peaks = d == 0;
        for (int h = 0; h < CMT_HOLDER_COUNT; h++)
            dv->own_peak[h] = d ? 0 : (uint64_t)(h + 1) * 2000;
        snprintf(dv->peak_site, sizeof dv->peak_site, "load_weights at train.py:%zu", 58 + d);
    }
    m->own = 0;
    m->leak_bytes = 3 << 20;
    m->leak_count = 3;
    m->failed = 1;
    m->failed_first_size = 64ull << 30;
    m->events = 987654;
    m->n_cells = 10;
    m->cell_origin_wall_ns = m->start_wall_ns;
    m->cell_width_ns = 500000000;
    for (size_t c = 0; c < 10; c++)
        m->cells[c] = c << 20;
    m->n_exports = 2;
    m->exports_dropped = 1;
    m->exports[0] = (struct cmt_job_ipc_item){.fingerprint = 0xabcdef, .bytes = 64 << 20};
    snprintf(m->exports[0].site, sizeof m->exports[0].site, "export_weights at w.c:146");
    m->exports[1] = (struct cmt_job_ipc_item){.fingerprint = 0x1234, .bytes = 8 << 20};
    m->n_imports = 1;
    m->imports[0] = (struct cmt_job_ipc_item){.fingerprint = 0x999, .bytes = 2 << 20, .closed = true};
}

static uint8_t *encode(const struct cmt_trace_summary *s, size_t *len)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    CHECK(f);
    CHECK(cmt_summary_write(f, s) == 0);
    CHECK(fclose(f) == 0);
    *len = n;
    return (uint8_t *)buf;
}

/* A refusal says where: the offset and field, or what the file is not. */
static void check_refused(const char *err)
{
    CHECK(err[0]);
    CHECK(!strncmp(err, "offset ", 7) || !strncmp(err, "not a cumemtrace summary", 24) ||
          !strncmp(err, "a summary of format ", 20));
    if (!strncmp(err, "offset ", 7))
        CHECK(strstr(err, ", field "));
}

int main(void)
{
    struct cmt_trace_summary *s = malloc(sizeof *s), *r = malloc(sizeof *r);
    CHECK(s && r);
    fill(s);
    size_t len;
    uint8_t *data = encode(s, &len);
    char err[800];

    /* round trip: every field back, and the same bytes again */
    CHECK(cmt_summary_decode(data, len, r, err, sizeof err) == 0);
    CHECK_STR(r->settings, "--include-cached --at 2s");
    CHECK_STR(r->damage, s->damage);
    CHECK_EQ_U64(r->order_rank, 5);
    CHECK_EQ_U64(r->process.devices[1].ordinal, 3);
    CHECK_EQ_U64(r->process.devices[0].peak_ns, 123456789);
    CHECK_EQ_U64(r->member.world_size, 1024);
    CHECK_STR(r->member.devices[0].uuid, "GPU-01234567-89ab-cdef-0123-456789abcdef");
    CHECK_STR(r->member.devices[1].peak_site, "load_weights at train.py:59");
    CHECK_EQ_U64(r->member.devices[0].own_peak[CMT_HOLDER_COUNT - 1], (uint64_t)CMT_HOLDER_COUNT * 2000);
    CHECK_EQ_U64(r->member.cells[9], 9 << 20);
    CHECK_EQ_U64(r->member.exports_dropped, 1);
    CHECK_STR(r->member.exports[0].site, "export_weights at w.c:146");
    CHECK(r->member.imports[0].closed);
    CHECK_EQ_U64(r->member.failed_first_size, 64ull << 30);
    size_t len2;
    uint8_t *again = encode(r, &len2);
    CHECK_EQ_U64(len2, len);
    CHECK(memcmp(again, data, len) == 0);
    free(again);

    /* every cut is refused */
    for (size_t cut = 0; cut < len; cut++) {
        err[0] = 0;
        CHECK(cmt_summary_decode(data, cut, r, err, sizeof err) != 0);
        check_refused(err);
    }
    /* every changed byte is refused, but the minor version's (offsets 10
     * and 11): a newer minor reads, with the same figures */
    uint8_t *copy = malloc(len);
    CHECK(copy);
    static const uint8_t flips[] = {0x01, 0x80, 0xff};
    for (size_t at = 0; at < len; at++) {
        for (size_t k = 0; k < sizeof flips; k++) {
            memcpy(copy, data, len);
            copy[at] ^= flips[k];
            err[0] = 0;
            int rc = cmt_summary_decode(copy, len, r, err, sizeof err);
            if (at == 10 || at == 11) {
                CHECK(rc == 0);
                CHECK_EQ_U64(r->member.devices[0].peak, 1u << 30);
            } else {
                if (rc == 0)
                    fprintf(stderr, "byte %zu ^ 0x%02x read as a summary\n", at, flips[k]);
                CHECK(rc != 0);
                check_refused(err);
            }
        }
    }
    /* one field's own check, named with its offset: the body's first
     * string made too long for its field */
    memcpy(copy, data, len);
    copy[24] = 0x88;
    copy[25] = 0x13; /* 5000 */
    CHECK(cmt_summary_decode(copy, len, r, err, sizeof err) != 0);
    CHECK_STR(err, "offset 24, field made_by: a string of 5000 bytes where at most 31 fit");
    free(copy);

    /* where a summary goes */
    char path[256];
    CHECK(cmt_summary_path_for("/a/b/trace.3.bin", NULL, path, sizeof path) == 0);
    CHECK_STR(path, "/a/b/trace.3.cmtsum");
    CHECK(cmt_summary_path_for("/a/b/trace.3.bin", "out", path, sizeof path) == 0);
    CHECK_STR(path, "out/trace.3.cmtsum");
    CHECK(cmt_summary_path_for("run.trace", NULL, path, sizeof path) == 0);
    CHECK_STR(path, "run.trace.cmtsum");
    CHECK(cmt_summary_path_for("/a/b/trace.3.bin", NULL, path, 10) != 0);
    CHECK(cmt_summary_is_magic("CMTSUMRY", 8) && !cmt_summary_is_magic("CMTSUMR", 7));

    free(data);
    free(s);
    free(r);
    puts("summary_file: ok");
    return 0;
}
