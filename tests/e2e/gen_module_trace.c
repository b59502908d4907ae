/* SPDX-License-Identifier: MIT */
/* gen_module_trace OUT.bin [OPTIONS] PATH[@OFFSET]...
 *
 * Writes a trace whose modules are named by the given paths, as a trace from
 * another machine (or a crafted one) may name anything: a FIFO, a device
 * node, a relative path, a directory. Module i is mapped at
 * 0x7f0000000000 + i * 0x10000000 (16 MiB each); one allocation of
 * (i + 1) MiB is made from a stack of two frames in it, at OFFSET + 1 (a
 * return address just past OFFSET; 0x10 when none is given), and kept until
 * exit, so every command that shows call sites symbolizes it.
 *
 * Options name the other strings a trace holds, for the escaping tests:
 *   --args ARG... --   the program's arguments (the first is the executable)
 *   --thread NAME      the thread's name
 *   --phase NAME       an NVTX phase around the allocations
 *   --note TEXT        a NOTE record (from the shim)
 *   --device NAME      device 0's name
 *   --python FUNC      a Python frame (FRAME record) named FUNC in a file
 *                      named FUNC.py, innermost in every stack
 * test_untrusted.py asserts what each command makes of them. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_builder.h"

#define MiB (1024u * 1024u)

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: gen_module_trace OUT.bin [OPTIONS] PATH[@OFFSET]...\n");
        return 2;
    }
    const char *default_args[] = {"/opt/app/bin/app"};
    const char *const *args = default_args;
    int n_args = 1, first = 2;
    const char *thread = "app", *phase = NULL, *note = NULL, *device = "Synthetic GPU", *python = NULL;
    while (first < argc && !strncmp(argv[first], "--", 2)) {
        const char *opt = argv[first];
        if (!strcmp(opt, "--args")) {
            args = (const char *const *)&argv[first + 1];
            int end = first + 1;
            while (end < argc && strcmp(argv[end], "--"))
                end++;
            n_args = end - first - 1;
            first = end + 1;
            continue;
        }
        if (first + 1 >= argc) {
            fprintf(stderr, "gen_module_trace: %s needs a value\n", opt);
            return 2;
        }
        const char *v = argv[first + 1];
        if (!strcmp(opt, "--thread"))
            thread = v;
        else if (!strcmp(opt, "--phase"))
            phase = v;
        else if (!strcmp(opt, "--note"))
            note = v;
        else if (!strcmp(opt, "--device"))
            device = v;
        else if (!strcmp(opt, "--python"))
            python = v;
        else {
            fprintf(stderr, "gen_module_trace: unknown option %s\n", opt);
            return 2;
        }
        first += 2;
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
    cmt_tb_process(b, 5151, 1, args[0], n_args, args, "tracehost", -1, "/opt/app");
    cmt_tb_device(b, 0, device, 80ull << 30);
    cmt_tb_thread(b, 5151, thread);
    uint64_t ts = start + 1000;
    if (note)
        cmt_tb_note(b, ts, CMT_NOTE_OTHER, note);
    uint64_t py = 0;
    if (python) {
        char file[512];
        snprintf(file, sizeof file, "%s.py", python);
        py = cmt_tb_frame_language(b, python, file, 7, 1);
    }
    if (phase) {
        struct cmt_event e = {.type = CMT_REC_MARK, .api = CMT_API_MARK_PUSH, .kind = CMT_KIND_DEVICE, .ts = ts};
        e.aux[CMT_MARK_AUX_NAME] = cmt_tb_string(b, phase);
        ts += 1000;
        if (cmt_tb_event(b, 5151, &e) != 0)
            return 1;
    }
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
        /* The Python frame, when there is one, innermost: the call site
         * the report names. */
        uint64_t frames[3] = {py, bias + offset + 1, bias + 0x20};
        uint32_t stack = py ? cmt_tb_stack(b, frames, 3) : cmt_tb_stack(b, frames + 1, 2);
        struct cmt_event e = {.type = CMT_REC_ALLOC, .api = CMT_API_CUDA_MALLOC, .kind = CMT_KIND_DEVICE,
                              .has_device = true, .ts = ts,
                              .addr = 0x7e0000000000ull + (uint64_t)(i - first) * 0x10000000ull,
                              .size = (uint64_t)(i - first + 1) * MiB, .stack = stack};
        ts += 1000;
        if (cmt_tb_event(b, 5151, &e) != 0)
            return 1;
    }
    if (phase) {
        struct cmt_event e = {.type = CMT_REC_MARK, .api = CMT_API_MARK_POP, .kind = CMT_KIND_DEVICE, .ts = ts};
        ts += 1000;
        if (cmt_tb_event(b, 5151, &e) != 0)
            return 1;
    }
    cmt_tb_end(b, ts, 0);
    return cmt_tb_close(b) == 0 ? 0 : 1;
}
