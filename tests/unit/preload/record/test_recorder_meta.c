/* SPDX-License-Identifier: MIT */
/* The recorder (preload/record/) as a library, without preloading: its
 * string interning and each metadata record it encodes, read back by the
 * analyzer's reader into its model. What the recorder writes, the reader
 * must decode to the same values: the encoder and the reader's switch agree
 * field by field. */
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clock.h"
#include "config.h"
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
    /* END */
    CHECK(m.has_end);
    CHECK_EQ_U64(m.end.reason, CMT_END_EXIT);
    cmt_model_free(&m);

    unlink(out);
    rmdir(dir);
    return 0;
}
