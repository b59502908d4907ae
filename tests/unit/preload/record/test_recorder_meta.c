/* SPDX-License-Identifier: MIT */
/* The recorder (preload/record/) as a library, without preloading: its
 * string interning and each metadata record it writes, read back by the
 * analyzer's reader into its model. What the writer (preload/trace/
 * meta_records.c, one function per record type) encodes, the reader must
 * decode to the same values: the encoders and the reader's switch agree
 * field by field. */
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clock.h"
#include "config.h"
#include "meta_records.h"
#include "recorder.h"
#include "shim.h"
#include "test_util.h"
#include "trace_model.h"
#include "trace_reader.h"

/* The shim's top (shim/shim.c): nothing to load in a test. */
void cmt_shim_ensure_loaded(void)
{
}

static uint32_t intern(const char *s)
{
    pthread_mutex_lock(&cmt_recorder.meta.lock);
    uint32_t id = cmt_recorder_intern_string_locked(s, strlen(s));
    pthread_mutex_unlock(&cmt_recorder.meta.lock);
    return id;
}

#define MANY 1000

int main(void)
{
    char dir[] = "/tmp/cmt-recorder-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char out[128];
    snprintf(out, sizeof out, "%s/t.bin", dir);
    setenv("CUMEMTRACE_OUTPUT", out, 1);
    setenv("CUMEMTRACE_QUIET", "1", 1);
    unsetenv("CUMEMTRACE_MANIFEST");
    cmt_config_load();
    cmt_clock_init((enum cmt_clock_mode)cmt_config.clock);
    prctl(PR_SET_NAME, "meta-test");
    CHECK(cmt_recorder_start());
    CHECK_STR(cmt_recorder.tf.path, out);

    /* Interning: one id per text, the same text the same id, past the
     * table's first growth (256 slots, half full) and after it. */
    uint32_t alpha = intern("alpha"), beta = intern("beta");
    CHECK(alpha != 0 && beta == alpha + 1);
    CHECK_EQ_U64(intern("alpha"), alpha);
    static uint32_t ids[MANY];
    char text[32];
    for (unsigned i = 0; i < MANY; i++) {
        snprintf(text, sizeof text, "string %u", i);
        ids[i] = intern(text);
        CHECK_EQ_U64(ids[i], beta + 1 + i);
    }
    for (unsigned i = 0; i < MANY; i++) {
        snprintf(text, sizeof text, "string %u", i);
        CHECK_EQ_U64(intern(text), ids[i]);
    }
    /* A text and its prefix are two strings. */
    uint32_t alph = intern("alph");
    CHECK(alph != alpha);

    CHECK(cmt_recorder_thread_setup(&cmt_thread_state));
    cmt_recorder_note(CMT_NOTE_PYTHON, "a note, once");
    static const uint8_t uuid[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    cmt_recorder_write_device(1, "Simulated GPU", 80ull << 30, uuid);
    cmt_recorder_write_device(2, NULL, 0, NULL);
    cmt_recorder_write_device(-1, "never", 1, NULL); /* no ordinal: not written */
    cmt_recorder_write_allocator(CMT_FRAMEWORK_PYTORCH, "2.11.0", CMT_BLOCKS_ON, "native", "expandable_segments:True",
                                 "");
    /* The records a stack capture, a module load and a Python frame write,
     * through the writer's functions with chosen values: a module, a FRAME,
     * and a STACK of a return address, the frame and a lower address (a
     * negative delta). */
    pthread_mutex_lock(&cmt_recorder.meta.lock);
    static const uint8_t build_id[20] = {0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    uint32_t module_id = ++cmt_recorder.next_module_id;
    uint32_t lib = cmt_recorder_intern_string_locked("/lib/libfake.so", 15);
    struct cmt_meta_module mod = {
        .id = module_id, .path_id = lib, .bias = 0x7f0000000000, .lo = 0x7f0000001000, .hi = 0x7f0000009000,
        .build_id = build_id, .build_id_len = sizeof build_id, .ts = 12345};
    CHECK(cmt_meta_write_module_locked(&cmt_recorder.tf, &cmt_recorder.meta, &mod));
    uint32_t file = cmt_recorder_intern_string_locked("train.py", 8);
    uint32_t function = cmt_recorder_intern_string_locked("step", 4);
    CHECK(cmt_meta_write_frame_locked(&cmt_recorder.tf, &cmt_recorder.meta, 1, function, file, 42, 1));
    const uint64_t frames[3] = {0x7f0000001234, CMT_FRAME_SYNTHETIC_BIT | 1, 0x401000};
    uint32_t stack_id = ++cmt_recorder.next_stack_id;
    CHECK(cmt_meta_write_stack_locked(&cmt_recorder.tf, &cmt_recorder.meta, stack_id, module_id, frames, 3));
    pthread_mutex_unlock(&cmt_recorder.meta.lock);
    cmt_recorder_shutdown();
    CHECK_EQ_U64(cmt_recorder.state, CMT_RECORDER_OFF);

    struct cmt_reader *r;
    char err[256];
    CHECK(cmt_reader_open(out, &r, err, sizeof err) == 0);
    struct cmt_trace_model m;
    cmt_model_init(&m);
    struct cmt_reader_callbacks cb;
    memset(&cb, 0, sizeof cb);
    cmt_model_callbacks(&cb);
    CHECK(cmt_reader_run(r, &cb, &m) == 0);
    CHECK_EQ_U64(cmt_reader_warning_count(r), 0);
    cmt_reader_close(r);
    CHECK_EQ_U64(m.rejected_records, 0);

    CHECK_STR(cmt_model_string(&m, alpha), "alpha");
    CHECK_STR(cmt_model_string(&m, beta), "beta");
    CHECK_STR(cmt_model_string(&m, alph), "alph");
    for (unsigned i = 0; i < MANY; i++) {
        snprintf(text, sizeof text, "string %u", i);
        CHECK_STR(cmt_model_string(&m, ids[i]), text);
    }

    /* CONFIG, PROCESS, JOB: written at the start. */
    CHECK(m.has_config);
    CHECK_EQ_U64(m.config.stack_depth, cmt_config.stack_depth);
    CHECK_EQ_U64(m.config.sample_ms, cmt_config.sample_ms);
    CHECK_EQ_U64(m.config.max_size, cmt_config.max_size);
    CHECK(m.has_process);
    CHECK_EQ_U64(m.pid, (uint64_t)getpid());
    CHECK_EQ_U64(m.ppid, (uint64_t)getppid());
    CHECK(m.argc >= 1);
    CHECK(strstr(cmt_model_string(&m, m.arg_ids[0]), "test_recorder_meta") != NULL);
    CHECK(m.has_job);
    /* MODULE: at least this program, its first module. */
    CHECK(m.n_modules >= 2);
    /* THREAD: this thread, by the name it gave itself. */
    bool thread_seen = false;
    for (size_t i = 0; i < m.n_threads; i++)
        thread_seen |= m.threads[i].tid == (uint32_t)syscall(SYS_gettid) &&
                       strcmp(cmt_model_string(&m, m.threads[i].name_id), "meta-test") == 0;
    CHECK(thread_seen);
    /* NOTE */
    CHECK_EQ_U64(m.n_notes, 1);
    CHECK_EQ_U64(m.notes[0].source, CMT_NOTE_PYTHON);
    CHECK_STR(cmt_model_string(&m, m.notes[0].text_id), "a note, once");
    /* DEVICE: with a UUID and without; none for a negative ordinal. */
    CHECK(m.has_device[1] && m.has_device[2] && !m.has_device[0]);
    CHECK_STR(cmt_model_string(&m, m.device[1].name_id), "Simulated GPU");
    CHECK_EQ_U64(m.device[1].total, 80ull << 30);
    CHECK(m.device[1].has_uuid && memcmp(m.device[1].uuid, uuid, 16) == 0);
    CHECK_EQ_U64(m.device[2].name_id, 0);
    CHECK_EQ_U64(m.device[2].total, 0);
    CHECK(!m.device[2].has_uuid);
    /* ALLOCATOR: an empty setting is written as unset. */
    CHECK(m.has_allocator);
    CHECK_EQ_U64(m.allocator.framework, CMT_FRAMEWORK_PYTORCH);
    CHECK_STR(cmt_model_string(&m, m.allocator.version_id), "2.11.0");
    CHECK_EQ_U64(m.allocator.state, CMT_BLOCKS_ON);
    CHECK_STR(cmt_model_string(&m, m.allocator.backend_id), "native");
    CHECK(m.allocator.settings_known);
    CHECK_STR(cmt_model_string(&m, m.allocator.alloc_conf_id), "expandable_segments:True");
    CHECK_EQ_U64(m.allocator.cuda_alloc_conf_id, 0);
    /* MODULE, FRAME, STACK as written above. */
    CHECK(m.n_modules >= module_id);
    const struct cmt_module_def *md = &m.modules[module_id];
    CHECK_STR(cmt_model_string(&m, md->path_id), "/lib/libfake.so");
    CHECK_EQ_U64(md->bias, 0x7f0000000000);
    CHECK_EQ_U64(md->lo, 0x7f0000001000);
    CHECK_EQ_U64(md->hi, 0x7f0000009000);
    CHECK(md->build_id_len == sizeof build_id && memcmp(md->build_id, build_id, sizeof build_id) == 0);
    const struct cmt_synthetic_frame *sf = cmt_model_synthetic_frame(&m, CMT_FRAME_SYNTHETIC_BIT | 1);
    CHECK(sf != NULL);
    CHECK_STR(cmt_model_string(&m, sf->function_id), "step");
    CHECK_STR(cmt_model_string(&m, sf->file_id), "train.py");
    CHECK_EQ_U64(sf->line, 42);
    CHECK_EQ_U64(sf->language, 1);
    const struct cmt_stack_def *sd = cmt_model_stack(&m, stack_id);
    CHECK(sd != NULL);
    CHECK_EQ_U64(sd->n, 3);
    CHECK_EQ_U64(sd->modules_known, module_id);
    for (unsigned i = 0; i < 3; i++)
        CHECK_EQ_U64(sd->frames[i], frames[i]);
    /* END */
    CHECK(m.has_end);
    CHECK_EQ_U64(m.end.reason, CMT_END_EXIT);
    cmt_model_free(&m);

    unlink(out);
    rmdir(dir);
    return 0;
}
