/* SPDX-License-Identifier: MIT */
/* gen_module_trace OUT.bin [--args ARG...] PATH[@OFFSET]...
 *
 * Writes a trace whose modules are named by the given paths, as a trace from
 * another machine (or a crafted one) may name anything: a FIFO, a device
 * node, a relative path, a directory. Module i is mapped at
 * 0x7f0000000000 + i * 0x10000000 (16 MiB each); one allocation of
 * (i + 1) MiB is made from a stack of two frames in it, at OFFSET + 1 (a
 * return address just past OFFSET; 0x10 when none is given), and kept until
 * exit, so every command that shows call sites symbolizes it. --args sets
 * the program's arguments as recorded (the PROCESS record), the first being
 * the executable. test_untrusted.py asserts what each command makes of it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_builder.h"

#define MiB (1024u * 1024u)

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: gen_module_trace OUT.bin [--args ARG... --] PATH[@OFFSET]...\n");
        return 2;
    }
    const uint64_t start = 1000000000000ull;
    struct cmt_trace_builder_options opt = {.pid = 5151,
                                            .start_monotonic_ns = start,
                                            .start_realtime_ns = 1767225600ull * 1000000000ull,
                                            .clean_exit = true};
    struct cmt_trace_builder *b = cmt_tb_create(argv[1], &opt);
    if (!b) {
        fprintf(stderr, "gen_module_trace: cannot create %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    int first = 2;
    const char *default_args[] = {"/opt/app/bin/app"};
    const char *const *args = default_args;
    int n_args = 1;
    if (!strcmp(argv[2], "--args")) {
        args = (const char *const *)&argv[3];
        for (first = 3; first < argc && strcmp(argv[first], "--"); first++)
            ;
        n_args = first - 3;
        first++;
    }
    cmt_tb_process(b, 5151, 1, args[0], n_args, args, "tracehost", -1, "/opt/app");
    cmt_tb_device(b, 0, "Synthetic GPU", 80ull << 30);
    cmt_tb_thread(b, 5151, "app");
    uint64_t ts = start + 1000;
    for (int i = first; i < argc; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s", argv[i]);
        uint64_t offset = 0x10;
        char *at = strrchr(path, '@');
        if (at) {
            *at = '\0';
            offset = strtoull(at + 1, NULL, 0);
        }
        uint64_t bias = 0x7f0000000000ull + (uint64_t)(i - first) * 0x10000000ull;
        cmt_tb_module(b, path, bias, bias, bias + 0x1000000, NULL, 0);
        uint64_t frames[2] = {bias + offset + 1, bias + 0x20};
        uint32_t stack = cmt_tb_stack(b, frames, 2);
        struct cmt_event e = {.type = CMT_REC_ALLOC, .api = CMT_API_CUDA_MALLOC, .kind = CMT_KIND_DEVICE,
                              .has_device = true, .ts = ts, .addr = 0x7e0000000000ull + (uint64_t)(i - first) * 0x10000000ull,
                              .size = (uint64_t)(i - first + 1) * MiB, .stack = stack};
        ts += 1000;
        if (cmt_tb_event(b, 5151, &e) != 0)
            return 1;
    }
    cmt_tb_end(b, ts, 0);
    return cmt_tb_close(b) == 0 ? 0 : 1;
}
